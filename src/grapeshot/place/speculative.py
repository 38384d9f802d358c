"""Speculative load balancing ([SHQL18], spec §A6): place on a coarse shadow's forecast.

A coarse copy of the application runs ahead of the real one; every ``interval`` steps its
forecast of each partition's load over the next ``window`` steps decides one placement for
that window (``ComputeSingleGreedyAffinePartitionPlacement`` of fluid-sim-lb):

1. per-partition mean forecast over the window; partitions at most 4% of the largest mean
   are *empty*;
2. the others in decreasing mean (ties: lower id) each go to their *home* (the node of the
   geometric placement) if ``Σ_t max(home_t + p_t, avg_t) <= Σ_t avg_t + slack``, else to
   the node minimising ``Σ_t max(max_t, node_t + p_t) + ½ Σ_t (node_t + p_t)`` (all per
   core: the first term penalises raising the step's maximum, the second stacking
   partitions with the same trend);
3. empty partitions go home, then a node holding more than its quota plus 4 per core gives
   the excess (highest ids first) to the nodes with the fewest partitions per core.

The forecast comes from a *predictor* ``(step, window) -> (window, P)`` that the caller
binds (:meth:`Speculative.with_shadow`); :mod:`grapeshot.sim.shadow` builds one by running
the real app at a coarse resolution. The strategy never sees the fine trace's future.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from numba import njit
from scipy import sparse

from grapeshot.model.errors import InputError, check_int
from grapeshot.model.machine import Machine
from grapeshot.place.quota import quotas
from grapeshot.place.rebalance import check_call

#: ``predictor(step, window)`` → float64 ``(window, P)``: forecast load of each partition in
#: steps ``step .. step + window - 1``.
Predictor = Callable[[int, int], np.ndarray]


def affinity_blocks(parts_shape: tuple[int, ...], blocks: tuple[int, ...]) -> np.ndarray:
    """The geometric homes of fluid-sim-lb: a grid of ``blocks`` contiguous blocks, C order.

    Partition ``(i, j, k)`` of ``parts_shape`` goes to block
    ``(i * bx // px, j * by // py, k * bz // pz)``, flattened in C order; with ``(2, 2, 2)``
    on 8 nodes each node owns an octant of the domain (split along every axis, height
    included). Returns int32 ``(prod(parts_shape),)``.
    """
    if len(parts_shape) != len(blocks) or any(
        b < 1 or b > p for b, p in zip(blocks, parts_shape, strict=True)
    ):
        raise InputError("affinity blocks", f"got {blocks} for {parts_shape}", "1 <= b <= parts")
    idx = np.indices(parts_shape).reshape(len(parts_shape), -1)
    coords = [idx[a] * blocks[a] // parts_shape[a] for a in range(len(blocks))]
    return np.ravel_multi_index(coords, blocks).astype(np.int32)


@njit(cache=True)
def _affine_greedy(pred, home, cores, empty_fraction, slack_fraction, extra_per_core, quota):
    w, n_parts = pred.shape
    n = cores.shape[0]
    mean = np.zeros(n_parts)
    for t in range(w):
        for p in range(n_parts):
            mean[p] += pred[t, p] / w
    biggest = mean.max() if n_parts else 0.0
    avg = np.zeros(w)
    for t in range(w):  # the balanced load per core of each step, Σ load / Σ cores
        avg[t] = pred[t].sum() / cores.sum()
    slack = slack_fraction * avg.sum()
    level = np.zeros((n, w))  # per node, per step: load per core
    peak = np.zeros(w)
    node_of = np.full(n_parts, -1, dtype=np.int64)
    order = np.argsort(-mean, kind="mergesort")
    for i in range(n_parts):
        p = order[i]
        if mean[p] <= empty_fraction * biggest:
            continue
        h = home[p]
        cost_home = 0.0
        for t in range(w):
            cost_home += max(level[h, t] + pred[t, p] / cores[h], avg[t])
        if cost_home <= avg.sum() + slack:
            best = h
        else:
            best = -1
            best_cost = np.inf
            for j in range(n):
                c = 0.0
                for t in range(w):
                    x = level[j, t] + pred[t, p] / cores[j]
                    c += max(peak[t], x) + 0.5 * x
                if c < best_cost:
                    best_cost = c
                    best = j
        node_of[p] = best
        for t in range(w):
            level[best, t] += pred[t, p] / cores[best]
            if level[best, t] > peak[t]:
                peak[t] = level[best, t]
    count = np.zeros(n, dtype=np.int64)
    for p in range(n_parts):
        if node_of[p] < 0:
            node_of[p] = home[p]
        count[node_of[p]] += 1
    cap = quota + extra_per_core * cores.astype(np.int64)
    for p in range(n_parts - 1, -1, -1):
        j = node_of[p]
        if count[j] > cap[j] and mean[p] <= empty_fraction * biggest:
            dest = 0
            for k in range(1, n):
                if count[k] / cores[k] < count[dest] / cores[dest]:
                    dest = k
            if count[dest] + 1 <= cap[dest]:
                node_of[p] = dest
                count[j] -= 1
                count[dest] += 1
    return node_of


def affine_greedy(
    pred: np.ndarray,
    home: np.ndarray,
    cores: np.ndarray,
    *,
    empty_fraction: float = 0.04,
    slack_fraction: float = 0.01,
    extra_per_core: int = 4,
) -> np.ndarray:
    """The greedy placement with a home preference for a forecast ``(window, P)``.

    Returns int64 ``(P,)``. ``slack_fraction`` replaces fluid-sim-lb's ``10 × horizon``
    fluid cells (a count at its reference resolution) by a fraction of the window's summed
    average load, which is unit-free.
    """
    pred = np.ascontiguousarray(np.asarray(pred, dtype=np.float64))
    cores_f = np.asarray(cores, dtype=np.float64)
    home = np.ascontiguousarray(np.asarray(home, dtype=np.int64))
    if pred.ndim != 2 or pred.shape[1] != home.size or pred.shape[0] < 1:
        raise InputError("speculative forecast", f"has shape {pred.shape}", f"(w, {home.size})")
    if not np.all(np.isfinite(pred)) or (pred.size and pred.min() < 0):
        raise InputError("speculative forecast", "has negative or non-finite loads", "loads >= 0")
    quota = quotas(home.size, np.asarray(cores, dtype=np.int64)).astype(np.int64)
    return _affine_greedy(
        pred, home, cores_f, float(empty_fraction), float(slack_fraction), int(extra_per_core),
        quota,
    )  # fmt: skip


@dataclass(frozen=True)
class Speculative:
    """Speculative balancing: every ``interval`` steps, place on the shadow's forecast.

    Parameters
    ----------
    interval
        Steps between placements (30 in [SHQL18] and Birdshot §7.3).
    window
        Steps of forecast each placement uses (fluid-sim-lb's ``horizon``, 30).
    initial
        Static strategy used when no forecast is bound yet (and the homes' strategy).
    predictor, home, first
        Bound by :meth:`with_shadow`: the forecast, the home node of every partition, and
        the placement of steps ``0 .. interval - 1`` (made from the forecast too).
    """

    interval: int = 30
    window: int = 30
    initial: str = "geometric"
    name: str = "speculative"
    predictor: Predictor | None = field(default=None, metadata={"internal": True})
    home: np.ndarray | None = field(default=None, metadata={"internal": True})
    first: np.ndarray | None = field(default=None, metadata={"internal": True})
    #: A coarse shadow is needed: the simulator builds one (sim/shadow.py) before the run.
    needs_shadow: ClassVar[bool] = True

    def __post_init__(self) -> None:
        check_int(self.interval, "speculative interval")
        check_int(self.window, "speculative window")

    def with_shadow(self, predictor: Predictor, home: np.ndarray, cores: np.ndarray):
        """This strategy bound to a forecast; its first placement is made from it."""
        home = np.asarray(home, dtype=np.int64)
        first = affine_greedy(predictor(0, self.window), home, cores)
        return dataclasses.replace(self, predictor=predictor, home=home, first=first)

    def rebalance(
        self,
        *,
        step: int,
        loads: np.ndarray,
        node_of: np.ndarray,
        cores: np.ndarray,
        state_bytes: np.ndarray,
        comm: sparse.csr_array | None = None,
        machine: Machine | None = None,
    ) -> np.ndarray | None:
        """The affine greedy placement of the forecast of steps ``step .. step + window``."""
        loads, nodes, cores = check_call(loads, node_of, cores, "speculative")
        if self.predictor is None or self.home is None:
            raise InputError(
                "strategy 'speculative'",
                "has no coarse shadow run bound",
                "a trace whose app can run coarse (FLIP), bound by the simulator",
            )
        new = affine_greedy(self.predictor(step, self.window), self.home, cores)
        return None if np.array_equal(new, nodes) else new
