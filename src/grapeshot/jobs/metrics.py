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
        Mean of start − submit, minutes.
    avg_bsld
        Mean bounded slowdown, max((wait + R) / max(R, τ), 1), R = time the job ran, τ = 10 s.
    utilization
        Σ procs × (end − start) / (CPUs × (last end − first submit)), over all simulated jobs.
    killed
        Jobs that reached a walltime that could not grow (counted jobs only).
    prediction_mae_min
        Mean |prediction at submission − actual run time|, minutes.
    corrections
        Mean number of walltime corrections per job.
    """

    policy: str
    jobs: int
    avg_wait_min: float
    avg_bsld: float
    utilization: float
    killed: int
    prediction_mae_min: float
    corrections: float

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
    ran = (schedule.end - schedule.start)[mask]
    span = float(schedule.end.max() - schedule.submit.min()) if n else 0.0
    busy = float(np.sum(schedule.procs * (schedule.end - schedule.start)))
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
    )


def reduction(baseline: float, value: float) -> float:
    """Relative cut of ``value`` against ``baseline`` (0.999 = 99.9 % lower)."""
    return 1.0 - value / baseline if baseline > 0 else 0.0
