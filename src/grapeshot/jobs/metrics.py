"""The COARE paper's metrics (§5.3), per policy, vectorised over a schedule."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from grapeshot.jobs.simulate import Schedule

#: Bounded-slowdown threshold τ, seconds (Feitelson's convention, the paper's eq. 2).
TAU_S = 10.0


@dataclass(frozen=True)
class PolicyMetrics:
    """One policy's figures over the jobs in the metrics (warm-up excluded).

    Attributes
    ----------
    policy
        Policy name.
    jobs
        Jobs counted.
    avg_wait_min
        Mean wait (start − submit; with checkpointing the time queued over all of a job's
        segments), minutes.
    avg_bsld
        Mean bounded slowdown, max((wait + R) / max(R, τ), 1), R = time the job ran (over
        all its segments), τ = 10 s.
    utilization
        Σ procs × R / (CPUs × (last end − first submit)), over all simulated jobs.
    killed
        Jobs that reached a walltime that could not grow (counted jobs only) and, with
        checkpointing, had no checkpoint to resume from.
    prediction_mae_min
        Mean |prediction at submission − actual run time|, minutes.
    corrections
        Mean number of walltime corrections per job.
    noop_corrections
        Corrections that changed nothing (counted jobs): fired within 60 s of a walltime the
        job then ended within — every job predicted at ≤ 60 s that ends in time gets one at
        its start (algorithm 2); included in ``corrections``.
    gap_closed
        Share of the user-estimate → clairvoyant cut in ``avg_bsld`` this policy takes
        (:func:`gap_closed`), or None when perfect walltimes do not beat the requests.
    restarts
        Resubmissions from a checkpoint (counted jobs; 0 without checkpointing).
    checkpoint
        ``{"every_s", "cost_s"}`` when the jobs checkpointed, else None.
    """

    policy: str
    jobs: int
    avg_wait_min: float
    avg_bsld: float
    utilization: float
    killed: int
    prediction_mae_min: float
    corrections: float
    noop_corrections: int = 0
    gap_closed: float | None = None
    restarts: int = 0
    checkpoint: dict[str, float] | None = None

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict."""
        return asdict(self)


def bounded_slowdown(wait: np.ndarray, ran: np.ndarray, tau: float = TAU_S) -> np.ndarray:
    """Per-job bounded slowdown max((wait + ran) / max(ran, τ), 1); seconds in, ratio out."""
    return np.maximum((wait + ran) / np.maximum(ran, tau), 1.0)


def policy_metrics(
    schedule: Schedule, in_metrics: np.ndarray | None = None, *, tau: float = TAU_S
) -> PolicyMetrics:
    """The metrics of ``schedule`` over the jobs where ``in_metrics`` is True (default all)."""
    n = len(schedule.submit)
    mask = np.ones(n, dtype=bool) if in_metrics is None else np.asarray(in_metrics, dtype=bool)
    wait = schedule.wait[mask]
    ran = schedule.ran[mask]
    span = float(schedule.end.max() - schedule.submit.min()) if n else 0.0
    busy = float(np.sum(schedule.procs * schedule.ran))
    util = busy / (schedule.machine.cpus * span) if span > 0 else 0.0
    mae = np.abs(schedule.prediction[mask] - schedule.run[mask])
    count = int(mask.sum())

    def mean(x: np.ndarray) -> float:
        return float(np.mean(x)) if len(x) else 0.0

    return PolicyMetrics(
        policy=schedule.policy,
        jobs=count,
        avg_wait_min=mean(wait) / 60.0,
        avg_bsld=mean(bounded_slowdown(wait, ran, tau)),
        utilization=util,
        killed=int(schedule.killed[mask].sum()),
        prediction_mae_min=mean(mae) / 60.0,
        corrections=mean(schedule.corrections[mask].astype(np.float64)),
        noop_corrections=int(schedule.noop_corrections[mask].sum()),
        restarts=int(schedule.restarts[mask].sum()),
        checkpoint=None if schedule.checkpoint is None else schedule.checkpoint.as_dict(),
    )


def gap_closed(user_estimate: float, clairvoyant: float, value: float) -> float | None:
    """Share of the cut from ``user_estimate`` to ``clairvoyant`` that ``value`` takes.

    All three are average bounded slowdowns of one workload: the users' requests, perfect
    walltimes (each job's run time) and a policy. 1 is as good as perfect walltimes, 0 no
    better than the requests, below 0 worse; above 1 is possible (EASY is not monotone in
    accuracy: a wrong walltime can backfill better). None if the clairvoyant schedule is not
    better than the requests: there is no gap to close.
    """
    gap = user_estimate - clairvoyant
    return (user_estimate - value) / gap if gap > 0 else None


