"""Run one walltime policy on a trace: predictor + correction + compiled scheduler → schedule."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grapeshot.jobs.checkpoint import SUFFIX, Checkpoint
from grapeshot.jobs.clean import SEVEN_DAYS
from grapeshot.jobs.correct import LEAD_S, get_correction
from grapeshot.jobs.policies import Policy, get_policy
from grapeshot.jobs.predict import Predictor, make_predictor
from grapeshot.jobs.rules import MIN_PREDICTION_S, clamp_predictions
from grapeshot.jobs.scheduler import BACKFILL, KernelState
from grapeshot.jobs.trace import JobTrace
from grapeshot.model.errors import InputError, check_int


@dataclass(frozen=True)
class Cluster:
    """A cluster for batch jobs.

    Attributes
    ----------
    cpus
        Processors in total.
    nodes
        Nodes, or None to schedule processors individually. With nodes, a job takes
        ``ceil(procs / (cpus / nodes))`` whole nodes (Slurm's exclusive allocation).
    """

    cpus: int
    nodes: int | None = None

    def __post_init__(self) -> None:
        check_int(self.cpus, "--cpus")
        if self.nodes is not None:
            if self.nodes < 1 or self.cpus % self.nodes:
                raise InputError(
                    "--nodes", f"got {self.nodes} for {self.cpus} CPUs", "a divisor of --cpus"
                )

    @property
    def capacity(self) -> int:
        """Schedulable units: nodes, or CPUs."""
        return self.nodes if self.nodes is not None else self.cpus

    def units(self, procs: np.ndarray) -> np.ndarray:
        """Units each job occupies."""
        if self.nodes is None:
            return procs.astype(np.int64)
        per_node = self.cpus // self.nodes
        return -(-procs.astype(np.int64) // per_node)


@dataclass(frozen=True)
class Schedule:
    """What happened to every job (arrays of shape ``(n,)``, jobs in submit order).

    Attributes
    ----------
    start, end
        Seconds: when the job first started and when it last ended. Without checkpointing
        ``end - start`` is the time it ran (shorter than ``run`` if killed).
    prediction
        Walltime the scheduler used at submission (the prediction), seconds.
    walltime
        Walltime after the last correction, seconds.
    corrections
        Times each job's walltime was corrected.
    noop_corrections
        Of those, the corrections that changed nothing: fired while the job was within
        60 s of a walltime it then ended within (a job predicted at ≤ 60 s is corrected
        the moment it starts, algorithm 2; docs/jobs.md).
    killed
        True where the job reached a walltime that could no longer grow before finishing
        (and, with checkpointing, had no checkpoint to resume from).
    wait, ran
        Seconds the job spent queued and running, summed over its segments (one segment
        without checkpointing: ``start - submit`` and ``end - start``; always
        ``wait + ran == end - submit`` up to rounding).
    restarts
        Times the job was resubmitted from a checkpoint (0 without checkpointing).
    checkpoint
        How jobs checkpointed, None if they did not (:mod:`grapeshot.jobs.checkpoint`).
    """

    policy: str
    backfill: str
    machine: Cluster
    submit: np.ndarray
    run: np.ndarray
    procs: np.ndarray
    start: np.ndarray
    end: np.ndarray
    prediction: np.ndarray
    walltime: np.ndarray
    corrections: np.ndarray
    killed: np.ndarray
    noop_corrections: np.ndarray
    wait: np.ndarray
    ran: np.ndarray
    restarts: np.ndarray
    checkpoint: Checkpoint | None = None


def check_fits(trace: JobTrace, machine: Cluster) -> None:
    """Refuse jobs wider than the machine (they could never start), naming the first."""
    too_wide = np.flatnonzero(trace.procs > machine.cpus)
    if len(too_wide):
        i = int(too_wide[0])
        raise InputError(
            f"{trace.source} job {int(trace.job_id[i])}",
            f"needs {int(trace.procs[i])} processors, the machine has {machine.cpus}",
            "jobs no wider than --cpus (clean drops them)",
        )
    if len(trace) and (trace.procs < 1).any():
        i = int(np.flatnonzero(trace.procs < 1)[0])
        raise InputError(f"{trace.source} job {int(trace.job_id[i])}", "has no processors")


def kernel_inputs(
    trace: JobTrace, kill: str, machine: Cluster, max_walltime: float
) -> tuple[KernelState, np.ndarray, np.ndarray]:
    """The kernel state for ``trace`` under a policy's ``kill`` rule (``"request"`` or
    ``"hard"``), the hard limits and the user requests."""
    check_fits(trace, machine)
    req = np.maximum(np.asarray(trace.req_time, dtype=np.float64), MIN_PREDICTION_S)
    if kill == "request":
        limit = req.copy()
    else:
        limit = np.full(len(trace), float(max_walltime))
    _, user = np.unique(trace.user, return_inverse=True)
    state = KernelState(
        trace.submit,
        np.maximum(trace.run, 0.0),
        machine.units(trace.procs),
        limit,
        np.minimum(req, limit),
        user.reshape(-1),
        machine.capacity,
    )
    return state, limit, req


def simulate(
    trace: JobTrace,
    policy: Policy | str,
    machine: Cluster,
    *,
    backfill: str = "easy",
    seed: int = 0,
    max_walltime: float = SEVEN_DAYS,
    predictor: Predictor | None = None,
    checkpoint: Checkpoint | None = None,
) -> Schedule:
    """Simulate ``trace`` under one walltime policy.

    Parameters
    ----------
    trace
        Cleaned jobs, sorted by submit time; every ``procs`` in 1 … ``machine.cpus``.
    policy
        A :class:`Policy` or its name (see :data:`grapeshot.jobs.policies.POLICIES`).
    machine
        CPUs (and nodes).
    backfill
        ``fcfs``, ``easy``, ``sjbf`` or ``conservative``.
    seed
        Seed of the learner (adaboost); the schedule is otherwise deterministic.
    max_walltime
        Hard limit of the corrective policies, seconds (7 days).
    predictor
        Override the policy's predictor (e.g. a differently tuned AdaBoost).
    checkpoint
        Make every job checkpoint, and a killed job resume from its last checkpoint
        (:mod:`grapeshot.jobs.checkpoint`); the schedule's policy is then named
        ``policy+ckpt``.
    """
    if isinstance(policy, str):
        policy = get_policy(policy)
    if backfill not in BACKFILL:
        raise InputError("--backfill", f"got {backfill!r}", "one of " + ", ".join(BACKFILL))
    pred_obj = predictor or make_predictor(policy.predictor, seed=seed)
    correction = get_correction(policy.correction)
    state, _limit, _req = kernel_inputs(trace, policy.kill, machine, max_walltime)
    if checkpoint is not None:
        state.checkpointing(checkpoint.every, checkpoint.cost)
    pred = clamp_predictions(pred_obj.initial(trace), state.req)
    mode = pred_obj.kernel_mode
    bf = BACKFILL[backfill]
    if not pred_obj.online:
        state.advance(pred, correction.increments, LEAD_S, mode, bf)
    else:
        every = pred_obj.refit_every(len(trace))
        while not state.advance(pred, correction.increments, LEAD_S, mode, bf, every):
            done = state.finished_jobs()
            done = done[np.argsort(state.end[done], kind="stable")]
            todo = np.arange(state.next_arrival, len(trace))
            new = pred_obj.refit_and_predict(trace, done, state.ran[done], todo)
            if new is not None:
                pred[todo] = clamp_predictions(new, state.req[todo])
    name = policy.name + (SUFFIX if checkpoint is not None else "")
    return schedule_of(state, trace, name, backfill, machine, checkpoint)


def schedule_of(
    state: KernelState,
    trace: JobTrace,
    name: str,
    backfill: str,
    machine: Cluster,
    checkpoint: Checkpoint | None = None,
) -> Schedule:
    """The :class:`Schedule` a finished kernel ``state`` holds for ``trace``."""
    return Schedule(
        policy=name,
        backfill=backfill,
        machine=machine,
        submit=np.asarray(trace.submit, dtype=np.float64),
        run=np.maximum(np.asarray(trace.run, dtype=np.float64), 0.0),
        procs=np.asarray(trace.procs, dtype=np.int64),
        start=state.first_start(),
        end=state.end,
        prediction=state.wtr0,
        walltime=state.wtr,
        corrections=state.ncorr,
        killed=state.killed.astype(bool),
        noop_corrections=state.noop,
        wait=state.waited,
        ran=state.ran,
        restarts=state.restarts,
        checkpoint=checkpoint,
    )
