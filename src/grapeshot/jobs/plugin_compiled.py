"""Compiled plug-in policies: ``predict`` and ``correct`` as numba functions, called inside the
scheduler's compiled loop with no return to Python per job.

A plug-in class whose ``predict`` is a numba ``@njit`` function (a ``staticmethod``) is run
this way (docs/jobs.md, "Compiled plug-ins")::

    class MyCompiledPolicy:
        name = "my-policy"

        def state(self, n_jobs, n_users):      # optional, Python: the plug-in's memory
            return np.zeros(2 * n_users)

        @staticmethod
        @njit
        def predict(job, history, state):     # -> seconds
            ...

        @staticmethod
        @njit
        def correct(job, elapsed, limit):     # optional -> seconds
            ...

``job`` is the same :class:`~grapeshot.jobs.plugin.Job` a Python plug-in gets; ``history`` a
:class:`CompiledHistory` (the completed jobs, in completion order); ``state`` the float64 array
``state()`` returned, which ``predict`` may change (it is the only memory a compiled function
keeps between calls). ``correct`` must depend on its arguments only, as for Python plug-ins.

How it runs: each method is wrapped in a C callback (``numba.cfunc``) of a fixed signature,
whose argument ``ctx`` is the address of a table of the arrays the wrapper reads (the job
columns, the completion-ordered history, the state). The kernel takes the callbacks as
first-class functions of that signature, so it is compiled (and cached) once for every
plug-in; only the small wrappers are compiled, once per class and process. An exception
inside a compiled method cannot cross a C callback: the wrapper catches it and returns NaN,
which the kernel refuses with the job's id (run the class without ``@njit`` to see the
exception itself).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numba import carray, cfunc, njit, types
from numba.core.dispatcher import Dispatcher
from numba.core.errors import NumbaError
from numba.extending import intrinsic

from grapeshot.jobs.correct import LEAD_S
from grapeshot.jobs.job import Job
from grapeshot.jobs.scheduler import (
    CORRECT_SIG,
    MAX_CORRECTIONS,
    PRED_CALL,
    PRED_CALL_CORRECT,
    PREDICT_SIG,
    S_NEXT,
    S_STATUS,
    ST_BAD_CORRECTION,
    ST_BAD_PREDICTION,
    ST_GROW,
    KernelState,
    no_correct,
    run_kernel,
)
from grapeshot.jobs.trace import JobTrace
from grapeshot.model.errors import InputError, exception_line


class CompiledHistory(NamedTuple):
    """What a compiled ``predict`` sees of the completed jobs: arrays of shape ``(k,)`` in the
    order they completed (``k`` = the jobs completed when the job arrives).

    Attributes
    ----------
    index
        Each job's position in the trace (its :attr:`Job.index`).
    user_index
        Its user, numbered 0 … n_users−1 (:attr:`Job.user_index`).
    start, end
        When it started and ended, seconds (``end - start`` is the time it ran).
    """

    index: np.ndarray
    user_index: np.ndarray
    start: np.ndarray
    end: np.ndarray


def is_compiled(cls: type) -> bool:
    """Whether the plug-in class's ``predict`` is a numba function (a compiled plug-in)."""
    return isinstance(getattr(cls, "predict", None), Dispatcher)


def check_compiled(spec: str, cls: type) -> None:
    """Refuse a class that mixes a compiled ``predict`` with a Python ``correct``.

    Raises
    ------
    InputError
        Naming the spec, if ``correct`` exists but is not a numba function.
    """
    correct = getattr(cls, "correct", None)
    if correct is not None and not isinstance(correct, Dispatcher):
        raise InputError(
            spec,
            "predict is compiled (@njit) but correct is not",
            "both @njit (a compiled plug-in) or neither (a Python one)",
        )


def _pointer_to(dtype: types.Type) -> Any:
    """A compiled function turning an address (an integer) into a pointer to ``dtype``."""
    pointer = types.CPointer(dtype)

    @intrinsic
    def at(typingctx, address):  # numba's intrinsic protocol: the typing context first
        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], context.get_value_type(pointer))

        return pointer(types.uintp), codegen

    return at


