"""COARE-like workloads: most users keep the site's default walltime.

At DOST-ASTI COARE users rarely change the default walltime request (7 or 14 days), so the
scheduler sees almost every job as a week long and cannot backfill. :func:`apply_default_walltime`
turns any trace into that situation: a chosen share of the jobs gets the default as its
request. Only jobs that fit in the default are eligible (a user whose job needs longer asks for
it), so no job is killed by the change itself.
"""

from __future__ import annotations

import numpy as np

from grapeshot.jobs.trace import JobTrace
from grapeshot.model.errors import check_positive_number, check_probability
from grapeshot.model.seed import SeedLike, as_generator


def apply_default_walltime(
    trace: JobTrace, hours: float, share: float, *, seed: SeedLike
) -> tuple[JobTrace, int]:
    """Set the requested time of ``share`` of the jobs to ``hours``.

    Parameters
    ----------
    trace
        Jobs.
    hours
        The site default walltime, hours (COARE: 168).
    share
        Fraction of all jobs given the default, in [0, 1]; drawn at random among the jobs
        whose run time fits in the default (all of them if fewer are eligible).
    seed
        Seed of the draw.

    Returns
    -------
    (JobTrace, int)
        The new trace and how many requests were changed.
    """
    hours = check_positive_number(hours, "--default-walltime")
    share = check_probability(share, "--default-share", allow_zero=True)
    rng = as_generator(seed)
    default_s = hours * 3600.0
    eligible = np.flatnonzero(trace.run <= default_s)
    k = min(len(eligible), round(share * len(trace)))
    chosen = rng.choice(eligible, size=k, replace=False) if k else np.zeros(0, dtype=np.int64)
    req = np.asarray(trace.req_time, dtype=np.float64).copy()
    req[chosen] = default_s
    return trace.with_column("req_time", req), int(k)
