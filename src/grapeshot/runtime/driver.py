"""Start to finish on MPI: place, run (task, reference or serial executor), migrate, gather.

Rank 0 computes the placement and every rank receives it; each rank builds its own
partitions. After the run, rank 0 gathers the records and the final fields and returns a
:class:`RunOutcome`; the other ranks return ``None``.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import operator
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from grapeshot.model.errors import InputError
from grapeshot.model.fields import assemble_fields, fields_digest
from grapeshot.model.program import Program
from grapeshot.place.dynamic import call_steps
from grapeshot.place.greedy import greedy_rebalance
from grapeshot.place.paid_moves import MoveLedger
from grapeshot.place.static import get_static_strategy
from grapeshot.runtime.agreement import rank_zero_decides
from grapeshot.runtime.block_moves import move_blocks
from grapeshot.runtime.checkpoint import (
    Boundary,
    RunStopped,
    load_blocks,
)
from grapeshot.runtime.executor import run_tasks
from grapeshot.runtime.reference import run_reference
from grapeshot.runtime.results import RankResult
from grapeshot.runtime.run_options import RunOptions
from grapeshot.runtime.serial import run_serial


@dataclass
class RunOutcome:
    """Everything rank 0 knows after a run.

    Attributes
    ----------
    summary
        The JSON summary (see ``grapeshot run --help``).
    tasks
        Columns over every task of every rank: ``rank, part, step, phase, thread, start, end,
        cpu, wait, halo`` (seconds since the run's start); ``None`` when the run was asked
        for no task rows (``task_rows=False``).
    work
        int64, ``(steps, P)``: the program's work count per partition per step.
    node_of
        int32, ``(P,)``: the initial placement (rank of each partition).
    node_of_final
        The placement at the end (differs after a migration).
    halo_bytes
        ``{(src, dst): bytes}`` over the run.
    messages
        Columns over every inter-rank message: ``src``, ``dst`` (ranks), ``bytes``,
        ``seconds`` from the send being posted to the receive completing.
    fields
        Final output fields over the whole domain.
    network
        With ``probe_network``: ``bytes`` and one-way ``seconds`` of a ping-pong between rank
        0 and every other rank after the run (:func:`grapeshot.runtime.probe.ping_pong`).
    rebalances
        Runs rebalanced inside (a dynamic strategy, ``migrate_at``): one row per call, the
        columns of :func:`_rebalances` (what the simulator calibrates its model of a call on).
    """

    summary: dict[str, Any]
    tasks: dict[str, np.ndarray] | None
    work: np.ndarray
    node_of: np.ndarray
    node_of_final: np.ndarray
    halo_bytes: dict[tuple[int, int], int]
    fields: dict[str, np.ndarray]
    messages: dict[str, np.ndarray]
    network: dict[str, np.ndarray] | None = None
    rebalances: dict[str, np.ndarray] | None = None


@dataclass(frozen=True)
class Rebalanced:
    """One rebalancing step, as ``on_migrate`` reports it (Charm++'s ``+LBDebug`` in spirit).

    Attributes
    ----------
    step
        Steps completed before the partitions moved.
    parts_moved
        Partitions whose rank changed.
    bytes
        Bytes of partition state sent between ranks (summed over every rank).
    seconds
        Wall time of the rebalance: gathering the loads, deciding, moving the state.
    ranks_before, ranks_after
        Partitions per rank before and after.
    """

    step: int
    parts_moved: int
    bytes: int
    seconds: float
    ranks_before: tuple[int, ...]
    ranks_after: tuple[int, ...]


def place_on_ranks(program: Program, strategy: str, seed: int, ranks: int, threads: int):
    """The placement of ``program``'s partitions on ``ranks`` ranks of ``threads`` cores."""
    fn = get_static_strategy(strategy)
    cores = np.full(ranks, threads, dtype=np.int64)
    return np.asarray(fn(program.parts_shape, cores, seed=seed), dtype=np.int32)


def run_program(
    program: Program,
    *,
    comm,
    on_step: Callable[[int], None] | None = None,
    on_migrate: Callable[[Rebalanced], None] | None = None,
    setup_started: float | None = None,
    pending_signal: Callable[[], int] | None = None,
    **options: Any,
) -> RunOutcome | None:
    """Run ``program`` on ``comm``'s ranks (collective); rank 0 gets the outcome, the others
    ``None``.

    Parameters
    ----------
    program
        The program, built on every rank alike.
    comm
        The ranks' communicator.
    on_step
        Called on rank 0 after each step with the step just done (a progress bar).
    on_migrate
        Called on rank 0 with a :class:`Rebalanced` as soon as partitions have moved.
    setup_started
        ``time.perf_counter()`` when the caller began building the program (default: now).
        The summary's ``setup_seconds`` run from it to the first step (program, placement,
        blocks, plans, compilation: what the user waits for before step 0);
        ``gather_seconds`` from the last step to the outcome (fields gathered on rank 0,
        digest).
    pending_signal
        ``pending_signal()`` is the signal this rank received and has not acted on (0 for
        none; :meth:`grapeshot.runtime.lifeline.Guard.deferred`). The ranks agree to stop at a
        step boundary, write a checkpoint there with ``checkpoint``, and every rank raises
        :class:`~grapeshot.runtime.checkpoint.RunStopped`.
    **options
        The fields of :class:`~grapeshot.runtime.run_options.RunOptions` (``steps``,
        ``strategy`` and ``seed`` at least), checked before anything runs.
    """
    if setup_started is None:
        setup_started = time.perf_counter()
    run = RunOptions(**options)
    node_of = _agreed_placement(program, run, comm)
    done = _execute(program, run, node_of, comm, on_step, on_migrate, pending_signal)
    from mpi4py.util import pkl5  # here: importing mpi4py.MPI starts MPI

    last = len(done.results) - 1
    # pkl5: the task records' arrays travel out of band, not copied into a pickle (half the
    # gathering's time at a hundred thousand tasks a rank).
    gathered = pkl5.Intracomm(comm).gather(
        [
            _portable(program, r, outputs=i == last, tasks=run.task_rows)
            for i, r in enumerate(done.results)
        ],
        root=0,
    )
    # Each rank timed its own part of every call (gather, decide, move): the rest of the time
    # between its segments is its re-plan.
    mover = done.mover
    call_seconds = None if mover is None else comm.gather([c[3] for c in mover.calls], root=0)
    network = None
    if run.probe_network and comm.Get_size() > 1:
        from grapeshot.runtime.probe import ping_pong

        sizes, seconds = ping_pong(comm)
        network = {"bytes": sizes, "seconds": seconds}
    if comm.Get_rank() != 0:
        return None
    outcome = _outcome(program, gathered, done, run)
    outcome.network = network
    if run.restart is not None:
        outcome.summary["first_step"] = run.first
        outcome.summary["restart"] = str(run.restart.path)
    boundary = done.boundary
    starts = [run.first + s for s in done.seg_starts or [0]]
    # The checkpoints written between two segments (not the one after the last step), by
    # step: each took its time (every rank at once) in the pause there; the rest of the
    # pauses is rebalancing.
    between = {}
    if boundary is not None and run.checkpoint is not None:
        outcome.summary["checkpoints"] = [{"step": s, "seconds": t} for s, t in boundary.written]
        between = {s: t for s, t in boundary.written if s in starts[1:]}
        spent = sum(between.values())
        outcome.summary["rebalance_seconds"] = [
            max(0.0, r - spent) for r in outcome.summary["rebalance_seconds"]
        ]
    if mover is not None:
        outcome.rebalances = _rebalances(
            mover.calls, call_seconds, gathered, program.n_parts, starts, between
        )
        if run.dynamic is not None:
            outcome.summary["dynamic"] = _dynamic_parameters(run.dynamic)
        outcome.summary["loads"] = load_kind(program, run.loads)
        if done.ledger is not None:  # rank 0's: the proposals whose moves were not made
            outcome.summary["lazy_moves"] = True
            outcome.summary["proposals_deferred"] = done.ledger.deferred
    first, last = gathered[0][0], gathered[0][-1]
    outcome.summary["setup_seconds"] = max(0.0, first["started"] - setup_started)
    outcome.summary["gather_seconds"] = max(
        0.0, time.perf_counter() - (last["started"] + last["wall"])
    )
    return outcome


def _agreed_placement(program: Program, run: RunOptions, comm) -> np.ndarray:
    """Rank 0's placement of the partitions on ``comm``'s ranks, on every rank; a refusal
    (a strategy's, too few partitions) is every rank's ``InputError``."""
    size = comm.Get_size()
    placed: list[np.ndarray] = []

    def place() -> None:
        node_of = place_on_ranks(program, run.strategy, run.seed, size, run.threads)
        if run.executor == "task" and np.bincount(node_of, minlength=size).min() == 0:
            raise InputError(
                "--parts",
                f"gives {program.n_parts} partitions to {size} ranks",
                "at least one partition per rank",
            )
        if run.executor == "serial" and size != 1:
            raise InputError("--executor serial", f"runs on 1 rank; got {size}", None)
        placed.append(node_of)

    rank_zero_decides(comm, place)
    return comm.bcast(placed[0] if placed else None, root=0)


@dataclass
class _Executed:
    """What a rank's executor leaves: its results (one per segment), the placements at the
    start and the end, what moved, the segments' first steps (from the run's first), and
    the rebalancer and step boundary that ran (``None`` if none)."""

    results: list[RankResult]
    node_of: np.ndarray
    final_node_of: np.ndarray
    migrated_bytes: int = 0
    seg_starts: list[int] | None = None
    mover: _InRun | None = None
    boundary: Boundary | None = None
    ledger: MoveLedger | None = None


def _execute(
    program: Program, run: RunOptions, node_of, comm, on_step, on_migrate, pending_signal
) -> _Executed:
    """This rank's part of the run, by ``run.executor`` (collective)."""
    if run.executor == "serial":
        return _Executed([_serial_as_rank(program, run.steps, on_step)], node_of, node_of)
    if run.executor == "reference":
        everyone = np.arange(program.n_parts, dtype=np.int32)
        return _Executed([run_reference(program, run.steps, comm=comm)], everyone, everyone)
    kwargs: dict[str, Any] = dict(
        comm=comm, threads=run.threads, reduction=run.reduction, timeout=run.timeout,
        on_step=on_step, exchange=run.exchange, shm=run.shm,
    )  # fmt: skip
    if run.restart is not None:
        kwargs["start"] = (run.first, run.restart.time, load_blocks(run.restart, node_of, comm))
    boundary = None
    if run.checkpoint is not None or pending_signal is not None:
        boundary = Boundary(
            comm, end=run.steps, writer=run.checkpoint, every=run.checkpoint_every,
            seconds=run.checkpoint_seconds, pending=pending_signal or (lambda: 0),
        )  # fmt: skip
        kwargs["boundary"] = boundary
    steps = run.steps - run.first
    done = _Executed([], node_of, node_of, boundary=boundary)
    if not run.rebalanced:
        done.results = run_tasks(program, node_of, steps, **kwargs)
    else:
        # Rebalanced inside the run: the runner re-plans in place at each cut.
        ledger = None
        if run.dynamic is not None:
            cuts = call_steps(run.dynamic, run.steps)
            ledger = MoveLedger() if run.lazy_moves else None
            propose = _dynamic_proposal(
                program, run.dynamic, comm, run.threads, load_kind(program, run.loads), ledger
            )
        else:
            cuts = [run.migrate_at]
            propose = _greedy_proposal(program, comm, load_kind(program, run.loads))
        mover = _InRun(node_of, comm, on_migrate, propose, report_unchanged=run.dynamic is None)
        done.ledger = ledger
        done.results = run_tasks(program, node_of, steps, cuts=cuts, rebalance=mover, **kwargs)
        done.mover, done.final_node_of, done.migrated_bytes = mover, mover.current, mover.migrated
    # Segments end at rebalances and checkpoints: each starts where the one before ended.
    lengths = [len(next(iter(r.work.values()), [])) for r in done.results]
    done.seg_starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(int).tolist()
    if boundary is not None and boundary.stopped is not None:
        raise RunStopped(*boundary.stopped, run.checkpoint and run.checkpoint.path)
    return done


def _serial_as_rank(program: Program, steps: int, on_step) -> RankResult:
    from grapeshot.runtime.timeline import TaskRecord, TaskRows

    run = run_serial(
        program, steps, progress=None if on_step is None else (lambda d, n: on_step(d - 1))
    )
    ended = time.perf_counter()
    record = TaskRecord()
    # The serial executor times whole steps per partition; one record per (step, part).
    cursor = 0.0
    for s in range(steps):
        for p in range(program.n_parts):
            record.part.append(p)
            record.step.append(s)
            record.phase.append(-1)
            record.thread.append(0)
            record.start.append(cursor)
            cursor += float(run.seconds[s, p])
            record.end.append(cursor)
            # The thread's CPU seconds where measured: time the core was taken is no work.
            record.cpu.append(float((run.seconds if run.cpu is None else run.cpu)[s, p]))
            record.wait.append(0.0)
    return RankResult(
        rank=0,
        blocks=dict(enumerate(run.blocks)),
        tasks=TaskRows(record=record),
        work={p: run.work[:, p].tolist() for p in range(program.n_parts)},
        wall=cursor,
        threads=1,
        bytes_sent=0,
        messages=0,
        time=run.time,
        halo_bytes=run.halo_bytes,
        # The serial wall is its kernels' seconds: everything else of the run counts as set-up.
        started=ended - cursor,
        compile_seconds=run.compile_seconds,
        compiled=list(run.compiled),
    )


class _InRun:
    """A task run's rebalance at a cut (:func:`~grapeshot.runtime.executor.run_tasks`'s
    ``rebalance``): ``propose(step, result, placement)`` (collective) gives a placement or
    ``None``; the blocks that change rank move (``alltoall``) and ``on_migrate`` hears of it
    on rank 0 (also of an unchanged placement with ``report_unchanged``). ``calls`` keeps
    every call: ``(step, partitions moved, bytes moved, this rank's seconds in the call,
    placement after)``."""

    def __init__(self, node_of, comm, on_migrate, propose, *, report_unchanged: bool) -> None:
        self.current = np.asarray(node_of, dtype=np.int32)
        self.comm, self.on_migrate, self.propose = comm, on_migrate, propose
        self.report_unchanged = report_unchanged
        self.migrated = 0
        self.calls: list[tuple[int, int, int, float, np.ndarray]] = []

    def __call__(self, step: int, result: RankResult):
        started = time.perf_counter()
        proposal = self.propose(step, result, self.current)
        unchanged = proposal is None or np.array_equal(proposal, self.current)
        before, size = self.current, self.comm.Get_size()
        moved, blocks = 0, None
        if not unchanged:
            blocks, moved = move_blocks(result.blocks, proposal, self.comm)
            self.current = np.asarray(proposal, dtype=np.int32)
            self.migrated += moved
        seconds = time.perf_counter() - started
        parts_moved = int(np.count_nonzero(self.current != before))
        self.calls.append((step, parts_moved, int(moved), seconds, self.current))
        if self.comm.Get_rank() == 0 and self.on_migrate is not None:
            if not unchanged or self.report_unchanged:
                self.on_migrate(
                    Rebalanced(
                        step=step,
                        parts_moved=parts_moved,
                        bytes=int(moved),
                        seconds=seconds,
                        ranks_before=tuple(np.bincount(before, minlength=size).tolist()),
                        ranks_after=tuple(np.bincount(self.current, minlength=size).tolist()),
                    )
                )
        return None if unchanged else (self.current, blocks)


def _rebalances(
    calls, call_seconds, gathered, n_parts: int, seg_starts: list[int], written: dict[int, float]
) -> dict[str, np.ndarray]:
    """One row per rebalance call of a run: ``step`` (steps done before it),
    ``parts_moved``, ``bytes`` (partition state sent, all ranks), ``node_of`` (``(calls,
    P)``, the placement after it), and per rank (``(calls, ranks)``) ``call_seconds``, its
    time in the call (gathering the loads, deciding, moving the blocks), ``seconds``, the
    whole time between its segments (the call, then re-planning in place when partitions
    moved), and ``own_seconds``, the part of it after the last rank ended its segment: the
    rebalance's own cost, without the wait for a slower rank that would have come at the
    next exchange anyway. A checkpoint written at a call's step (``written``: its seconds by
    step) is in the same pause and is taken out of both: it is the checkpoint's cost
    (the summary's ``checkpoints``), not the call's."""
    started = np.array([[seg["started"] for seg in g] for g in gathered])  # (ranks, segments)
    walls = np.array([[seg["wall"] for seg in g] for g in gathered])
    between = (started[:, 1:] - started[:, :-1] - walls[:, :-1]).T
    # Each rank's times from its first step (the ranks leave the barrier before it together):
    # from the end of the segment the last rank finished to this rank's next start.
    since = started - started[:, :1]
    own = (since[:, 1:] - (since[:, :-1] + walls[:, :-1]).max(axis=0)).T
    # Segments end at checkpoints too: keep the boundaries where a call was made.
    called = {c[0] for c in calls}
    keep = [i for i, s in enumerate(seg_starts[1:]) if s in called]
    between, own = between[keep], own[keep]
    n = len(calls)
    saved = np.array([written.get(c[0], 0.0) for c in calls]).reshape(n, 1)
    between, own = between - saved, own - saved
    return {
        "step": np.array([c[0] for c in calls], dtype=np.int64),
        "parts_moved": np.array([c[1] for c in calls], dtype=np.int64),
        "bytes": np.array([c[2] for c in calls], dtype=np.int64),
        "node_of": np.array([c[4] for c in calls], dtype=np.int32).reshape(n, n_parts),
        "call_seconds": np.array(call_seconds, dtype=np.float64).T.reshape(n, len(gathered)),
        "seconds": np.maximum(between, 0.0).reshape(n, len(gathered)),
        "own_seconds": np.maximum(own, 0.0).reshape(n, len(gathered)),
    }


def _dynamic_parameters(dynamic) -> dict[str, Any]:
    """The dynamic strategy's name and the scalar parameters its factory takes: enough to
    make the same strategy again (``make_dynamic_strategy(name, **rest)``). A user's own
    strategy (a name grapeshot does not know) gives its interval and, for a dataclass, its
    fields."""
    from grapeshot.place.dynamic import DYNAMIC_STRATEGIES, factory_keywords

    scalars = (str, int, float, bool, type(None))
    if dynamic.name in DYNAMIC_STRATEGIES:
        keys = factory_keywords(dynamic.name)
    else:
        keys = {"interval"}
        if dataclasses.is_dataclass(dynamic):
            keys |= {f.name for f in dataclasses.fields(dynamic) if f.init} - {"name"}
    params = {k: getattr(dynamic, k, None) for k in sorted(keys)}
    return {"name": dynamic.name, **{k: v for k, v in params.items() if isinstance(v, scalars)}}


def load_kind(program: Program, loads: str) -> str:
    """``"work"`` or ``"cpu"``: what ``loads`` (:data:`~grapeshot.runtime.run_options.LOADS`)
    means for ``program`` (``"auto"``: work counts where it counts its work)."""
    if loads != "auto":
        return loads
    return "work" if program.counts_work else "cpu"


def _gathered_loads(comm, result: RankResult, kind: str, n_parts: int) -> np.ndarray | None:
    """On rank 0, float64 ``(steps, P)``: every partition's load in each step of the segment
    (``None`` elsewhere; collective)."""
    gathered = comm.gather(result.loads(kind), root=0)
    if gathered is None:
        return None
    steps = max(loads.shape[0] for _, loads in gathered)
    every = np.zeros((steps, n_parts))
    for parts, loads in gathered:
        every[: loads.shape[0], parts] = loads
    return every


def _greedy_proposal(program: Program, comm, kind: str):
    """``--migrate-at``: greedy on the last step's loads (``kind``), every rank deciding from
    the same gathered loads; ``None`` where it would leave a rank without partitions."""
    size = comm.Get_size()

    def propose(step: int, result: RankResult, current: np.ndarray):
        loads = comm.bcast(_gathered_loads(comm, result, kind, program.n_parts), root=0)
        new = greedy_rebalance(loads[-1], np.full(size, result.threads))
        return None if np.bincount(new, minlength=size).min() == 0 else new

    return propose


def halo_comm(program: Program):
    """``(P, P)`` bytes two partitions exchange per step, both directions summed: one float64
    per ghost cell and grid-exchanging phase (custom packers are not sized), plus every graph
    exchange's buffers (:attr:`GraphExchange.nbytes`; CommBench's message graph). The
    comm-aware strategies' halo graph."""
    from scipy import sparse

    from grapeshot.model.program import graph_targets, needs_corners
    from grapeshot.model.workload import grid_halo

    n = program.n_parts
    exchanges = sum(phase.exchange is not None for phase in program.phases)
    graphs = [phase.graph for phase in program.phases if phase.graph is not None]
    m = sparse.csr_array((n, n), dtype=np.float64)
    if exchanges or not graphs:
        halo = grid_halo(
            program.domain_shape,
            program.parts_shape,
            ghost=program.ghost,
            cell_bytes=8 * max(1, exchanges),
            corners=needs_corners(program),
            periodic=program.periodic,
        )
        src = np.repeat(np.arange(n), np.diff(halo.indptr))
        m = sparse.csr_array((halo.nbytes.astype(np.float64), (src, halo.indices)), shape=(n, n))
    if graphs:
        boxes = program.boxes()
        rows, cols, sizes = [], [], []
        for graph in graphs:
            for box, targets in zip(boxes, graph_targets(graph, boxes), strict=True):
                nbytes = [float(b) for b in graph.nbytes(box)]
                if len(nbytes) != len(targets):
                    raise ValueError(
                        f"partition {box.part}: graph nbytes has {len(nbytes)} entries for "
                        f"{len(targets)} targets"
                    )
                rows.extend([box.part] * len(targets))
                cols.extend(targets)
                sizes.extend(nbytes)
        # coo -> csr sums repeated pairs.
        m = m + sparse.csr_array((sizes, (rows, cols)), shape=(n, n), dtype=np.float64)
    return (m + m.T).tocsr()


def _ranks_machine(size: int, threads: int):
    """The ranks of a run as a :class:`~grapeshot.model.machine.Machine`."""
    from grapeshot.model.machine import Machine, NodeTree

    return Machine("mpi-ranks", size, NodeTree((("core", int(threads)),)))


def _dynamic_proposal(
    program: Program, dynamic, comm, threads: int, kind: str, ledger: MoveLedger | None
):
    """The proposal of ``dynamic`` at a cut (see :func:`run_program`): the ranks gather the
    partitions' loads of the segment (``kind``: work counts or CPU seconds), rank 0's
    strategy decides, every rank gets its proposal (an error in the strategy crosses ranks
    as data, so no rank hangs). With a ``ledger`` (``--lazy-moves``), rank 0 makes a
    proposal's moves only once the current placement's losses have paid for them."""
    rank, size = comm.Get_rank(), comm.Get_size()
    last: list[tuple[float, bool]] = []  # when the last call began (rank 0's clock), moved
    halo = halo_comm(program) if rank == 0 else None
    cores = np.full(size, threads, dtype=np.int64)
    # Strategies that map onto a machine's tree and network (``needs_machine``) get the ranks
    # as one: a node per rank, ``threads`` cores each, flat network. The others keep
    # ``machine=None`` (their default communication costs).
    machine = None
    if rank == 0 and getattr(dynamic, "needs_machine", False):
        machine = _ranks_machine(size, threads)
    if rank == 0:
        _warm_strategy(dynamic, program.n_parts, cores, halo, machine)

    def propose(step: int, r: RankResult, current: np.ndarray):
        called = time.perf_counter()
        loads = _gathered_loads(comm, r, kind, program.n_parts)
        proposal, error = None, None
        if rank == 0 and ledger is not None and last:
            began, moved = last.pop()  # that call's pause: to this segment's start
            ledger.paused(r.started - began, moved)
        if rank == 0:
            try:
                proposal = dynamic.rebalance(
                    step=step, loads=loads, node_of=current.astype(np.int64), cores=cores.copy(),
                    state_bytes=_state_bytes(r, _sized_by(kind, loads)), comm=halo,
                    machine=machine,
                )  # fmt: skip
                if proposal is not None:
                    proposal = np.asarray(proposal, dtype=np.int32)
                    if (
                        proposal.shape != current.shape
                        or proposal.min() < 0
                        or (proposal.max() >= size)
                    ):
                        raise InputError(
                            f"dynamic strategy {dynamic.name!r}",
                            f"proposed {proposal.shape} nodes in [{proposal.min()}, "
                            f"{proposal.max()}]",
                            f"({program.n_parts},) ranks in [0, {size})",
                        )
                    if np.bincount(proposal, minlength=size).min() == 0:
                        proposal = None  # a rank must keep at least one partition
                moves = proposal is not None and not np.array_equal(proposal, current)
                if moves and ledger is not None:
                    seconds = loads if kind == "cpu" else loads * _seconds_per_work(r)
                    if not ledger.worth(seconds, current, proposal, cores):
                        proposal, moves = None, False
                if ledger is not None:
                    last.append((called, moves))
            except InputError as exc:
                error = (exc.where, exc.problem, exc.expected)
        error, proposal = comm.bcast((error, proposal), root=0)
        if error is not None:
            raise InputError(*error)
        return proposal

    return propose


def _seconds_per_work(r: RankResult) -> float:
    """This rank's CPU seconds per work count in the segment ``r``: what turns work counts
    into time."""
    work = int(np.concatenate([np.asarray(c) for c in r.work.values()] or [[0]]).sum())
    return r.tasks.sums()[0] / work if work > 0 else 0.0


def _warm_strategy(dynamic, n_parts: int, cores: np.ndarray, halo, machine) -> None:
    """Call a copy of ``dynamic`` on two made-up imbalances before the clock starts, so that
    what its first call imports or compiles (scipy's assignment solver for the relabelling of
    refine and of reactive's repacking, 0.2-0.45 s; numba's cached kernels) is not timed as
    the first rebalance's cost. Cyclic placement; rank 0 twice as loaded, then two
    partitions a rank, rank 0's of load 4 and the others' 3, the rest none (no single move
    helps: a repack does). Best effort; the strategy itself is untouched."""
    size = cores.size
    node_of = np.arange(n_parts, dtype=np.int64) % size
    twice = np.where(node_of == 0, 2.0, 1.0)
    pairs = np.zeros(n_parts)
    pairs[: 2 * size] = np.where(node_of[: 2 * size] == 0, 4.0, 3.0)
    for loads in (twice, pairs):
        with contextlib.suppress(Exception):
            copy.deepcopy(dynamic).rebalance(
                step=dynamic.interval, loads=loads[None, :], node_of=node_of.copy(),
                cores=cores.copy(), state_bytes=np.ones(n_parts, dtype=np.int64), comm=halo,
                machine=machine,
            )  # fmt: skip


def _sized_by(kind: str, loads: np.ndarray) -> np.ndarray:
    """float64 ``(P,)``: what a partition's state size is taken to follow, the last step's
    work counts (particles, cells), or with CPU seconds as loads nothing (all alike)."""
    return loads[-1] if kind == "work" else np.ones(loads.shape[1])


def _state_bytes(r: RankResult, weights: np.ndarray) -> np.ndarray:
    """Bytes of each partition's state, estimated from rank 0's own blocks (int64, ``(P,)``).

    Partitions on other ranks get the mean size per unit of ``weights`` (float64, ``(P,)``)
    of rank 0's partitions: the strategy only weighs them against each other."""
    weights = np.maximum(1.0, np.floor(weights))
    parts = np.fromiter(r.blocks, dtype=np.int64, count=len(r.blocks))
    nbytes = operator.attrgetter("nbytes")  # a C call a field: half the time of a generator
    sizes = np.fromiter(
        (sum(map(nbytes, b.values())) for b in r.blocks.values()), np.float64, len(r.blocks)
    )
    estimate = weights * (sizes.sum() / max(weights[parts].sum(), 1.0))
    estimate[parts] = sizes
    return estimate.astype(np.int64)


def _portable(
    program: Program, r: RankResult, outputs: bool = True, tasks: bool = True
) -> dict[str, Any]:
    """What rank 0 gathers of a segment; ``outputs``: the final fields too (the last one);
    ``tasks``: every task's row (else only their sums)."""
    boxes = program.boxes()
    return {
        "rank": r.rank,
        "tasks": r.tasks.arrays() if tasks else None,
        "task_sums": r.tasks.sums(),
        "work": r.work,
        "wall": r.wall,
        "threads": r.threads,
        "bytes_sent": r.bytes_sent,
        "messages": r.messages,
        "time": r.time,
        "halo_bytes": r.halo_pairs(),
        "message_log": r.message_log,
        "reduce_seconds": r.reduce_seconds,
        "reductions": r.reductions,
        "halo_seconds": r.halo_seconds,
        "wait_seconds": r.wait_seconds,
        "serial_seconds": r.serial_seconds,
        "copied_bytes": r.copied_bytes,
        "started": r.started,
        "gil_seconds": r.gil_seconds,
        "gil_returns": r.gil_returns,
        "compile_seconds": r.compile_seconds,
        "compiled": r.compiled,
        "outputs": (
            {p: program.output_fields(b, boxes[p]) for p, b in r.blocks.items()} if outputs else {}
        ),
    }


def _outcome(program: Program, gathered, done: _Executed, run: RunOptions) -> RunOutcome:
    """Rank 0's outcome from every rank's ``gathered`` segments (:func:`_portable`)."""
    node_of, final_node_of, seg_starts = done.node_of, done.final_node_of, done.seg_starts
    steps, executor, threads = run.steps - run.first, run.executor, run.threads
    ranks = len(gathered)
    n = program.n_parts
    segments = len(gathered[0])
    busy = np.zeros(ranks)
    idle = np.zeros(ranks)
    task_halo = np.zeros(ranks)
    columns: dict[str, list[np.ndarray]] = {}
    work = np.zeros((steps, n), dtype=np.int64)
    halo: dict[tuple[int, int], int] = {}
    outputs: dict[int, dict[str, np.ndarray]] = {}
    walls = np.zeros(ranks)
    # Each rank's time runs from its first step's start and every segment sits where it ran:
    # the time between two segments (a rebalance: the call and the re-plan) is in the wall.
    elapsed = np.zeros(ranks)
    log: list[tuple[int, int, int, float]] = []
    for seg in range(segments):
        for g in gathered:
            r = g[seg]
            offset = r["started"] - g[0]["started"]
            # Busy is CPU time: on shared cores a preempted task's wall time is not work.
            cpu, copying, _ = r["task_sums"]
            busy[r["rank"]] += cpu
            task_halo[r["rank"]] += copying
            walls[r["rank"]] += r["wall"]
            elapsed[r["rank"]] = max(elapsed[r["rank"]], offset + r["wall"])
            if r["tasks"] is not None:
                for key, col in r["tasks"].items():
                    col = col + offset if key in ("start", "end") else col
                    columns.setdefault(key, []).append(col)
                columns.setdefault("rank", []).append(np.full(r["tasks"]["part"].size, r["rank"]))
            first_step = 0 if seg_starts is None else seg_starts[seg]
            for p, w in r["work"].items():
                work[first_step : first_step + len(w), p] = w
            for src, nbytes, seconds in r["message_log"]:
                log.append((src, r["rank"], nbytes, seconds))
            for pair, b in r["halo_bytes"].items():
                halo[pair] = halo.get(pair, 0) + b
            if seg == segments - 1:
                outputs.update(r["outputs"])
    for g in gathered:
        idle[g[0]["rank"]] = g[0]["threads"] * elapsed[g[0]["rank"]] - busy[g[0]["rank"]]
    tasks = {k: np.concatenate(v) for k, v in columns.items()} if run.task_rows else None
    fields = assemble_fields(
        program.boxes(), [outputs[p] for p in range(n)], program.particle_fields
    )
    summary = {
        "app": program.name,
        "scene": program.scene,
        "ranks": ranks,
        "strategy": run.strategy if executor != "reference" else "one-per-rank",
        "seed": run.seed,
        "executor": executor,
        "threads": threads if executor == "task" else 1,
        "parts": n,
        "steps": steps,
        "phases": len(program.phases),
        "exchanges": sum(phase.exchange is not None for phase in program.phases),
        "ppc": n / (ranks * (threads if executor == "task" else 1)),
        "reduction": run.reduction if executor == "task" else "mpi",
        "wall_time": float(elapsed.max()),
        # Per rank, the seconds between its segments: rebalancing (in the wall time and idle).
        "rebalance_seconds": np.maximum(elapsed - walls, 0.0).tolist(),
        "busy": busy.tolist(),
        "idle": idle.tolist(),
        "bytes_sent": int(sum(g[s]["bytes_sent"] for g in gathered for s in range(segments))),
        "messages": int(sum(g[s]["messages"] for g in gathered for s in range(segments))),
        "bytes_migrated": int(done.migrated_bytes),
        "reduce_seconds": [
            float(sum(g[s]["reduce_seconds"] for s in range(segments))) for g in gathered
        ],
        "reductions": int(sum(gathered[0][s]["reductions"] for s in range(segments))),
        # The main thread's time outside tasks, per rank (see RankResult).
        **{
            key: [float(sum(g[s][key] for s in range(segments))) for g in gathered]
            for key in ("halo_seconds", "wait_seconds", "serial_seconds")
        },
        # The part of busy that tasks spent copying their own halos (fused exchanges).
        "task_halo_seconds": task_halo.tolist(),
        "copied_bytes": [int(sum(g[s]["copied_bytes"] for s in range(segments))) for g in gathered],
        # Per rank, the seconds its threads waited for the GIL after batched calls (summed over
        # threads) and the calls: what a GIL convoy among threads costs (RankResult).
        "gil_seconds": [float(sum(g[s]["gil_seconds"] for s in range(segments))) for g in gathered],
        "gil_returns": [int(sum(g[s]["gil_returns"] for s in range(segments))) for g in gathered],
        # Per rank, seconds numba compiled during the steps (in the wall time), and what.
        "compile_seconds": [
            float(sum(g[s]["compile_seconds"] for s in range(segments))) for g in gathered
        ],
        "compiled": [
            sorted({name for s in range(segments) for name in g[s]["compiled"]}) for g in gathered
        ],
        "simulated_time": float(gathered[0][-1]["time"]),
        "work_per_rank": np.bincount(
            np.asarray(final_node_of), weights=work.sum(axis=0), minlength=ranks
        ).tolist()
        if segments == 1
        else None,
        "fields_digest": fields_digest(fields),
    }
    columns_log = np.asarray(log, dtype=np.float64).reshape(-1, 4)
    messages = {
        "src": columns_log[:, 0].astype(np.int64),
        "dst": columns_log[:, 1].astype(np.int64),
        "bytes": columns_log[:, 2].astype(np.int64),
        "seconds": columns_log[:, 3],
    }
    return RunOutcome(
        summary,
        tasks,
        work,
        np.asarray(node_of),
        np.asarray(final_node_of),
        halo,
        fields,
        messages,
    )
