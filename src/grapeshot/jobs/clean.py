"""The COARE paper's workload cleaning (§5.1) as named, counted steps.

Every step is a function of the trace that returns which jobs it keeps (or changes), so a
report can say "drop-long: 12 jobs" for each. The steps, in order:

``fill-procs``
    Allocated processors missing (-1) → the requested processors.
``drop-unrunnable``
    Jobs that cannot be simulated: run time missing, or no processor count.
``drop-too-wide``
    Jobs wider than the machine (only when ``cpus`` is given).
``fill-request``
    Requested time missing or 0 → the run time (Alea's rule), so every job has a walltime.
``drop-long``
    Jobs that ran more than 7 days (the paper: "we disregarded all jobs that ran for more than
    7 days across all HPC systems").
``drop-flurries``
    Bursts of one user: every job of a window of ``flurry_window`` seconds in which one user
    submitted at least ``flurry_jobs`` jobs (the paper removed one such flurry from HPC2N Seth;
    the Parallel Workloads Archive's cleaned logs do the same).
``warm-up``
    The first 1 % of jobs stay in the simulation but are excluded from the metrics.

One more step runs before them when asked (``jobs simulate --partition``):
``drop-other-partitions``, :func:`grapeshot.jobs.partitions.select_partitions`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grapeshot.jobs.trace import JobTrace

SEVEN_DAYS = 7 * 86400.0
DEFAULT_FLURRY_JOBS = 1000
DEFAULT_FLURRY_WINDOW = 86400.0
DEFAULT_WARMUP = 0.01


@dataclass(frozen=True)
class CleanStep:
    """One cleaning step: its name, what it does, and how many jobs it touched."""

    name: str
    description: str
    affected: int
    remaining: int


@dataclass(frozen=True)
class Cleaned:
    """A cleaned trace.

    Attributes
    ----------
    trace
        The jobs kept, sorted by submit time.
    steps
        Every step in order, with counts.
    in_metrics
        Boolean mask over ``trace``: False for the warm-up jobs excluded from the metrics.
    """

    trace: JobTrace
    steps: tuple[CleanStep, ...]
    in_metrics: np.ndarray


def flurry_mask(user: np.ndarray, submit: np.ndarray, jobs: int, window: float) -> np.ndarray:
    """True for jobs inside a flurry: ``>= jobs`` submissions of one user within ``window`` s.

    Vectorised: jobs are sorted by (user, submit); for each job a binary search finds how many
    of the same user's jobs fall in ``[submit, submit + window)``; a window that reaches
    ``jobs`` marks all of its jobs (a difference array turns windows into a mask).
    """
    n = len(submit)
    if n == 0:
        return np.zeros(0, dtype=bool)
    order = np.lexsort((submit, user))
    u = user[order]
    s = submit[order]
    span = float(s.max() - s.min()) + window + 1.0
    _, rank = np.unique(u, return_inverse=True)
    key = rank.astype(np.float64) * span + (s - s.min())
    end = np.searchsorted(key, key + window, side="left")
    starts = np.flatnonzero(end - np.arange(n) >= jobs)
    diff = np.zeros(n + 1, dtype=np.int64)
    np.add.at(diff, starts, 1)
    np.add.at(diff, end[starts], -1)
    inside_sorted = np.cumsum(diff[:n]) > 0
    mask = np.zeros(n, dtype=bool)
    mask[order] = inside_sorted
    return mask


def clean(
    trace: JobTrace,
    *,
    cpus: int | None = None,
    max_runtime: float = SEVEN_DAYS,
    flurry_jobs: int = DEFAULT_FLURRY_JOBS,
    flurry_window: float = DEFAULT_FLURRY_WINDOW,
    warmup: float = DEFAULT_WARMUP,
) -> Cleaned:
    """Apply the cleaning steps of the module docstring, counting each.

    Parameters
    ----------
    trace
        Jobs as read (any order of submit times is accepted; the result is sorted).
    cpus
        Machine size in processors; wider jobs are dropped. None skips the step.
    max_runtime
        Seconds; longer jobs are dropped (default 7 days).
    flurry_jobs, flurry_window
        A flurry is ``flurry_jobs`` or more jobs of one user within ``flurry_window`` seconds.
    warmup
        Share of the first jobs (by submit time) excluded from the metrics, in [0, 1).
    """
    steps: list[CleanStep] = []

    def record(name: str, description: str, affected: int, t: JobTrace) -> None:
        steps.append(CleanStep(name, description, int(affected), len(t)))

    t = trace.take(np.argsort(trace.submit, kind="stable"))
    procs = t.procs.copy()
    missing = procs < 1
    procs[missing] = t.req_procs[missing]
    t = t.with_column("procs", procs)
    record("fill-procs", "allocated processors missing → requested", missing.sum(), t)

    bad = (t.run < 0) | (t.procs < 1)
    t = t.take(~bad)
    record("drop-unrunnable", "run time or processors missing", bad.sum(), t)

    if cpus is not None:
        wide = t.procs > cpus
        t = t.take(~wide)
        record("drop-too-wide", f"more than {cpus} processors", wide.sum(), t)

    req = t.req_time.copy()
    unset = req <= 0
    req[unset] = np.maximum(t.run[unset], 1.0)
    t = t.with_column("req_time", req)
    record("fill-request", "requested time missing → run time", unset.sum(), t)

    long = t.run > max_runtime
    t = t.take(~long)
    record("drop-long", f"ran more than {max_runtime / 86400:g} days", long.sum(), t)

    flurry = flurry_mask(t.user, t.submit, flurry_jobs, flurry_window)
    t = t.take(~flurry)
    record(
        "drop-flurries",
        f"≥ {flurry_jobs} jobs of one user within {flurry_window / 3600:g} h",
        flurry.sum(),
        t,
    )

    n_warm = int(np.floor(warmup * len(t)))
    in_metrics = np.ones(len(t), dtype=bool)
    in_metrics[:n_warm] = False
    record("warm-up", f"first {warmup:.0%} of jobs simulated, excluded from metrics", n_warm, t)
    return Cleaned(t, tuple(steps), in_metrics)
