"""Dynamic strategies: called between steps, they may move partitions.

A dynamic strategy starts from a static placement (its ``initial`` strategy) and, every
``interval`` steps, is shown what was measured — the task seconds of every partition in each
step since its last call — and returns a new ``node_of`` or ``None`` (STYLE 4: the policy
proposes, the engine enacts). The simulator makes every call a synchronisation point: all
nodes finish the steps so far, report their loads (an allreduce), and each moved partition
then carries its state (``cells * state_bytes_per_cell`` bytes) over the network from its old
node to its new one before its next task may start there. Partitions that stay put start as
soon as their node is released.

:class:`ReactiveGreedy` is the classic reactive balancer Birdshot compares against (§5.3,
§7.3): measure, then move work from the most to the least loaded node.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Protocol, runtime_checkable

import numpy as np
from numba import njit
from scipy import sparse

from grapeshot.model.errors import InputError
from grapeshot.model.machine import Machine


@runtime_checkable
class DynamicStrategy(Protocol):
    """What the simulator needs from a dynamic strategy.

    Attributes
    ----------
    name
        Its name (what ``--strategy`` selects).
    initial
        The static strategy of the first placement (a key of
        :data:`grapeshot.place.STATIC_STRATEGIES`).
    interval
        Steps between calls, ``>= 1``.
    """

    name: str
    initial: str
    interval: int

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
        """Propose a placement for the steps from ``step`` on.

        Parameters
        ----------
        step
            The first step the new placement would run.
        loads
            float64, ``(steps since the last call, P)``: measured task seconds per partition.
        node_of
            int64, ``(P,)``: the current placement (a copy: the strategy may modify it).
        cores
            int64, ``(nodes,)``: cores per node.
        state_bytes
            int64, ``(P,)``: bytes moving each partition would cost.
        comm
            float64, ``(P, P)`` symmetric sparse: bytes the two partitions exchange per step
            (their halo graph), or ``None`` where the caller has none; comm-aware and
            topology-aware strategies need it.
        machine
            The machine the nodes belong to (cores, node tree, network), or ``None``.

        Returns
        -------
        numpy.ndarray or None
            The new node of every partition, or ``None`` to keep the placement.
        """
        ...


@njit(cache=True)
def _greedy_moves(load, node_of, cores, threshold, max_moves):
    n = cores.shape[0]
    node_load = np.zeros(n)
    for p in range(load.shape[0]):
        node_load[node_of[p]] += load[p]
    moves = 0
    while moves < max_moves:
        per_core = node_load / cores
        hi = int(np.argmax(per_core))
        lo = int(np.argmin(per_core))
        mean = per_core.mean()
        if mean <= 0.0 or per_core[hi] <= (1.0 + threshold) * mean:
            break
        # Move the partition of the busiest node that brings the two closest together.
        target = (node_load[hi] * cores[lo] - node_load[lo] * cores[hi]) / (cores[hi] + cores[lo])
        best = -1
        best_gap = np.inf
        for p in range(load.shape[0]):
            if node_of[p] != hi or load[p] <= 0.0:
                continue
            after = max(
                (node_load[hi] - load[p]) / cores[hi], (node_load[lo] + load[p]) / cores[lo]
            )
            if after < per_core[hi] - 1e-15:
                gap = abs(load[p] - target)
                if gap < best_gap:
                    best_gap = gap
                    best = p
        if best < 0:
            break
        node_of[best] = lo
        node_load[hi] -= load[best]
        node_load[lo] += load[best]
        moves += 1
    return moves


@dataclass(frozen=True)
class ReactiveGreedy:
    """Reactive greedy balancing: move the right partition from the busiest to the idlest node.

    At each call the per-partition load is the mean task time over the steps since the last
    call. While the most loaded node (per core) exceeds the mean by more than ``threshold``,
    one partition moves from it to the least loaded node: the one whose load is closest to
    what would equalise the two, among those whose move lowers the larger of the two. At most
    ``max_moves_fraction`` of the partitions move per call (at least one).

    Parameters
    ----------
    interval
        Steps between calls (Birdshot's reactive baseline migrates every 30 steps).
    threshold
        Tolerated load above the mean, as a fraction (Birdshot's dynamic variant uses 10%).
    max_moves_fraction
        Cap on the partitions moved per call, as a fraction of all partitions.
    initial
        Static strategy of the first placement.
    """

    interval: int = 30
    threshold: float = 0.1
    max_moves_fraction: float = 0.05
    initial: str = "geometric"
    name: str = "reactive"

    def __post_init__(self) -> None:
        if (
            isinstance(self.interval, bool)
            or not isinstance(self.interval, int)
            or (self.interval < 1)
        ):
            raise InputError("reactive interval", f"got {self.interval!r}", "an integer >= 1")
        if not self.threshold >= 0:
            raise InputError("reactive threshold", f"got {self.threshold!r}", "a number >= 0")
        if not 0 < self.max_moves_fraction <= 1:
            raise InputError(
                "reactive max_moves_fraction", f"got {self.max_moves_fraction!r}", "in (0, 1]"
            )

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
        """Greedy moves on the mean measured load (see the class docstring)."""
        load = np.ascontiguousarray(np.asarray(loads, dtype=np.float64).mean(axis=0))
        new = np.ascontiguousarray(node_of, dtype=np.int64).copy()
        cap = max(1, int(self.max_moves_fraction * len(new)))
        moves = _greedy_moves(
            load, new, np.asarray(cores, dtype=np.float64), float(self.threshold), cap
        )
        return new if moves else None


#: Dynamic strategies by name: a factory taking the keyword overrides.
DYNAMIC_STRATEGIES: Mapping[str, Callable[..., DynamicStrategy]] = MappingProxyType(
    {"reactive": ReactiveGreedy}
)


def get_dynamic_strategy(name: str) -> DynamicStrategy | None:
    """The dynamic strategy called ``name`` (with its defaults), or ``None`` if there is none."""
    factory = DYNAMIC_STRATEGIES.get(name)
    return None if factory is None else factory()
