"""Offered load: measure it, and (optionally, always reported) compress arrivals to raise it.

A trace prefix can be much lighter than the log a paper simulated. The COARE paper's HPC2N Seth
run used 45,333 cleaned jobs over 12 months (its table 3); the shared prefix has about 3,150
jobs over 57 days, i.e. 2.3 times fewer jobs per day. :func:`compress_arrivals` divides every
inter-arrival time by a factor (run times, sizes and requests unchanged), so the offered load
grows by that factor. It changes the workload: results on a compressed trace are a different
experiment and must be reported as such, never in place of the trace's own.
"""

from __future__ import annotations

import numpy as np

from grapeshot.jobs.trace import JobTrace
from grapeshot.model.errors import InputError

#: One year, seconds (the paper's "12 months").
YEAR_S = 365.25 * 86400.0


def offered_load(trace: JobTrace, cpus: int) -> float:
    """Σ procs × run / (cpus × (last submit − first submit)); 0 for fewer than two jobs."""
    if len(trace) < 2:
        return 0.0
    span = float(np.max(trace.submit) - np.min(trace.submit))
    work = float(np.sum(np.maximum(trace.procs, 0) * np.maximum(trace.run, 0.0)))
    return work / (cpus * span) if span > 0 else 0.0


def rate_factor(trace: JobTrace, jobs: float, period_s: float) -> float:
    """How much faster ``jobs`` per ``period_s`` arrive than the trace's own jobs per second.

    E.g. ``rate_factor(seth_prefix, 45_333, YEAR_S)`` is the compression that gives the
    prefix the job rate of the paper's 12-month Seth log.
    """
    if len(trace) < 2:
        raise InputError("trace", "has fewer than two jobs", "a trace to compare rates with")
    span = float(np.max(trace.submit) - np.min(trace.submit))
    if span <= 0 or jobs <= 0 or period_s <= 0:
        raise InputError("rate", f"jobs {jobs}, period {period_s} s, trace span {span} s")
    return (jobs / period_s) / (len(trace) / span)


def compress_arrivals(trace: JobTrace, factor: float) -> JobTrace:
    """Divide every inter-arrival time by ``factor`` (> 0; 1 leaves the trace unchanged).

    Submit times become ``t0 + (t − t0) / factor`` with ``t0`` the first submit; nothing else
    changes, so the order of arrivals and every job's size, run time and request are kept.
    """
    if not np.isfinite(factor) or factor <= 0:
        raise InputError("--compress", f"got {factor}", "a number > 0")
    if factor == 1.0 or len(trace) == 0:
        return trace
    submit = np.asarray(trace.submit, dtype=np.float64)
    t0 = float(np.min(submit))
    return trace.with_column("submit", t0 + (submit - t0) / factor)
