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
``examples/policy/ave2_simple.py`` reproduces the built-in ``easy++-simple`` bit for bit. A
class whose ``predict`` is a numba ``@njit`` function is a compiled plug-in, called inside the
kernel (:mod:`grapeshot.jobs.plugin_compiled`).
Anything that goes wrong inside the plug-in (import, missing method, an exception, a
prediction that is not a positive finite number of seconds) is one line naming the spec and
the job.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from grapeshot.jobs.clean import SEVEN_DAYS
from grapeshot.jobs.correct import LEAD_S
from grapeshot.jobs.job import Job
from grapeshot.jobs.plugin_compiled import (
    check_compiled,
    is_compiled,
    run_compiled,
    too_many_corrections,
)
from grapeshot.jobs.policies import PAPER_POLICIES, POLICIES, Policy, get_policy
from grapeshot.jobs.rules import (
    NO_CORRECTION,
    capped_correction,
    clamp_prediction,
    correction_fires,
)
from grapeshot.jobs.scheduler import (
    BACKFILL,
    MAX_CORRECTIONS,
    PRED_ASK,
    S_DONE,
    S_FREE,
    S_NEXT,
    KernelState,
    run_kernel,
)
from grapeshot.jobs.simulate import Cluster, Schedule, kernel_inputs, schedule_of
from grapeshot.jobs.trace import JobTrace
from grapeshot.model.errors import InputError, exception_line
from grapeshot.model.user_code import load_object  # the importlib machinery --app uses too

# The kernel's rules as plain Python functions, called once per job (a call through numba's
# dispatcher would cost more than the rule).
_clamp = clamp_prediction.py_func
_fires = correction_fires.py_func
_capped = capped_correction.py_func


class Completed:
    """Completed jobs, in the order they completed; arrays of shape ``(k,)``.

    Attributes ``index`` (position in the trace), ``user``, ``procs``, ``submit``, ``request``,
    ``start``, ``end`` and ``runtime`` (``end - start``: the time each job ran, shorter than
    asked if killed), seconds for times. Each is made from the simulation's arrays when read
    (``start`` and ``end`` from those the kernel writes in completion order, the others
    gathered), so a plug-in pays only for the columns it uses (read each once).
    """

    __slots__ = ("_h", "_k", "index")
    _fields = ("index", "user", "procs", "submit", "request", "start", "end", "runtime")

    def __init__(self, k: int, n: int, history: History) -> None:
        self.index = history._state.done_order[k:n].copy()
        self._k = k
        self._h = history

    def __len__(self) -> int:
        return len(self.index)

    def __repr__(self) -> str:
        return f"Completed({len(self)} jobs: {', '.join(self._fields)})"

    @property
    def user(self) -> np.ndarray:
        return self._h._user[self.index]

    @property
    def procs(self) -> np.ndarray:
        return self._h._procs[self.index]

    @property
    def submit(self) -> np.ndarray:
        return self._h._state.submit[self.index]

    @property
    def request(self) -> np.ndarray:
        return self._h._request[self.index]

    @property
    def start(self) -> np.ndarray:
        return self._h._state.done_start[self._k : self._k + len(self.index)].copy()

    @property
    def end(self) -> np.ndarray:
        return self._h._state.done_end[self._k : self._k + len(self.index)].copy()

    @property
    def runtime(self) -> np.ndarray:
        s, k = self._h._state, self._k
        return s.done_end[k : k + len(self.index)] - s.done_start[k : k + len(self.index)]


class _NoneCompleted(Completed):
    """No job: the columns are empty arrays made once (since() is mostly empty)."""

    __slots__ = Completed._fields[1:]

    def __init__(self, history: History) -> None:
        super().__init__(0, 0, history)
        for name in self.__slots__:
            column = getattr(Completed, name).fget(self)
            column.flags.writeable = False
            object.__setattr__(self, name, column)


class History:
    """The jobs completed so far, and nothing about the jobs still running or waiting.

    ``len(history)`` is the number completed; ``history.since(k)`` the ones completed after the
    first ``k``, so a plug-in that keeps its own state reads each completion once.
    """

    def __init__(self, state: KernelState, trace: JobTrace, request: np.ndarray) -> None:
        self._state = state
        self._user = np.asarray(trace.user)
        self._procs = np.asarray(trace.procs)
        self._request = request
        self._none = _NoneCompleted(self)

    def __len__(self) -> int:
        return int(self._state.ist[S_DONE])

    def since(self, k: int = 0) -> Completed:
        """The jobs completed after the first ``k`` (all of them for ``k = 0``)."""
        n = int(self._state.ist[S_DONE])
        if k >= n:
            return self._none
        return Completed(k, n, self)


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
    cls, _ = load_object(
        spec,
        option="--policies",
        expected="a policy name or FILE.py:Class / package.module:Class (docs/jobs.md)",
        kind=inspect.isclass,
        wanted="a class {name} with predict(job, history) (docs/jobs.md)",
    )
    if not callable(getattr(cls, "predict", None)):
        raise InputError(spec, f"{cls.__name__} has no predict(job, history)", "docs/jobs.md")
    if is_compiled(cls):
        check_compiled(spec, cls)
    corrects = callable(getattr(cls, "correct", None))
    kill = getattr(cls, "kill", "hard" if corrects else "request")
    if kill not in ("hard", "request"):
        raise InputError(f"{spec} kill", f"got {kill!r}", '"hard" or "request"')
    name = getattr(cls, "name", None)
    return PluginPolicy(spec, name if isinstance(name, str) and name else spec, kill, cls)


