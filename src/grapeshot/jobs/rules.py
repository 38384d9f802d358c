"""The walltime rules every scheduling path shares, each written once.

The compiled kernel (:mod:`grapeshot.jobs.scheduler`), the plain-Python reference
(:mod:`grapeshot.jobs.reference`), the predictors (:mod:`grapeshot.jobs.predict`) and the
Python plug-in path (:mod:`grapeshot.jobs.plugin`) all call these functions, so a change to a
rule changes every path at once. Each is a numba ``@njit`` function: numba kernels inline it,
and Python calls it directly (numba compiles it for scalars or arrays) or, in a per-job Python
loop where a call through numba's dispatcher would cost more than the rule, as
``rule.py_func`` — the same source, with the same IEEE arithmetic, so the same bits.
"""

from __future__ import annotations

import numpy as np
from numba import njit, vectorize

#: Every walltime prediction is at least this many seconds.
MIN_PREDICTION_S = 1.0
#: What :func:`capped_correction` returns when a correction does not grow the walltime.
NO_CORRECTION = -1.0


@njit(cache=True)
def clamp_prediction(p, request):
    """A walltime prediction as the scheduler uses it: at most the job's ``request``, at
    least :data:`MIN_PREDICTION_S` (seconds, scalars; :data:`clamp_predictions` for arrays).
    """
    w = p if p < request else request
    return w if w > MIN_PREDICTION_S else MIN_PREDICTION_S


#: :func:`clamp_prediction` element-wise over arrays (a numpy ufunc of the same source).
clamp_predictions = vectorize(["float64(float64, float64)"], cache=True)(clamp_prediction.py_func)


@njit(cache=True)
def correction_fires(w, run, limit, lead):
    """Whether a job with walltime ``w`` gets a correction: it is still running ``lead`` s
    before ``w`` (it needs ``run`` s) and ``w`` is below its hard ``limit`` (seconds)."""
    return w < limit and run > w - lead


@njit(cache=True)
def correction_time(start, w, lead):
    """When a job started at ``start`` with walltime ``w`` gets its next correction (if
    :func:`correction_fires`): ``lead`` s before ``w``, seconds."""
    return start + (w - lead)


@njit(cache=True)
def capped_correction(new, w, limit):
    """The walltime after a correction that proposes ``new`` on a job at walltime ``w``:
    ``new`` capped at the hard ``limit``, or :data:`NO_CORRECTION` if that does not grow
    ``w`` (the corrections stop there and the job is killed at ``w``)."""
    new = limit if new > limit else new
    return new if new > w else NO_CORRECTION


@njit(cache=True)
def checkpointed_wall(work, every, cost):
    """Seconds a job with ``work`` s of work left runs when it writes a checkpoint after
    every ``every`` s of work, each taking ``cost`` s: one after each whole interval that
    ends before its work does (none at the end). ``every == 0``: no checkpoints."""
    if every <= 0.0 or work <= 0.0:
        return work
    return work + (np.ceil(work / every) - 1.0) * cost


@njit(cache=True)
def checkpoint_saved(ran, every, cost):
    """Seconds of work saved by the checkpoints a job completed in ``ran`` s of running
    (the ``k``-th completes ``k * (every + cost)`` s after the start; one being written at
    the kill is lost)."""
    return every * np.floor(ran / (every + cost))
