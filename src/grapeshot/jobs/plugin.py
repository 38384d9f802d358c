"""Walltime policies as plug-ins: a site's own predictor and correction, written in Python.

``grapeshot jobs simulate --policies FILE.py:Class`` (or ``package.module:Class``, mixed with
built-in names) loads a class and simulates it beside the built-in policies::

    class MyPolicy:
        name = "my-policy"   # optional: the row's name (default: the spec)
        kill = "hard"        # optional: "hard" (7 days, which corrections may reach; the
                             # default when correct() exists) or "request" (the default
                             # without correct(): killed at the user's request)

        def predict(self, job, history):   # -> seconds
            ...

        def correct(self, job, elapsed, limit):   # optional -> seconds
            ...

``predict(job, history)`` is called once per job, in submission order, when the job arrives:
``job`` is a :class:`Job` (no run time: the scheduler does not know it), ``history`` a
:class:`History` of the jobs completed until that instant (this instant's ends included). The
answer is the walltime the scheduler plans with, capped at the job's request and at least
1 s, exactly as the built-in predictors are.

``correct(job, elapsed, limit)`` is called when a running job is within 60 s of its walltime
``limit`` (``elapsed = limit - 60`` s of running, the COARE paper's algorithm 2): it returns
the new walltime, capped at the hard limit; an answer not above ``limit`` ends the
corrections (the job is killed at ``limit``). It must depend on its arguments only: the
corrections of a job are computed as soon as its prediction is known (the job's own run
decides how many fire, as it would on the cluster), in one batch with the prediction.

The class is instantiated once per simulation, with ``seed=`` if its ``__init__`` takes it.
``examples/policy/ave2_simple.py`` reproduces the built-in ``easy++-simple`` bit for bit.
Anything that goes wrong inside the plug-in (import, missing method, an exception, a
prediction that is not a positive finite number of seconds) is one line naming the spec and
the job.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from grapeshot.jobs.clean import SEVEN_DAYS
from grapeshot.jobs.correct import LEAD_S
from grapeshot.jobs.scheduler import (
    BACKFILL,
    MIN_PREDICTION_S,
    PRED_ASK,
    KernelState,
    run_kernel,
)
from grapeshot.jobs.simulate import Machine, Schedule, kernel_inputs, schedule_of
from grapeshot.jobs.trace import JobTrace
from grapeshot.model.errors import InputError, exception_line

#: More corrections than this for one job is a plug-in that never lets a walltime grow
#: enough (e.g. +1 ms each time): refused rather than looped.
MAX_CORRECTIONS = 10_000


class Job(NamedTuple):
    """What a plug-in sees of one job (no run time).

    Attributes
    ----------
    index
        Position in the cleaned trace (submission order), 0 … n−1.
    job_id, user
        As in the log.
    procs
        Processors.
    submit
        Seconds from the log's start.
    request
        The walltime the user asked for (after COARE mode, at least 1 s), seconds.
    req_mem
        Requested memory per processor, KB (−1 if the log has none).
    """

    index: int
    job_id: int
    user: int
    procs: int
    submit: float
    request: float
    req_mem: float


class Completed(NamedTuple):
    """Completed jobs, in the order they completed; arrays of shape ``(k,)``.

    ``runtime`` is ``end - start``: the time each job ran (shorter than asked if killed).
    """

    index: np.ndarray
    user: np.ndarray
    procs: np.ndarray
    submit: np.ndarray
    request: np.ndarray
    start: np.ndarray
    end: np.ndarray
    runtime: np.ndarray


class History:
    """The jobs completed so far, and nothing about the jobs still running or waiting.

    ``len(history)`` is the number completed; ``history.since(k)`` the ones completed after the
    first ``k``, so a plug-in that keeps its own state reads each completion once.
    """

    def __init__(self, state: KernelState, trace: JobTrace, request: np.ndarray) -> None:
        self._state = state
        self._user = np.asarray(trace.user)
        self._procs = np.asarray(trace.procs)
        self._submit = state.submit
        self._request = request
        self._none = Completed(*(a[:0] for a in (state.done_order, self._user, self._procs,
                                                  self._submit, request, state.start,
                                                  state.end, state.end)))  # fmt: skip

    def __len__(self) -> int:
        return self._state.completed

    def since(self, k: int = 0) -> Completed:
        """The jobs completed after the first ``k`` (all of them for ``k = 0``)."""
        s = self._state
        n = s.completed
        if k >= n:
            return self._none
        idx = s.done_order[k:n].copy()
        start, end = s.start[idx], s.end[idx]
        return Completed(
            idx,
            self._user[idx],
            self._procs[idx],
            self._submit[idx],
            self._request[idx],
            start,
            end,
            end - start,
        )


@dataclass(frozen=True)
class PluginPolicy:
    """A loaded plug-in: its spec, row name, kill rule and the class to instantiate."""

    spec: str
    name: str
    kill: str
    cls: Any

    def instantiate(self, seed: int) -> Any:
        """A fresh instance (``seed=`` passed if ``__init__`` takes it)."""
        try:
            takes_seed = "seed" in inspect.signature(self.cls).parameters
        except (TypeError, ValueError):
            takes_seed = False
        try:
            return self.cls(seed=seed) if takes_seed else self.cls()
        except Exception as exc:
            raise InputError(self.spec, f"creating it raised {exception_line(exc)}") from None


def is_plugin(name: str) -> bool:
    """Whether a ``--policies`` entry names a plug-in (``...:Class``) rather than a policy."""
    return ":" in name


def load_plugin(spec: str) -> PluginPolicy:
    """The plug-in class ``spec`` names (``FILE.py:Class`` or ``package.module:Class``).

    Raises
    ------
    InputError
        Naming the spec, if the module does not load, the class is missing, has no
        ``predict``, or gives a ``kill`` other than ``"hard"`` or ``"request"``.
    """
    from grapeshot.apps.user import load_object  # importlib machinery shared with --app

    cls, _ = load_object(
        spec,
        option="--policies",
        expected="a policy name or FILE.py:Class / package.module:Class (docs/jobs.md)",
        kind=inspect.isclass,
        wanted="a class {name} with predict(job, history) (docs/jobs.md)",
    )
    if not callable(getattr(cls, "predict", None)):
        raise InputError(spec, f"{cls.__name__} has no predict(job, history)", "docs/jobs.md")
    corrects = callable(getattr(cls, "correct", None))
    kill = getattr(cls, "kill", "hard" if corrects else "request")
    if kill not in ("hard", "request"):
        raise InputError(f"{spec} kill", f"got {kill!r}", '"hard" or "request"')
    name = getattr(cls, "name", None)
    return PluginPolicy(spec, name if isinstance(name, str) and name else spec, kill, cls)


def simulate_plugin(
    trace: JobTrace,
    plugin: PluginPolicy,
    machine: Machine,
    *,
    backfill: str = "easy",
    seed: int = 0,
    max_walltime: float = SEVEN_DAYS,
) -> Schedule:
    """Simulate ``trace`` under a plug-in policy (see the module); the arguments are those of
    :func:`grapeshot.jobs.simulate.simulate`."""
    if backfill not in BACKFILL:
        raise InputError("--backfill", f"got {backfill!r}", "one of " + ", ".join(BACKFILL))
    policy = plugin.instantiate(seed)
    correct = getattr(policy, "correct", None)
    state, limit, _ = kernel_inputs(trace, plugin, machine, max_walltime)
    n = len(trace)
    history = History(state, trace, state.req)
    cols = (
        np.asarray(trace.job_id).tolist(),
        np.asarray(trace.user).tolist(),
        np.asarray(trace.procs).tolist(),
        state.submit.tolist(),
        state.req.tolist(),
        np.asarray(trace.req_mem, dtype=np.float64).tolist(),
    )
    run = state.run.tolist()
    hard = limit.tolist()
    pred = np.zeros(n)
    cptr = np.zeros(n + 1, dtype=np.int64)
    walls = np.zeros(max(n, 16))  # every job's corrections, grown by doubling
    bf = BACKFILL[backfill]
    none = np.zeros(0)
    args = state.kernel_args(pred, none, LEAD_S, PRED_ASK, bf, chains=(cptr, walls))
    pver, nwalls = state.pver, 0
    predict = policy.predict
    while not run_kernel(*args):  # returns at each arrival whose prediction is missing
        j = state.next_arrival
        t = cols[3][j]
        done = state.completed
        while j < n and cols[3][j] == t:  # every job of this instant: the same history
            job = Job(j, cols[0][j], cols[1][j], cols[2][j], t, cols[4][j], cols[5][j])
            p = _seconds(_call(plugin, "predict", predict, job, history), plugin, job)
            w = p if p < job.request else job.request
            w = w if w > MIN_PREDICTION_S else MIN_PREDICTION_S
            pred[j] = w
            pver[j] = done
            if correct is not None:
                chain = _chain(plugin, correct, job, w, run[j], hard[j])
                if nwalls + len(chain) > len(walls):
                    walls = np.concatenate([walls, np.zeros(max(len(walls), len(chain)))])
                    args = state.kernel_args(pred, none, LEAD_S, PRED_ASK, bf, chains=(cptr, walls))
                for w in chain:
                    walls[nwalls] = w
                    nwalls += 1
            cptr[j + 1] = nwalls
            j += 1
    return schedule_of(state, trace, plugin.name, backfill, machine)


def _chain(
    plugin: PluginPolicy, correct: Any, job: Job, w: float, run: float, hard: float
) -> list[float]:
    """The walltimes ``job`` goes through after its prediction ``w``: the corrections that
    fire while it runs (the rule of :func:`grapeshot.jobs.scheduler._corrected`, with
    ``correct`` for the table of increments)."""
    out: list[float] = []
    while w < hard and run > w - LEAD_S:
        new = _seconds(_call(plugin, "correct", correct, job, w - LEAD_S, w), plugin, job)
        new = hard if new > hard else new
        if not new > w:
            break
        if len(out) == MAX_CORRECTIONS:
            raise InputError(
                plugin.spec,
                f"correct() grew job {job.job_id}'s walltime {MAX_CORRECTIONS:,} times "
                f"without reaching its run",
                "corrections that add at least a few minutes",
            )
        out.append(new)
        w = new
    return out


def _call(plugin: PluginPolicy, method: str, fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except InputError:
        raise
    except Exception as exc:
        raise InputError(
            plugin.spec, f"{method}() raised {exception_line(exc)} on job {args[0].job_id}"
        ) from None


def _seconds(value: Any, plugin: PluginPolicy, job: Job) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = math.nan
    if not (math.isfinite(x) and x > 0):
        raise InputError(
            plugin.spec,
            f"returned {value!r:.60} for job {job.job_id}",
            "a positive finite number of seconds",
        )
    return x