_u64, _i64, _f64 = (_pointer_to(t) for t in (types.uint64, types.int64, types.float64))

# The table ``ctx`` points to: its length n, then the addresses of the arrays below (all of
# length n except the state, whose length is the last slot).
_CTX = (
    "job_id", "user", "user_index", "procs", "submit", "request", "req_mem",
    "done_order", "done_user", "done_start", "done_end", "state",
)  # fmt: skip
_SLOT = {name: i + 1 for i, name in enumerate(_CTX)}
_N_SLOTS = len(_CTX) + 2
(_JOB_ID, _USER, _USER_INDEX, _PROCS, _SUBMIT, _REQUEST, _REQ_MEM, _DONE_ORDER, _DONE_USER,
 _DONE_START, _DONE_END, _STATE) = _SLOT.values()  # fmt: skip


def _wrappers(cls: type) -> tuple[Any, Any]:
    """The C callbacks around ``cls.predict`` and ``cls.correct`` (compiled now)."""
    predict = cls.predict
    correct = getattr(cls, "correct", None)

    @njit
    def job_at(j, t):
        n = t[0]
        return Job(
            j,
            carray(_i64(t[_JOB_ID]), n)[j],
            carray(_i64(t[_USER]), n)[j],
            carray(_i64(t[_PROCS]), n)[j],
            carray(_f64(t[_SUBMIT]), n)[j],
            carray(_f64(t[_REQUEST]), n)[j],
            carray(_f64(t[_REQ_MEM]), n)[j],
            carray(_i64(t[_USER_INDEX]), n)[j],
        )

    @cfunc(PREDICT_SIG)
    def predict_c(j, done, ctx):
        t = carray(_u64(ctx), _N_SLOTS)
        n = t[0]
        history = CompiledHistory(
            carray(_i64(t[_DONE_ORDER]), n)[:done],
            carray(_i64(t[_DONE_USER]), n)[:done],
            carray(_f64(t[_DONE_START]), n)[:done],
            carray(_f64(t[_DONE_END]), n)[:done],
        )
        state = carray(_f64(t[_STATE]), t[_N_SLOTS - 1])
        try:  # an exception cannot cross the C callback: NaN, which the kernel refuses
            return float(predict(job_at(j, t), history, state))
        except Exception:
            return np.nan

    if correct is None:
        return predict_c, None

    @cfunc(CORRECT_SIG)
    def correct_c(j, elapsed, limit, ctx):
        t = carray(_u64(ctx), _N_SLOTS)
        try:
            return float(correct(job_at(j, t), elapsed, limit))
        except Exception:
            return np.nan

    return predict_c, correct_c


_COMPILED: dict[type, tuple[Any, Any]] = {}


def compiled_callbacks(spec: str, cls: type) -> tuple[Any, Any]:
    """The class's callbacks, compiled on first use in this process.

    Raises
    ------
    InputError
        Naming the spec, with numba's first line, if ``predict`` or ``correct`` does not
        compile for the arguments they get.
    """
    if cls not in _COMPILED:
        try:
            _COMPILED[cls] = _wrappers(cls)
        except NumbaError as exc:
            raise InputError(
                spec,
                f"does not compile: {_numba_reason(exc)}",
                "predict(job, history, state) and correct(job, elapsed, limit) that numba "
                "compiles (docs/jobs.md, Compiled plug-ins)",
            ) from None
    return _COMPILED[cls]


def _numba_reason(exc: NumbaError) -> str:
    """numba's reason in one line, with the plug-in's file and line where it gives them."""
    lines = [x.strip() for x in str(exc).splitlines() if x.strip()]
    reason = next((x for x in lines if not x.startswith(("Failed in", "File ", "During"))), "")
    where = next((x for x in lines if x.startswith("File ") and "grapeshot" not in x), "")
    return f"{reason or type(exc).__name__}{f' ({where})' if where else ''}"


