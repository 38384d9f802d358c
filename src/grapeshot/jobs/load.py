"""Offered load: measure it, and (optionally, always reported) compress arrivals to raise it.

A trace prefix can be much lighter than the log a paper simulated. The COARE paper's HPC2N Seth
run used 45,333 cleaned jobs over 12 months (its table 3); the shared prefix has about 3,150
jobs over 57 days, i.e. 2.3 times fewer jobs per day. :func:`compress_arrivals` divides every
inter-arrival time by a factor (run times, sizes and requests unchanged), so the offered load
grows by up to that factor (:func:`offered_load`'s span keeps the last jobs' run time, which
the compression does not shorten: a little less than the factor on a long log). It changes
the workload: results on a compressed trace are a different experiment and must be reported
as such, never in place of the trace's own.
"""

from __future__ import annotations

import numpy as np

from grapeshot.jobs.trace import JobTrace
from grapeshot.model.errors import InputError

#: One year, seconds (the paper's "12 months").
YEAR_S = 365.25 * 86400.0


def offered_load(trace: JobTrace, cpus: int) -> float:
    """The work the log offers over the machine's capacity in the span it is offered in.

    ``Σ procs × run / (cpus × T)`` with ``T = max(submit + run) − min(submit)``: from the
    first submission to the earliest moment the last job could end, the shortest span in
    which a machine that never made a job wait would run every job of the log. A load above
    1 means no schedule runs the log's work in that span.

    ``T`` used to be the span of the submissions alone, ``max(submit) − min(submit)``. On a
    log much longer than its jobs the two agree (the difference is the last jobs' run time
    against months of arrivals); on an excerpt shorter than its jobs the old figure counted
    hours of work against minutes of capacity: 973 for the first ten minutes of the HPC2N
    Seth prefix (3 jobs, the longest 8.7 h, 240 CPUs), 0.37 now. 0 for a log without work.
    """
    if len(trace) == 0:
        return 0.0
    run = np.maximum(np.asarray(trace.run, dtype=np.float64), 0.0)
    submit = np.asarray(trace.submit, dtype=np.float64)
    span = float(np.max(submit + run) - np.min(submit))
    work = float(np.sum(np.maximum(trace.procs, 0) * run))
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