def parse_policies(text: str) -> list[Policy | PluginPolicy]:
    """``"user-estimate,simple"`` → policies, in the order given, each once.

    ``all`` stands for every policy and ``paper`` for the seven of table 2; both may be mixed
    with names (``paper,clairvoyant``). An entry with a colon is a plug-in,
    ``FILE.py:Class`` or ``package.module:Class`` (:func:`load_plugin`).
    """
    groups = {"all": tuple(POLICIES), "paper": PAPER_POLICIES}
    names = [s.strip() for s in text.split(",") if s.strip()]
    if not names:
        raise ValueError(
            "no policy given; expected a comma-separated list of " + ", ".join(POLICIES)
        )
    chosen: dict[str, Policy | PluginPolicy] = {}
    for name in names:
        for member in groups.get(name, (name,)):
            if member not in chosen:
                chosen[member] = load_plugin(member) if is_plugin(member) else get_policy(member)
    rows = [p.name for p in chosen.values()]
    if len(set(rows)) < len(rows):
        raise ValueError(f"two policies are both called {max(rows, key=rows.count)!r}")
    return list(chosen.values())


def simulate_plugin(
    trace: JobTrace,
    plugin: PluginPolicy,
    machine: Cluster,
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
    state, limit, _ = kernel_inputs(trace, plugin.kill, machine, max_walltime)
    if is_compiled(plugin.cls):
        run_compiled(plugin.spec, plugin.cls, policy, state, trace, BACKFILL[backfill])
        return schedule_of(state, trace, plugin.name, backfill, machine)
    predict, correct = policy.predict, getattr(policy, "correct", None)
    n = len(trace)
    history = History(state, trace, state.req)
    job_id, user, procs = (np.asarray(a).tolist() for a in (trace.job_id, trace.user, trace.procs))
    submit, req, run, hard, size, user_index = (
        a.tolist() for a in (state.submit, state.req, state.run, limit, state.size, state.user)
    )
    req_mem = np.asarray(trace.req_mem, dtype=np.float64).tolist()
    pred = np.zeros(n)
    cptr = np.zeros(n + 1, dtype=np.int64)
    walls = np.zeros(max(n, 16))  # every job's corrections, grown by doubling
    bf = BACKFILL[backfill]
    none = np.zeros(0)
    args = state.kernel_args(pred, none, LEAD_S, PRED_ASK, bf, chains=(cptr, walls))
    ist, fst, pver, nwalls = state.ist, state.fst, state.pver, 0
    # The kernel returns at an arrival whose prediction has not seen the latest completion,
    # with a time before which no job can end (fst[1]): every arrival before then sees the
    # same history, so one return predicts them all (in order, each once).
    while not run_kernel(*args):
        j0 = j = int(ist[S_NEXT])
        if pver[j] >= 0:
            raise RuntimeError(f"internal: job {j} would be predicted twice")
        done, quiet, free = int(ist[S_DONE]), float(fst[1]), int(ist[S_FREE])
        batch: list[float] = []
        while j < n:
            t = submit[j]
            if j > j0 and not t < quiet:
                break
            job = Job(j, job_id[j], user[j], procs[j], t, req[j], req_mem[j], user_index[j])
            try:
                p = predict(job, history)
            except Exception as exc:
                raise _raised(plugin, "predict", exc, job) from None
            w = _clamp(_seconds(p, plugin, job), job.request)
            batch.append(w)
            r = run[j]
            if correct is not None and _fires(w, r, hard[j], LEAD_S):
                chain = _chain(plugin, correct, job, w, r, hard[j])
                if chain:
                    w = chain[-1]
                    if nwalls + len(chain) > len(walls):
                        walls = np.concatenate([walls, np.zeros(max(len(walls), len(chain)))])
                        args = state.kernel_args(pred, none, LEAD_S, PRED_ASK, bf,
                                                 chains=(cptr, walls))  # fmt: skip
                    walls[nwalls : nwalls + len(chain)] = chain
                    nwalls += len(chain)
            cptr[j + 1] = nwalls
            if size[j] <= free:  # else it cannot start before a running job ends
                end = t + (r if r < w else w)
                quiet = end if end < quiet else quiet
            j += 1
        pred[j0:j] = batch
        pver[j0:j] = done
    return schedule_of(state, trace, plugin.name, backfill, machine)


def _chain(
    plugin: PluginPolicy, correct: Any, job: Job, w: float, run: float, hard: float
) -> list[float]:
    """The walltimes ``job`` goes through after its prediction ``w``: the corrections that
    fire while it runs (the rules of :mod:`grapeshot.jobs.rules`, as the compiled path's
    :func:`grapeshot.jobs.scheduler._call_plugin` applies them)."""
    out: list[float] = []
    while _fires(w, run, hard, LEAD_S):
        try:
            new = correct(job, w - LEAD_S, w)
        except Exception as exc:
            raise _raised(plugin, "correct", exc, job) from None
        new = _capped(_seconds(new, plugin, job), w, hard)
        if new == NO_CORRECTION:
            break
        if len(out) == MAX_CORRECTIONS:
            raise too_many_corrections(plugin.spec, job.job_id)
        out.append(new)
        w = new
    return out


def _raised(plugin: PluginPolicy, method: str, exc: Exception, job: Job) -> InputError:
    """The one-line error for an exception raised inside the plug-in's ``method``."""
    if isinstance(exc, InputError):
        return exc
    return InputError(plugin.spec, f"{method}() raised {exception_line(exc)} on job {job.job_id}")


def _seconds(value: Any, plugin: PluginPolicy, job: Job) -> float:
    if type(value) is float and 0.0 < value < math.inf:  # the common case, checked fast
        return value
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