def reduction(baseline: float, value: float) -> float:
    """Relative cut of ``value`` against ``baseline`` (0.999 = 99.9 % lower)."""
    return 1.0 - value / baseline if baseline > 0 else 0.0


def bsld_upper_bound(avg_wait_s: float, tau: float = TAU_S) -> float:
    """The largest average bounded slowdown any schedule with this average wait can have.

    For every job ``max((w + R) / max(R, τ), 1) <= w / τ + 1`` (because ``R / max(R, τ) <= 1``
    and ``w / max(R, τ) <= w / τ``), so over any set of jobs ``avgBSLD <= avg(w) / τ + 1``,
    reached only when every waiting job ran at most τ. A reported (avg wait, avgBSLD) pair
    above this bound cannot both be eq. 2 over the same jobs.
    """
    return float(avg_wait_s) / tau + 1.0


@dataclass(frozen=True)
class LoggedRun:
    """What the log itself says happened (the real scheduler's run), over the metric jobs.

    Attributes
    ----------
    jobs
        Jobs with a logged wait (field 3 >= 0) among the metric jobs.
    avg_wait_min, avg_bsld
        Mean logged wait (minutes) and bounded slowdown (τ = 10 s) with the logged run time.
    utilization
        Σ procs × run / (CPUs × (last logged end − first submit)), all jobs with a wait.
    idle_while_waiting
        Share of the logged waiting time (jobs that waited, time-weighted) during which at
        least as many CPUs as the job needs were idle in the logged schedule: near 0 means
        jobs waited for processors; near 1 means something else held them (per-user limits,
        reservations, nodes down — nothing a capacity model can reproduce).
    """

    jobs: int
    avg_wait_min: float
    avg_bsld: float
    utilization: float
    idle_while_waiting: float

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict."""
        return asdict(self)


def logged_run(
    submit: np.ndarray,
    wait: np.ndarray,
    run: np.ndarray,
    procs: np.ndarray,
    cpus: int,
    in_metrics: np.ndarray | None = None,
    *,
    tau: float = TAU_S,
    samples: int = 64,
) -> LoggedRun:
    """Metrics of the schedule recorded in a log (start = submit + logged wait).

    Parameters
    ----------
    submit, wait, run, procs
        Per job, as logged (wait < 0 means not recorded; such jobs are left out).
    cpus
        Processors of the machine.
    in_metrics
        Jobs counted in the averages (default all); the busy profile uses every logged job.
    samples
        Points per waiting job at which the idle CPUs are read (midpoints of equal parts of
        its wait) for ``idle_while_waiting``.
    """
    submit = np.asarray(submit, dtype=np.float64)
    wait = np.asarray(wait, dtype=np.float64)
    run = np.maximum(np.asarray(run, dtype=np.float64), 0.0)
    procs = np.asarray(procs, dtype=np.int64)
    n = len(submit)
    mask = np.ones(n, dtype=bool) if in_metrics is None else np.asarray(in_metrics, dtype=bool)
    has = wait >= 0
    mask = mask & has
    if not mask.any():
        return LoggedRun(0, 0.0, 0.0, 0.0, 0.0)
    start = submit + np.where(has, wait, 0.0)
    end = start + run
    times = np.concatenate([start[has], end[has]])
    delta = np.concatenate([procs[has], -procs[has]])
    order = np.lexsort((delta, times))  # at equal times ends (negative) before starts
    times, busy = times[order], np.cumsum(delta[order])
    span = float(end[has].max() - submit[has].min())
    util = float(np.sum(procs[has] * run[has])) / (cpus * span) if span > 0 else 0.0
    waited = np.flatnonzero(mask & (wait > 0))
    idle_share = 0.0
    if len(waited):
        frac = (np.arange(samples) + 0.5) / samples
        idle_time = 0.0
        for lo in range(0, len(waited), 8192):  # bounded memory on large logs
            jw = waited[lo : lo + 8192]
            at = submit[jw, None] + wait[jw, None] * frac[None, :]
            k = np.searchsorted(times, at, side="right") - 1
            in_use = np.where(k >= 0, busy[np.maximum(k, 0)], 0)
            enough = (cpus - in_use) >= procs[jw, None]
            idle_time += float(np.sum(enough.mean(axis=1) * wait[jw]))
        idle_share = idle_time / float(np.sum(wait[waited]))
    w, r = wait[mask], run[mask]
    return LoggedRun(
        jobs=int(mask.sum()),
        avg_wait_min=float(np.mean(w)) / 60.0,
        avg_bsld=float(np.mean(bounded_slowdown(w, r, tau))),
        utilization=util,
        idle_while_waiting=idle_share,
    )
