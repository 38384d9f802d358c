"""How a trace's load varies in space and in time, in a few numbers.

Birdshot §3.1 argues that fluid workloads are hard to partition because their load is
concentrated (a few partitions carry most of the cost, many carry none) and because it moves
(the partitions that are busy early are not the ones busy late). :func:`trace_stats` measures
both on any :class:`~grapeshot.model.workload.Workload`:

- ``top_share``: the share of the total cost (all steps) carried by the busiest ``top``
  fraction of partitions (10% by default). A uniform load gives ``top``; a concentrated one
  approaches 1. ``top_share_per_step`` is the same within each step, averaged over the steps:
  a load that is concentrated at every moment but visits every partition in turn (a front
  sweeping the domain) has a high share per step and an even share over the run.
- ``idle_fraction``: the mean over steps of the fraction of partitions with no work in the
  step (``work == 0``; ``cost == 0`` when the trace has no work counts), and
  ``idle_all_steps``: the fraction idle in every step.
- ``overlap``: ``|A ∩ B| / |A|`` where ``A`` and ``B`` are the busiest ``top`` fraction of
  partitions by cost summed over the first and over the last quarter of the steps. 1 means
  the load stayed where it was; near 0 means it moved. Partitions tied at the cut share the
  places left (:func:`busiest_weights`), so the result is the overlap expected if ties were
  broken at random and does not depend on how partitions are numbered.
- ``imbalance``: the mean over steps of the LIF of the partitions' cost
  (:func:`grapeshot.model.placement.load_imbalance`, every partition on a core of its own).

Pure numpy and deterministic.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from grapeshot.model.errors import check_number
from grapeshot.model.placement import load_imbalance
from grapeshot.model.workload import Workload

#: Fraction of partitions counted as "the busiest" unless ``top=`` says otherwise.
DEFAULT_TOP = 0.1


@dataclass(frozen=True)
class TraceStats:
    """Spatial and temporal variation of a trace's load (see the module notes).

    Attributes
    ----------
    n_parts, n_steps
        Size of the trace.
    top
        Fraction of partitions counted as the busiest (0.1).
    n_top
        Number of partitions in the busiest set, ``max(1, ceil(top * n_parts))``.
    top_share
        Share of the total cost carried by the ``n_top`` busiest partitions, in [0, 1]
        (NaN when the total cost is 0).
    top_share_per_step
        Mean over steps (with cost) of the share of the step's cost carried by that step's
        ``n_top`` busiest partitions (NaN when no step has cost).
    idle_fraction
        Mean over steps of the fraction of partitions with no work, in [0, 1].
    idle_all_steps
        Fraction of partitions with no work in any step, in [0, 1].
    overlap
        ``|A ∩ B| / |A|`` of the busiest sets over the first and last quarter of the steps,
        in [0, 1], ties at the cut shared out (:func:`busiest_weights`); NaN when no
        partition has cost in the first quarter.
    quarter
        Steps per quarter, ``max(1, n_steps // 4)`` (the quarters overlap below 4 steps).
    imbalance
        Mean over steps of ``max/mean - 1`` of per-partition cost (steps with no cost skipped;
        0 when every step has none).
    counts_work
        Whether idleness was judged by work counts (``True``) or by cost.
    """

    n_parts: int
    n_steps: int
    top: float
    n_top: int
    top_share: float
    top_share_per_step: float
    idle_fraction: float
    idle_all_steps: float
    overlap: float
    quarter: int
    imbalance: float
    counts_work: bool

    def as_dict(self) -> dict[str, float | int | bool | None]:
        """Plain values for JSON (NaN becomes ``None``)."""
        out: dict[str, float | int | bool | None] = {}
        for key, value in asdict(self).items():
            out[key] = None if isinstance(value, float) and math.isnan(value) else value
        return out


def busiest_weights(load: np.ndarray, n: int) -> np.ndarray:
    """Membership of each partition in "the ``n`` busiest", ties at the cut shared out evenly.

    Partitions whose load is above the ``n``-th largest are in (weight 1); the ``m``
    partitions tied at the ``n``-th largest share the ``r`` places left (weight ``r/m``
    each: the chance of being picked if ties were broken at random); idle partitions
    (load 0) are never in, so fewer than ``n`` places are filled when fewer are busy.
    Breaking ties by id instead would make the overlap of two sets depend on partition
    numbering wherever the load saturates (a full partition of wet cells ties with every
    other full one).

    Parameters
    ----------
    load
        float64, ``(P,)``: load per partition.
    n
        Size of the busiest set (>= 1).

    Returns
    -------
    float64, ``(P,)``: weights in [0, 1] summing to ``min(n, number of busy partitions)``.
    """
    weights = np.zeros(len(load))
    busy = load > 0.0
    if busy.sum() <= n:
        weights[busy] = 1.0
        return weights
    cut = np.sort(load)[::-1][n - 1]
    above = load > cut
    tied = load == cut
    weights[above] = 1.0
    weights[tied] = (n - above.sum()) / tied.sum()
    return weights


def trace_stats(workload: Workload, *, top: float = DEFAULT_TOP) -> TraceStats:
    """The spatial and temporal load statistics of ``workload``.

    Parameters
    ----------
    workload
        Any trace; its ``work`` counts (when present) decide which partitions are idle.
    top
        Fraction of partitions in the busiest set, in (0, 1].

    Returns
    -------
    TraceStats
    """
    top = check_number(
        top, "top", low=0.0, high=1.0, low_open=True, expected="a fraction in (0, 1]"
    )
    cost = workload.cost
    steps, n_parts = cost.shape
    n_top = max(1, math.ceil(top * n_parts))

    per_part = cost.sum(axis=0)
    total = float(per_part.sum())
    top_share = float(np.sort(per_part)[::-1][:n_top].sum() / total) if total > 0 else math.nan
    per_step = cost.sum(axis=1)
    busy_steps = per_step > 0.0
    if busy_steps.any():
        tops = -np.sort(-cost[busy_steps], axis=1)[:, :n_top].sum(axis=1)
        top_share_per_step = float((tops / per_step[busy_steps]).mean())
    else:
        top_share_per_step = math.nan

    counts_work = workload.work is not None
    idle = (workload.work == 0) if counts_work else (cost == 0.0)
    idle_fraction = float(idle.mean())
    idle_all_steps = float(idle.all(axis=0).mean())

    quarter = max(1, steps // 4)
    first = busiest_weights(cost[:quarter].sum(axis=0), n_top)
    last = busiest_weights(cost[steps - quarter :].sum(axis=0), n_top)
    overlap = float((first * last).sum() / first.sum()) if first.sum() > 0 else math.nan

    active = cost.sum(axis=1) > 0.0
    if active.any():
        imbalance = float(load_imbalance(cost[active]).mean())
    else:
        imbalance = 0.0

    return TraceStats(
        n_parts=n_parts,
        n_steps=steps,
        top=top,
        n_top=n_top,
        top_share=top_share,
        top_share_per_step=top_share_per_step,
        idle_fraction=idle_fraction,
        idle_all_steps=idle_all_steps,
        overlap=overlap,
        quarter=quarter,
        imbalance=imbalance,
        counts_work=counts_work,
    )