def plugin_state(spec: str, policy: Any, n_jobs: int, n_users: int) -> np.ndarray:
    """The instance's ``state(n_jobs, n_users)`` as a contiguous float64 array (empty if the
    class has none).

    Raises
    ------
    InputError
        Naming the spec, if ``state`` raises or does not return a 1-D float64 array.
    """
    make = getattr(policy, "state", None)
    if make is None:
        return np.zeros(0)
    try:
        state = make(n_jobs, n_users)
    except Exception as exc:
        raise InputError(spec, f"state() raised {exception_line(exc)}") from None
    if not (isinstance(state, np.ndarray) and state.ndim == 1 and state.dtype == np.float64):
        raise InputError(
            f"{spec} state()", f"returned {type(state).__name__}", "a 1-D float64 numpy array"
        )
    return np.ascontiguousarray(state)


def run_compiled(
    spec: str,
    cls: type,
    policy: Any,
    state: KernelState,
    trace: JobTrace,
    backfill: int,
) -> None:
    """Run the kernel to the end with the compiled plug-in ``cls`` (instance ``policy``)
    predicting and correcting inside it.

    Raises
    ------
    InputError
        Naming the spec and the job, if a method raises or answers something other than a
        positive finite number of seconds, or a job gets more than
        :data:`~grapeshot.jobs.scheduler.MAX_CORRECTIONS` corrections.
    """
    predict_c, correct_c = compiled_callbacks(spec, cls)
    n = len(trace)
    memory = plugin_state(spec, policy, n, int(state.user.max()) + 1 if n else 0)
    columns = {
        "job_id": np.ascontiguousarray(trace.job_id, dtype=np.int64),
        "user": np.ascontiguousarray(trace.user, dtype=np.int64),
        "user_index": state.user,
        "procs": np.ascontiguousarray(trace.procs, dtype=np.int64),
        "submit": state.submit,
        "request": state.req,
        "req_mem": np.ascontiguousarray(trace.req_mem, dtype=np.float64),
        "done_order": state.done_order,
        "done_user": state.done_user,
        "done_start": state.done_start,
        "done_end": state.done_end,
        "state": memory,
    }
    ctx = np.zeros(_N_SLOTS, dtype=np.uint64)  # the arrays stay referenced by ``columns``
    ctx[0] = n
    for name, array in columns.items():
        ctx[_SLOT[name]] = array.ctypes.data
    ctx[_N_SLOTS - 1] = len(memory)
    mode = PRED_CALL if correct_c is None else PRED_CALL_CORRECT
    callbacks = (predict_c, correct_c if correct_c is not None else no_correct(), ctx)
    cptr = np.zeros(n + 1, dtype=np.int64)
    walls = np.zeros(max(n, 16) + MAX_CORRECTIONS)  # every job's corrections, grown on demand
    pred = np.zeros(0)
    while True:
        args = state.kernel_args(
            pred, pred, LEAD_S, mode, backfill, chains=(cptr, walls), plugin=callbacks
        )
        if run_kernel(*args):
            return
        status, j = int(state.ist[S_STATUS]), int(state.ist[S_NEXT])
        state.ist[S_STATUS] = 0
        if status == ST_GROW:
            walls = np.concatenate([walls, np.zeros(len(walls))])
            continue
        job_id = int(columns["job_id"][j])
        if status in (ST_BAD_PREDICTION, ST_BAD_CORRECTION):
            method = "predict" if status == ST_BAD_PREDICTION else "correct"
            value = float(state.fst[1])
            said = "raised an exception" if np.isnan(value) else f"returned {value!r}"
            raise InputError(
                spec,
                f"{method}() {said} on job {job_id} (run the class without @njit to see "
                "an exception)",
                "a positive finite number of seconds",
            )
        raise too_many_corrections(spec, job_id)


def too_many_corrections(spec: str, job_id: int) -> InputError:
    """The error for a plug-in whose corrections never let job ``job_id`` reach its run."""
    return InputError(
        spec,
        f"correct() grew job {job_id}'s walltime {MAX_CORRECTIONS:,} times without reaching "
        "its run",
        "corrections that add at least a few minutes",
    )
