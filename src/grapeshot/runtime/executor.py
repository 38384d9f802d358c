"""The task runtime: a placed program on MPI ranks (one per core by default), running tasks.

Each rank owns the partitions its placement gives it and runs the program phase by phase.
For a phase with a halo exchange it first sends, to every neighbouring rank, **one** message
holding every buffer that rank needs from it, and hands the halos between its own partitions
over in memory; then it runs the phase's tasks in the order they become ready, first in first
out: first the partitions whose neighbours are all local, then, as each other rank's message
arrives, the partitions that message completes. So computation proceeds while messages are in
flight, and a rank's cost per halo buffer is a few compiled copies, not Python.

What makes this cheap is planning once per placement (:mod:`grapeshot.runtime.halo_plan`):
grid fields of every local partition live in one flat *arena* per field, and each exchange is
a handful of index arrays, so packing a message is one compiled gather, unpacking one scatter,
and every local halo one compiled copy. Custom packers (particles) are called per buffer, as
they must be, but still travel one message per rank pair.

A phase with a graph exchange (payloads to arbitrary partitions, CommBench's messages) first
sends one message per destination rank holding every buffer for it, hands the local ones over
in memory, receives one message from each rank that sends to it and unpacks, in sender
order, before the phase's halo exchange and tasks; grid phases never pay for it.

A phase with a :class:`~grapeshot.model.program.Batch` runs each set of ready partitions in
one compiled call that stamps every task's start, so no Python runs between its tasks (a
phase with a plain numba kernel gets one generated: :mod:`grapeshot.runtime.plain_batch`).
With one thread per rank, a batched grid exchange is *fused* into the tasks: the rank sends its
messages but copies no halo itself; each task, right before its kernel, copies its own halos —
with the rank's other partitions, both ways with every neighbour that has not run yet (whose
cells still hold what this phase must see), and out of the arrived messages into its ghost
cells — and, right after its kernel, packs its part of the next phase's messages
(:mod:`grapeshot.model.task_halos`). The copies then happen in the task, on the data its kernel
is about to read or has just written, and count as its work.

Grid messages land where the plan puts them (:mod:`grapeshot.runtime.mailboxes`): each
phase's receives are posted before its sends, into one of two inboxes used on alternate
rounds; between ranks of one node the inboxes are a shared-memory window that the sender
writes straight into, and the MPI message carries only the news.

Tasks run on the calling (main) thread and, with ``threads > 1``, on ``threads - 1`` worker
threads that take them (or runs of them, for batches) from the same FIFO queue; kernels and
batches are numba functions that release the GIL. MPI is called from the main thread only.
Waiting on a message is a blocking MPI call that releases the GIL; a watchdog thread aborts
the run if nothing progresses for ``timeout`` seconds. Results are bitwise those of the serial
executor: every halo lands in its own ghost cells whatever the arrival order, unpackers see
their buffers in neighbour order, reductions combine in partition order.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import queue
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numba.core.errors import NumbaError

from grapeshot.exchange.collectives import ordered_allreduce
from grapeshot.model.errors import InputError, exception_line
from grapeshot.model.program import (
    Batch,
    Block,
    Context,
    Offset,
    Phase,
    Program,
    SimulationError,
    face_offsets,
    failure_text,
    graph_targets,
    needs_corners,
    neighbour_offsets,
)
from grapeshot.model.task_halos import no_halos
from grapeshot.runtime.batch_checks import batch_verdict
from grapeshot.runtime.copies import copy_within, gather, scatter
from grapeshot.runtime.halo_plan import (
    Arena,
    GraphPlan,
    GridPlan,
    fused_halos,
    fused_packs,
    graph_plan,
    grid_plan,
    rank_links,
)
from grapeshot.runtime.mailboxes import Mailboxes
from grapeshot.runtime.plain_batch import iparams_table, is_compiled, plain_batch
from grapeshot.runtime.warmup import warm_up
from grapeshot.runtime.wire import (
    GRAPH,
    HALO,
    HEADER,
    MIGRANTS,
    decode_items,
    encode_items,
    payload,
    read_header,
    stamp,
)

_DATA_TAG = 11
#: Grid halo messages of phase ``k`` carry tag ``_GRID_TAG + k``: each phase's receives are
#: posted ahead and matched in order per source, apart from every other message.
_GRID_TAG = 1000
#: Below this many cells a local halo copy is not worth handing part of to another thread.
_SPLIT_COPIES = 4096


@dataclass
class TaskRecord:
    """Per-task measurements of one rank.

    ``start``/``end`` are wall seconds since the run's start (for timelines); ``cpu`` is the
    thread CPU seconds the task used, which excludes the time its core was taken by another
    process or thread (what busy time adds up); ``wait`` is the time from the start of the
    task's phase on its rank to its last halo arriving; ``halo`` is the part of ``cpu`` the
    task spent copying its own halos (fused exchanges; 0 elsewhere).
    """

    part: list[int] = field(default_factory=list)
    step: list[int] = field(default_factory=list)
    phase: list[int] = field(default_factory=list)
    thread: list[int] = field(default_factory=list)
    start: list[float] = field(default_factory=list)
    end: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    wait: list[float] = field(default_factory=list)
    halo: list[float] = field(default_factory=list)

    def arrays(self) -> dict[str, np.ndarray]:
        """The columns as numpy arrays."""
        return {
            "part": np.asarray(self.part, dtype=np.int64),
            "step": np.asarray(self.step, dtype=np.int64),
            "phase": np.asarray(self.phase, dtype=np.int64),
            "thread": np.asarray(self.thread, dtype=np.int64),
            "start": np.asarray(self.start, dtype=np.float64),
            "end": np.asarray(self.end, dtype=np.float64),
            "cpu": np.asarray(self.cpu, dtype=np.float64),
            "wait": np.asarray(self.wait, dtype=np.float64),
            # Executors that never fuse copies into tasks leave it empty: no copies.
            "halo": np.asarray(self.halo or np.zeros(len(self.part)), dtype=np.float64),
        }

    @classmethod
    def from_clocks(cls, clocks: list[_ThreadClock]) -> TaskRecord:
        """The rows every thread's clock recorded."""
        record = cls()
        columns = (
            record.part, record.step, record.phase, record.thread, record.start, record.end,
            record.wait, record.halo, record.cpu,
        )  # fmt: skip
        for clock in clocks:
            for row, cpu in zip(clock.rows, clock.cpu, strict=True):
                # The halo copies' wall seconds, at the same share of a core as the task.
                halo = row[7] * cpu / np.maximum(row[5] - row[4], 1e-12) if len(row) > 7 else 0.0
                row = (*row[:7], halo)
                if isinstance(row[0], np.ndarray):  # a batch: parts, starts, ends are arrays
                    n = row[0].size
                    for column, value in zip(columns, (*row, cpu), strict=True):
                        if isinstance(value, np.ndarray):
                            column.extend(value.tolist())
                        else:
                            column.extend([value] * n)
                else:
                    for column, value in zip(columns, (*row, cpu), strict=True):
                        column.append(value)
        return record


class _ThreadClock:
    """One thread's task rows, and the CPU time of its bursts of consecutive tasks.

    Reading a thread's CPU clock costs about a microsecond, as much as the runtime's whole
    bookkeeping of a task, so it is read at the start and the end of each *burst* (tasks the
    thread ran back to back, without waiting) rather than around each task. A task's ``cpu``
    is its wall time times the share of a core the thread had during its burst: their sum
    over a burst is the burst's CPU time (up to the few microseconds between its tasks), and
    a task whose core was taken by another process is not counted as work.
    """

    def __init__(self) -> None:
        #: ``(part, step, phase, thread, start, end, wait[, halo])`` per task, or per batch of
        #: tasks with ``part``, ``start``, ``end`` (and ``halo``: wall seconds of the task's
        #: own halo copies) as arrays.
        self.rows: list[tuple] = []
        self.cpu: list[float] = []
        self.running = False
        self.cpu0 = self.wall0 = 0.0

    def start(self) -> None:
        if not self.running:
            self.running = True
            self.cpu0 = time.thread_time()
            self.wall0 = time.perf_counter()

    def stop(self) -> None:
        if not self.running:
            return
        self.running = False
        wall = time.perf_counter() - self.wall0
        share = min(1.0, (time.thread_time() - self.cpu0) / wall) if wall > 0 else 1.0
        self.cpu.extend((row[5] - row[4]) * share for row in self.rows[len(self.cpu) :])


@dataclass
class RankResult:
    """What one rank leaves after :func:`run_tasks`."""

    rank: int
    blocks: dict[int, Block]
    tasks: TaskRecord
    work: dict[int, list[int]]
    wall: float
    threads: int
    bytes_sent: int
    messages: int
    time: float
    halo_bytes: dict[tuple[int, int], int]
    #: ``(source rank, bytes, seconds from send posted to receive complete)`` per message
    #: this rank received.
    message_log: list[tuple[int, int, float]] = field(default_factory=list)
    #: Seconds spent in global reductions, and how many there were.
    reduce_seconds: float = 0.0
    reductions: int = 0
    #: The main thread's time outside tasks, seconds: packing, unpacking and copying halos
    #: and emigrants (``halo``); blocked on messages, reductions and workers (``wait``); and
    #: the rest, the runtime's own bookkeeping (``serial``). With ``copied_bytes``, the bytes
    #: those copies moved, they are what the simulator's calibration fits.
    halo_seconds: float = 0.0
    wait_seconds: float = 0.0
    serial_seconds: float = 0.0
    copied_bytes: int = 0
    #: ``time.perf_counter()`` on this rank when its first step started (every rank leaves
    #: the barrier before it together); the wall before it is the run's set-up.
    started: float = 0.0


def run_tasks(
    program: Program,
    node_of: np.ndarray,
    steps: int,
    *,
    comm,
    threads: int = 1,
    reduction: str = "mpi",
    timeout: float = 120.0,
    blocks: dict[int, Block] | None = None,
    exchange: str = "ac",
    start_step: int = 0,
    start_time: float = 0.0,
    on_step: Callable[[int], None] | None = None,
    shm: bool = True,
) -> RankResult:
    """Run ``steps`` steps of ``program`` on the ranks of ``comm``.

    Parameters
    ----------
    program
        The program; every rank builds the same one.
    node_of
        int array ``(P,)``: the rank of each partition (same on every rank).
    steps
        Steps to run.
    comm
        The communicator; it is duplicated, so the caller's traffic never mixes with ours.
    threads
        Threads running tasks on this rank (the node's cores), the calling thread included.
    reduction
        ``"mpi"``, ``"linear"`` or ``"binomial"`` (see :mod:`grapeshot.exchange.collectives`).
    exchange
        How migrants travel between ranks: ``"ac"`` (post everything, receive as it comes) or
        a schedule of :mod:`grapeshot.exchange.mpi_exchange` (``lp``, ``rsn``, ``drsn``, ...).
    timeout
        Seconds without any progress after which the run is aborted with what it waits for.
    blocks
        This rank's partitions' state to resume from (default: ``program.init_block``).
    start_step, start_time
        Where a resumed run starts.
    on_step
        Called on every rank with the step number when this rank's partitions are all done
        with it (progress reporting).
    shm
        Whether ranks of one node write their grid messages straight into each other's
        inboxes, in a shared-memory window (:mod:`grapeshot.runtime.mailboxes`); ``False``
        sends every message through MPI, as between nodes.
    """
    data = comm.Dup()
    coll = comm.Dup()
    try:
        runner = _Runner(
            program, np.asarray(node_of), data, coll, threads, reduction, timeout, blocks, shm
        )
        runner.exchange = exchange
        return runner.run(start_step, start_time, steps, on_step)
    finally:
        data.Free()
        coll.Free()


class _Runner:
    #: How migrants travel (``run_tasks(exchange=...)``).
    exchange = "ac"

    def __init__(self, program, node_of, data, coll, threads, reduction, timeout, blocks, shm):
        self.program = program
        self.data, self.coll = data, coll
        self.rank = data.Get_rank()
        self.size = data.Get_size()
        self.threads = max(1, int(threads))
        self.reduction = reduction
        self.timeout = timeout
        self.boxes = program.boxes()
        self.node_of = node_of
        ndim = len(program.parts_shape)
        self.links = rank_links(self.boxes, node_of, self.rank, _exchanged_offsets(program))
        self.local = [int(p) for p in self.links.local_parts]
        self.position = {p: i for i, p in enumerate(self.local)}
        self.offsets = neighbour_offsets(ndim)
        # Per local partition (ascending), the offsets of every halo it sends, local or not.
        sent: dict[int, list[Offset]] = {}
        for link in [*self.links.local, *itertools.chain(*self.links.send.values())]:
            sent.setdefault(link.src, []).append(link.offset)
        self.outgoing = [(p, tuple(sent[p])) for p in sorted(sent)]
        self.blocks = (
            blocks
            if blocks is not None
            else {p: program.init_block(self.boxes[p]) for p in self.local}
        )
        # Per local partition: (offset, neighbour, the slot this partition has in the
        # neighbour's offset order), for emigrants (programs that migrate only).
        migrates = any(ph.migrate is not None for ph in program.phases)
        self.neighbours = [
            [
                (o, q, self.offsets.index(tuple(-x for x in o)))
                for o in self.offsets
                if (q := self.boxes[p].neighbour(o)) is not None
            ]
            for p in (self.local if migrates else ())
        ]
        self.grid_names = tuple(
            sorted(
                {
                    name
                    for ph in program.phases
                    if ph.exchange is not None and _is_grid(ph)
                    for name in ph.exchange.fields
                }
            )
        )
        #: The batch of every batched phase: its own, or one generated for a plain kernel.
        self.batches: dict[int, Batch] = {
            k: batch
            for k, ph in enumerate(program.phases)
            if (batch := _batch_of(program, ph, self.blocks[self.local[0]])) is not None
        }
        self.batched = set(self.batches)
        batch_names = {n for batch in self.batches.values() for n in batch.fields}
        self.arena = Arena(
            tuple(sorted(set(self.grid_names) | batch_names)), self.links.local_parts, self.blocks
        )
        self.plans: dict[int, GridPlan] = {
            k: grid_plan(self.links, self.boxes, self.arena, ph.exchange.fields, ph.exchange.width)
            for k, ph in enumerate(program.phases)
            if ph.exchange is not None and _is_grid(ph)
        }
        self.rounds = dict.fromkeys(self.plans, 0)
        #: The phases whose tasks copy their own halos, and ``{phase: next phase}`` for those
        #: whose tasks pack the next phase's messages (:meth:`batch_halos`).
        self.fused: set[int] = set()
        self.prepacks: dict[int, int] = {}
        #: The grid exchanges whose messages the phase before packed already.
        self.prepacked: set[int] = set()
        n = len(self.local)
        #: Where grid messages live; between ranks of a node, one shared-memory window.
        self.mail = Mailboxes(data, self.plans, self.arena, self.links, HEADER * 8, shared=shm)
        self.grid_recvs: list = []
        self.nothing = np.zeros(0, dtype=np.uint8)  # the payload of news through the window
        self.start_step = 0
        # What the batches' fused halo copies share (grapeshot.model.task_halos).
        self.ran = np.zeros(n, dtype=np.int64)
        self.halo_ns = np.zeros(n, dtype=np.int64)
        self.last = np.full(1, -1, dtype=np.int64)
        self.halos = {k: self.batch_halos(k) for k in self.batched}
        # With every phase batched (and no graph exchange unpacking into blocks) nothing ever
        # rebinds a block's array: the arena needs no refresh, and a batch's work field holds
        # the counts.
        self.all_batched = len(self.batched) == len(program.phases) and all(
            ph.graph is None for ph in program.phases
        )
        self.work_at = None
        #: With every phase batched and the default ``Program.work`` counting cells: the
        #: counts, the same every step.
        self.work_cells = None
        named = {batch.work for batch in self.batches.values()} - {None}
        if self.all_batched and len(named) == 1:
            w = named.pop()
            bases = np.array([self.arena.base[w][p] for p in self.local], dtype=np.int64)
            self.work_at = (self.arena.flat[w], bases)
        elif self.all_batched and program.work_field is None and type(program).work is Program.work:
            self.work_cells = np.array([np.prod(self.boxes[p].shape) for p in self.local])
        self.graph_plans: dict[int, GraphPlan] = {
            k: graph_plan(graph_targets(ph.graph, self.boxes), node_of, self.rank)
            for k, ph in enumerate(program.phases)
            if ph.graph is not None
        }
        self.sources = self.links.sources
        # Which local partitions (positions) each source rank's message completes a part of.
        self.feeds = {r: np.flatnonzero(self.links.waits_on[j]) for j, r in enumerate(self.sources)}
        self.need_template = self.links.waits_on.sum(axis=0).astype(np.int64)
        self.inbox: list[dict[int, np.ndarray]] = [{} for _ in range(n)]
        self.emigrants: list[dict | None] = [None] * n
        self.values: list[float | None] = [None] * n
        self.work: dict[int, list[int]] = {p: [] for p in self.local}
        #: With ``Batch.work``: the counts of every step, one array per step.
        self.work_rows: list[np.ndarray] = []
        self.clocks = [_ThreadClock() for _ in range(self.threads)]
        self.sends: list = []
        #: The last send of each grid exchange and destination, whose buffer is reused.
        self.grid_sends: dict[tuple[int, int], tuple] = {}
        self.stash: dict[tuple[int, int, int], list[tuple[int, np.ndarray]]] = {}
        self.bytes_sent = 0
        self.messages = 0
        self.custom_halo: dict[tuple[int, int], int] = {}
        self.message_log: list[tuple[int, int, float]] = []
        self.reduce_seconds = 0.0
        self.reductions = 0
        self.halo_seconds = 0.0
        self.wait_seconds = 0.0
        self.copied_bytes = 0
        self.tasks: queue.SimpleQueue = queue.SimpleQueue()
        self.finished: queue.SimpleQueue = queue.SimpleQueue()
        #: One entry per worker's share of a local halo copy done (:meth:`copy_local`).
        self.copied: queue.SimpleQueue = queue.SimpleQueue()
        self.failure: str | None = None
        self.task_fns: dict[int, Callable] = {}
        #: The reduced values of batched phases, per local partition.
        self.batch_values = np.zeros(n)
        self.progress_at = time.perf_counter()
        self.waiting_for = "nothing yet"

    def batch_halos(self, k: int) -> tuple[tuple, tuple]:
        """The ``halos`` tuples of batched phase ``k`` on even and odd rounds
        (:mod:`grapeshot.model.task_halos`; the mailboxes alternate between rounds).

        With one thread, its tasks copy their own halos if the phase has a grid exchange, and
        pack their part of the next phase's messages if that phase has one whose fields the
        batch holds (so that they are current in the arena). With threads, tasks of one phase
        run at once and would race on their neighbours' cells: nothing is fused.
        """
        n = len(self.local)
        if self.threads != 1:
            return no_halos(n), no_halos(n)
        phases = self.program.phases
        header, mail = HEADER * 8, self.mail
        where = (self.links, self.boxes, self.arena)
        nxt = (k + 1) % len(phases)
        ex, nxt_ex = phases[k].exchange, phases[nxt].exchange
        own = packs = None
        if k in self.plans:
            own = fused_halos(*where, ex.fields, ex.width, mail.in_starts[k], header)
        # Packed early only if nothing touches those fields between this phase's kernels and
        # the next phase's send (a graph exchange unpacks into blocks first).
        if (
            nxt != k
            and nxt in self.plans
            and phases[nxt].graph is None
            and set(nxt_ex.fields) <= set(self.batches[k].fields)
        ):
            # Round n of phase k comes before round n of a later phase and before round n + 1
            # of phase 0.
            later = [
                fused_packs(*where, nxt_ex.fields, nxt_ex.width, starts, header)
                for starts in (mail.outgoing_starts(nxt, parity) for parity in (0, 1))
            ]
            if later[0] is not None:
                packs = later if nxt > k else later[::-1]
        result = []
        for parity in (0, 1):
            halos = list(no_halos(n))
            if own is not None:
                halos[0:2] = (self.arena.shared, self.ran)
                halos[2:14] = own
                halos[14:16] = (mail.inbox(k, parity).view(np.float64), self.halo_ns)
                self.fused.add(k)
            if packs is not None:
                halos[0] = self.arena.shared
                halos[15] = self.halo_ns
                halos[16:21] = packs[parity]
                halos[21:23] = (mail.space.view(np.float64), self.last)
                self.prepacks[k] = nxt
            result.append(tuple(halos))
        return result[0], result[1]

    # -- the run -------------------------------------------------------------------------

    def run(self, start_step: int, start_time: float, steps: int, on_step) -> RankResult:
        warm_up(self.program, self.boxes[self.local[0]])
        for flat in self.arena.flat.values():  # compile the copies before the clock
            none = np.zeros(0, dtype=np.int64)
            gather(flat, none, flat[:0].copy())
            scatter(flat[:0].copy(), none, flat[:0].copy())
            copy_within(flat[:0].copy(), none, none)
        for k in self.batched:  # and the batches, on no partition
            self.task_of(k).warm()
        self.start_step = start_step
        self.data.Barrier()
        self.t0 = time.perf_counter()
        # Batches stamp tasks on CLOCK_MONOTONIC, perf_counter's clock on Linux; the offset
        # turns a stamp into seconds since t0 wherever the two differ.
        self.stamp_offset = time.perf_counter() - time.monotonic_ns() * 1e-9 - self.t0
        stop = threading.Event()
        workers = [
            threading.Thread(target=self.worker, args=(t,), daemon=True, name=f"grapeshot-{t}")
            for t in range(1, self.threads)
        ]
        watchdog = threading.Thread(target=self.watch, args=(stop,), daemon=True)
        for t in [*workers, watchdog]:
            t.start()
        try:
            ctx = Context(start_step, start_time)
            for step in range(start_step, start_step + steps):
                for k, phase in enumerate(self.program.phases):
                    self.run_phase(step, k, phase, ctx)
                self.record_work()
                if on_step is not None:
                    on_step(step)
                if step + 1 < start_step + steps:
                    ctx = Context(step + 1, ctx.time + self.program.advance(ctx))
            self.finish_sends()
        finally:
            for _ in workers:
                self.tasks.put(None)
            for t in workers:  # each closes its clock's last burst on the way out
                t.join()
            stop.set()
        wall = time.perf_counter() - self.t0
        self.mail.close()
        if self.work_rows:
            counts = np.stack(self.work_rows)
            for i, p in enumerate(self.local):
                self.work[p].extend(counts[:, i].tolist())
        main_tasks = float(sum(np.sum(row[5] - row[4]) for row in self.clocks[0].rows))
        return RankResult(
            self.rank,
            self.blocks,
            TaskRecord.from_clocks(self.clocks),
            self.work,
            wall,
            self.threads,
            self.bytes_sent,
            self.messages,
            ctx.time + self.program.advance(ctx),
            self.halo_bytes(),
            self.message_log,
            self.reduce_seconds,
            self.reductions,
            self.halo_seconds,
            self.wait_seconds,
            max(0.0, wall - main_tasks - self.halo_seconds - self.wait_seconds),
            self.copied_bytes,
            self.t0,
        )

    def record_work(self) -> None:
        """Keep each local partition's work count of the step just done."""
        if self.work_at is not None:  # every count in one index (Batch.work)
            flat, bases = self.work_at
            self.work_rows.append(flat[bases])
            return
        if self.work_cells is not None:
            self.work_rows.append(self.work_cells)
            return
        for p in self.local:
            self.work[p].append(int(self.program.work(self.blocks[p], self.boxes[p])))

    def run_phase(self, step: int, k: int, phase: Phase, ctx: Context) -> None:
        if phase.graph is not None:
            self.graph_round(step, k, phase)
        start = time.perf_counter() - self.t0
        exchange = phase.exchange
        pending: list[int] = []
        if exchange is not None:
            t = time.perf_counter()
            if k in self.plans:
                self.post_grid_receives(step, k)
                self.send_grid(step, k)
                if k in self.fused:
                    self.ran[:] = 0
            else:
                self.send_custom(step, k, exchange)
            self.halo_seconds += time.perf_counter() - t
            need = self.need_template.copy()
            pending = list(self.sources)
        else:
            need = np.zeros(len(self.local), dtype=np.int64)
        if k in self.batched and (k - 1) % len(self.program.phases) not in self.batched:
            # The phase before ran task by task: a kernel may have replaced an array this
            # batch works on (exchanged fields were brought back by send_grid already).
            for name in self.batches[k].fields:
                self.arena.refresh(self.blocks, name)
        # FIFO: the partitions with all their halos at hand first, in partition order, then
        # those each arriving message completes.
        ready = np.flatnonzero(need == 0)
        task = self.task_of(k)
        nxt = self.prepacks.get(k)
        if nxt is not None:  # the tasks pack the next phase's messages: free their buffer
            self.outbox_free(nxt)
        if self.threads == 1:
            self.run_inline(task, ready, need, pending, step, k, ctx, start)
        else:
            self.run_pooled(task, ready, need, pending, step, k, ctx, start)
        if self.failure is not None:
            self.abort(self.failure)
        if nxt is not None:
            self.prepacked.add(nxt)
        if phase.reduce is not None:
            self.reduce(phase, k, ctx)
        if phase.migrate is not None:
            t = time.perf_counter()
            wait = self.wait_seconds
            self.migrate(step, k, phase)
            # Its receives count as waiting already.
            self.halo_seconds += time.perf_counter() - t - (self.wait_seconds - wait)

    def arrival(
        self, k: int, step: int, need: np.ndarray, pending: list[int], start: float, block=True
    ):
        """Wait for the next halo message of this round; the tasks it makes ready, and the
        seconds since the phase started (``block=False``, grid exchanges only: ``None`` if
        no message is in yet)."""
        self.waiting_for = f"step {step} phase {k}: halos from ranks {pending}"
        if k in self.plans:
            got = self.grid_arrival(step, k, block)
            if got is None:
                return None
            source, raw = got
        else:
            source, raw = self.receive((step, k, HALO))
        pending.remove(source)
        t = time.perf_counter()
        self.take_halo(k, source, raw)
        self.halo_seconds += time.perf_counter() - t
        feeds = self.feeds[source]
        need[feeds] -= 1
        return feeds[need[feeds] == 0], t - self.t0 - start

    def run_inline(self, task, ready, need, pending, step, k, ctx, start) -> None:
        """One thread: run the ready tasks, then wait for the next message, until done."""
        clock = self.clocks[0]
        rows = clock.rows
        waited = 0.0
        while True:
            # Grid messages in already join this call: one compiled call less per message.
            while pending and k in self.plans:
                got = self.arrival(k, step, need, pending, start, block=False)
                if got is None:
                    break
                ready = np.concatenate([ready, got[0]])
            clock.start()
            task(ready, step, ctx, waited, rows, 0)
            clock.stop()
            if not pending:
                return
            ready, waited = self.arrival(k, step, need, pending, start)

    def run_pooled(self, task, ready, need, pending, step, k, ctx, start) -> None:
        """Several threads: workers and this one take tasks from one FIFO queue; this one
        also receives the messages that make more tasks ready."""
        # A batched phase hands out runs of partitions (one compiled call each), a few per
        # thread so that they even out; the others one task at a time.
        chunk = max(1, len(self.local) // (4 * self.threads)) if k in self.batched else 1
        for part in _chunks(ready, chunk):
            self.tasks.put((task, part, step, ctx, 0.0))
        remaining = len(self.local)
        clock = self.clocks[0]
        while remaining:
            try:
                item = self.tasks.get_nowait()
            except queue.Empty:
                item = None
            if item is not None:
                clock.start()
                item[0](item[1], item[2], item[3], item[4], clock.rows, 0)
                remaining -= len(item[1])
                continue
            while True:  # what the workers finished meanwhile
                try:
                    remaining -= self.finished.get_nowait()
                except queue.Empty:
                    break
            if not remaining:
                break
            clock.stop()
            if pending:
                ready, waited = self.arrival(k, step, need, pending, start)
                for part in _chunks(ready, chunk):
                    self.tasks.put((task, part, step, ctx, waited))
            else:
                self.waiting_for = f"step {step} phase {k}: tasks on workers"
                t = time.perf_counter()
                remaining -= self.finished.get()
                self.wait_seconds += time.perf_counter() - t
        clock.stop()

    # -- tasks ---------------------------------------------------------------------------

    def worker(self, thread: int) -> None:
        clock = self.clocks[thread]
        while True:
            try:
                item = self.tasks.get_nowait()
            except queue.Empty:
                clock.stop()
                item = self.tasks.get()
            if item is None:
                clock.stop()
                return
            clock.start()
            item[0](item[1], item[2], item[3], item[4], clock.rows, thread)
            self.finished.put(len(item[1]))

    def task_of(self, k: int) -> Callable:
        """The function that runs phase ``k`` on a list of local partitions (built once).

        ``task(todo, step, ctx, waited, rows, thread)`` runs the partitions at positions
        ``todo`` in order and appends their rows; an exception is kept for the main thread,
        which aborts the run. A batched phase (:class:`~grapeshot.model.program.Batch`) runs
        them all in one compiled call; the others one by one: unpack custom halos, fill the
        walls, run the kernel and its checks, take the emigrants out. Everything a task needs
        is bound here, so it costs a few Python operations besides the app's own calls.
        """
        task = self.task_fns.get(k)
        if task is None:
            task = self.task_fns[k] = self.batch_task(k) if k in self.batched else self.one_task(k)
        return task

    def one_task(self, k: int) -> Callable:
        phase = self.program.phases[k]
        exchange, name = phase.exchange, phase.name
        kernel = phase.kernel if phase.fields is None else phase.call
        boundary = exchange.boundary if exchange is not None else None
        unpack = exchange.unpacker() if exchange is not None and k not in self.plans else None
        emigrate = phase.migrate.emigrate if phase.migrate is not None else None
        check = self.program.check_block
        local, boxes, blocks = self.local, self.boxes, self.blocks
        inboxes, values, emigrants, offsets = self.inbox, self.values, self.emigrants, self.offsets
        perf_counter, t0 = time.perf_counter, self.t0

        def task(todo: list, step: int, ctx: Context, waited: float, rows: list, thread: int):
            for i in todo:
                p = local[i]
                box, block = boxes[p], blocks[p]
                start = perf_counter()
                try:
                    if unpack is not None:
                        inbox = inboxes[i]
                        for slot in sorted(inbox):
                            unpack(block, box, offsets[slot], inbox[slot])
                        inbox.clear()
                    if boundary is not None:
                        boundary(block, box)
                    values[i] = kernel(block, box, ctx)
                    check(block, box, ctx, name)
                    if emigrate is not None:
                        emigrants[i] = emigrate(block, box)
                except BaseException as exc:  # the main thread reports it and aborts the run
                    self.fail(p, step, name, exc)
                end = perf_counter()
                self.progress_at = end
                rows.append((p, step, k, thread, start - t0, end - t0, waited))

        return task

    def batch_task(self, k: int) -> Callable:
        phase = self.program.phases[k]
        batch, name = self.batches[k], phase.name
        arena = self.arena
        arrays = tuple(arena.flat[f] for f in batch.fields)
        bases = np.array(
            [[arena.base[f][p] for p in self.local] for f in batch.fields], dtype=np.int64
        ).reshape(len(batch.fields), len(self.local))
        iparams = iparams_table(batch, self.boxes, self.local, arena)
        run, params_of, values = batch.run, batch.params, self.batch_values
        # Programs that keep the default check_block (no check) pay nothing per task for it.
        check = self.program.check_block
        checked = type(self.program).check_block is not Program.check_block
        # Where each partition's status word is, if the batch keeps one: only the partitions
        # it flags need a check_block call.
        status = (np.zeros(0, dtype=np.int64), np.zeros(len(self.local), dtype=np.int64))
        if batch.status is not None:
            f = batch.fields.index(batch.status)
            status = (arrays[f], bases[f])
        local = np.asarray(self.local, dtype=np.int64)
        boxes, blocks = self.boxes, self.blocks
        by_parity = self.halos[k]
        fused = k in self.fused
        timed = fused or k in self.prepacks  # the tasks make copies: keep their share
        ran, halo_ns = self.ran, self.halo_ns
        params = [None, None]  # (context, its params): one step's calls share them

        def task(todo, step: int, ctx: Context, waited: float, rows: list, thread: int):
            positions = np.asarray(todo, dtype=np.int64)
            stamps = np.zeros(positions.size + 1, dtype=np.int64)
            halos = by_parity[self.parity(step)]
            try:
                if params[0] is not ctx:
                    params[:] = (ctx, params_of(ctx))
                run(arrays, bases, positions, params[1], iparams, values, stamps, halos)
                ok, flagged = batch_verdict(positions, stamps, ran, fused, *status)
                if not ok:
                    raise RuntimeError(
                        f"the batch of phase {name!r} must call "
                        "grapeshot.model.task_halos.task_begins before each partition and "
                        "batch_ends after the last"
                    )
                if checked:
                    for p in local[flagged].tolist():
                        check(blocks[p], boxes[p], ctx, name)
            except BaseException as exc:  # the main thread reports it and aborts the run
                # The task that raised is the last one that began.
                begun = np.flatnonzero(stamps[: positions.size])
                at = (
                    positions[begun[-1]] if begun.size else (positions[0] if positions.size else -1)
                )
                self.fail(int(local[at]) if at >= 0 else -1, step, name, exc)
            self.progress_at = time.perf_counter()
            if positions.size:
                times = stamps * 1e-9 + self.stamp_offset
                row = (local[positions], step, k, thread, times[:-1], times[1:], waited)
                if timed:
                    row = (*row, halo_ns[: positions.size] * 1e-9)
                rows.append(row)

        def warm() -> None:
            """Compile (or load) ``run`` on no partition, before the clock starts."""
            none = np.zeros(0, dtype=np.int64)
            stamps = np.zeros(1, np.int64)
            try:
                run(arrays, bases, none, np.zeros(16), iparams, values, stamps, by_parity[0])
            except NumbaError as exc:  # every rank compiles the same: each stops here
                origin = f"{self.program.origin}: " if self.program.origin else ""
                raise InputError(
                    f"{origin}phase {name!r}",
                    f"numba cannot compile its kernel: {exception_line(exc)}",
                    "a numba kernel of (its fields..., box, params) (docs/program-api.md)",
                ) from None

        task.warm = warm
        return task

    def fail(self, part: int, step: int, name: str, exc: BaseException) -> None:
        """Keep the first failure for the main thread, which aborts the run with it."""
        if self.failure is None:
            if isinstance(exc, SimulationError):
                part = exc.part
            self.failure = failure_text(self.program, part, step, name, exc)

    # -- halos ---------------------------------------------------------------------------

    def send_grid(self, step: int, k: int) -> None:
        plan, arena, mail = self.plans[k], self.arena, self.mail
        if not self.all_batched:
            for name in plan.names:
                arena.refresh(self.blocks, name)
        parity = self.parity(step)
        segments = {r: mail.outgoing(k, parity, r) for r in plan.send}
        if k in self.prepacked:  # the tasks of the phase before packed them
            self.prepacked.discard(k)
        else:
            self.outbox_free(k)
            for r, indices in plan.send.items():
                body = payload(segments[r])
                at = 0
                for name in plan.names:
                    flat = arena.flat[name]
                    idx = indices[name]
                    size = idx.size * flat.itemsize
                    gather(flat, idx, body[at : at + size].view(flat.dtype))
                    at += size + (-size) % 8
        for raw in segments.values():
            raw[: HEADER * 8].view(np.int64)[:] = (step, k, HALO, 0, 0)
            stamp(raw)
        mail.sync()  # the writes into node neighbours' inboxes before the news of them
        for r, raw in segments.items():
            body = self.nothing if r in mail.shared_peers else raw
            self.grid_sends[(k, r)] = (self.data.Isend(body, dest=r, tag=_GRID_TAG + k), raw)
            self.bytes_sent += raw.nbytes
            self.messages += 1
            self.copied_bytes += raw.nbytes
        for name in plan.names:
            flat = arena.flat[name]
            if k not in self.fused:  # else each task copies its own
                self.copy_local(flat, plan.local_src[name], plan.local_dst[name])
            self.copied_bytes += plan.local_src[name].size * flat.itemsize
        self.rounds[k] += 1

    def outbox_free(self, k: int) -> None:
        """Wait until the last round's messages of grid exchange ``k`` have left."""
        for r in self.plans[k].send:
            previous = self.grid_sends.pop((k, r), None)
            if previous is not None:
                previous[0].Wait()

    def copy_local(self, flat: np.ndarray, src: np.ndarray, dst: np.ndarray) -> None:
        """:func:`copy_within`, shared out among this rank's threads.

        With one rank and several threads every halo is local: copied by this thread alone it
        would keep the workers waiting at every exchange for a pass over all the halos.
        """
        if self.threads == 1 or src.size < _SPLIT_COPIES:
            copy_within(flat, src, dst)
            return
        cut = np.linspace(0, src.size, self.threads + 1).astype(np.int64)
        for t in range(1, self.threads):
            piece = (src[cut[t] : cut[t + 1]], dst[cut[t] : cut[t + 1]])
            self.tasks.put((self._copy_piece, [], (flat, *piece), None, 0.0))
        copy_within(flat, src[: cut[1]], dst[: cut[1]])
        for _ in range(1, self.threads):
            self.copied.get()

    def _copy_piece(self, todo, arrays, ctx, waited, rows, thread) -> None:
        """A worker's share of :meth:`copy_local` (the signature of a task)."""
        copy_within(*arrays)
        self.copied.put(None)

    def send_custom(self, step: int, k: int, exchange) -> None:
        # Every buffer of a partition in one call (Exchange.pack_all), then handed out.
        pack_all = exchange.packer_all()
        blocks, boxes, position = self.blocks, self.boxes, self.position
        packed: dict[tuple[int, Offset], np.ndarray] = {}
        for src, offsets in self.outgoing:
            bufs = pack_all(blocks[src], boxes[src], offsets)
            packed.update(zip([(src, o) for o in offsets], bufs, strict=True))
        for link in self.links.local:
            buf = packed[(link.src, link.offset)]
            self.inbox[position[link.dst]][link.slot] = buf
            self.count_halo(link.src, link.dst, buf.nbytes)
        for r, links in self.links.send.items():
            items = []
            for link in links:
                buf = packed[(link.src, link.offset)]
                items.append((link.dst, link.slot, buf))
                self.count_halo(link.src, link.dst, buf.nbytes)
            self.post(r, encode_items(step, k, HALO, items))

    def graph_round(self, step: int, k: int, phase: Phase) -> None:
        """One round of phase ``k``'s graph exchange, before its grid exchange and tasks.

        Packs every buffer of the local partitions (one message per destination rank, local
        buffers handed over in memory), receives one message from each source rank, then
        unpacks each local partition's arrivals in sender order, on this thread.
        """
        graph, plan = phase.graph, self.graph_plans[k]
        blocks, boxes, position = self.blocks, self.boxes, self.position
        arrived: list[list[tuple[int, np.ndarray]]] = [[] for _ in self.local]
        t = time.perf_counter()
        src = -1
        try:
            for src, j, dst in plan.local:
                buf = graph.pack(blocks[src], boxes[src], j)
                arrived[position[dst]].append((src, buf))
                self.count_halo(src, dst, buf.nbytes)
            for r, entries in plan.send.items():
                items = []
                for src, j, dst in entries:
                    buf = graph.pack(blocks[src], boxes[src], j)
                    items.append((dst, src, buf))
                    self.count_halo(src, dst, buf.nbytes)
                raw = encode_items(step, k, GRAPH, items)
                self.copied_bytes += raw.nbytes
                self.post(r, raw)
        except BaseException as exc:
            self.fail(src, step, phase.name, exc)
            self.abort(self.failure)
        self.halo_seconds += time.perf_counter() - t
        pending = list(plan.sources)
        while pending:
            self.waiting_for = f"step {step} phase {phase.name!r}: graph buffers from {pending}"
            source, raw = self.receive((step, k, GRAPH))
            pending.remove(source)
            self.copied_bytes += raw.nbytes
            for dst, sender, buf in decode_items(raw):
                arrived[position[dst]].append((sender, buf))
        t = time.perf_counter()
        p = -1
        try:
            for i, p in enumerate(self.local):
                got = arrived[i]
                got.sort(key=_sender)  # stable: one sender's buffers stay in target order
                graph.unpack(blocks[p], boxes[p], got)
        except BaseException as exc:
            self.fail(p, step, phase.name, exc)
            self.abort(self.failure)
        self.halo_seconds += time.perf_counter() - t
        self.progress_at = time.perf_counter()

    def count_halo(self, src: int, dst: int, nbytes: int) -> None:
        self.custom_halo[(src, dst)] = self.custom_halo.get((src, dst), 0) + nbytes
        self.copied_bytes += nbytes

    def take_halo(self, k: int, source: int, raw: np.ndarray) -> None:
        self.copied_bytes += raw.nbytes
        plan = self.plans.get(k)
        if plan is None:
            position = self.position
            for part, slot, buf in decode_items(raw):
                self.inbox[position[part]][slot] = buf
            return
        if k in self.fused:
            return  # its pieces are copied by the tasks they complete
        body = payload(raw)
        at = 0
        for name in plan.names:
            flat = self.arena.flat[name]
            idx = plan.recv[source][name]
            size = idx.size * flat.itemsize
            scatter(body[at : at + size].view(flat.dtype), idx, flat)
            at += size + (-size) % 8

    def halo_bytes(self) -> dict[tuple[int, int], int]:
        total = dict(self.custom_halo)
        for k, plan in self.plans.items():
            for pair, nbytes in plan.pair_bytes.items():
                total[pair] = total.get(pair, 0) + nbytes * self.rounds[k]
        return total

    # -- reductions and migration --------------------------------------------------------

    def reduce(self, phase: Phase, k: int, ctx: Context) -> None:
        values = self.batch_values.tolist() if k in self.batched else self.values
        local = {p: values[i] for i, p in enumerate(self.local)}
        t0 = time.perf_counter()
        self.waiting_for = f"step {ctx.step} phase {phase.name!r}: the global reduction"
        value = ordered_allreduce(
            local,
            phase.reduce.combine,
            comm=self.coll,
            algorithm=self.reduction,
            op=phase.reduce.op,
        )
        self.reduce_seconds += time.perf_counter() - t0
        self.wait_seconds += time.perf_counter() - t0
        self.reductions += 1
        self.progress_at = time.perf_counter()
        ctx.values[phase.reduce.name] = value

    def migrate(self, step: int, k: int, phase: Phase) -> None:
        arrived: list[dict[int, np.ndarray]] = [{} for _ in self.local]
        outgoing: dict[int, list] = {r: [] for r in self.links.send}
        node_of, position = self.node_of, self.position
        for i, leaving in enumerate(self.emigrants):
            for offset, q, slot in self.neighbours[i]:
                buf = leaving.get(offset)
                if buf is None:
                    continue
                r = int(node_of[q])
                if r == self.rank:
                    arrived[position[q]][slot] = buf
                else:
                    outgoing[r].append((q, slot, buf))
            self.emigrants[i] = None
        if self.exchange != "ac":  # --exchange: a schedule of grapeshot.exchange instead
            self.exchange_migrants(step, k, outgoing, arrived)
            outgoing = {}
        for r, items in outgoing.items():
            raw = encode_items(step, k, MIGRANTS, items)
            self.post(r, raw)
            self.copied_bytes += raw.nbytes
        pending = list(self.sources) if self.exchange == "ac" else []
        while pending:
            self.waiting_for = f"step {step} phase {phase.name!r}: emigrants from {pending}"
            source, raw = self.receive((step, k, MIGRANTS))
            pending.remove(source)
            self.copied_bytes += raw.nbytes
            for part, slot, buf in decode_items(raw):
                arrived[position[part]][slot] = buf
        immigrate = phase.migrate.immigrate
        for i, p in enumerate(self.local):
            got = arrived[i]
            immigrate(self.blocks[p], self.boxes[p], [got[s] for s in sorted(got)])

    def exchange_migrants(self, step: int, k: int, outgoing: dict, arrived: list) -> None:
        """Migrants of ``(step, k)`` through one planned exchange (``--exchange``)."""
        from grapeshot.exchange.mpi_exchange import exchange_once

        sends = {}
        for r, items in outgoing.items():
            raw = encode_items(step, k, MIGRANTS, items)
            stamp(raw)
            sends[r] = raw
            self.bytes_sent += raw.nbytes
            self.messages += 1
            self.copied_bytes += raw.nbytes
        self.waiting_for = f"step {step}: the {self.exchange} exchange of migrants"
        t = time.perf_counter()
        got = exchange_once(sends, comm=self.coll, algorithm=self.exchange, seed=step)
        self.wait_seconds += time.perf_counter() - t
        self.progress_at = time.perf_counter()
        for raw in got.values():
            self.copied_bytes += raw.nbytes
            for part, slot, buf in decode_items(raw):
                arrived[self.position[part]][slot] = buf

    # -- messages ------------------------------------------------------------------------

    def parity(self, step: int) -> int:
        """Which of a grid exchange's two inboxes (and halos tuples) serves ``step``: every
        phase runs once a step, so its rounds since this run's start alternate."""
        return (step - self.start_step) % 2

    def post_grid_receives(self, step: int, k: int) -> None:
        """Post the receives of grid exchange ``k``'s messages, each where the plan puts it
        (from a node neighbour, only the news: its message is in the inbox already then).

        MPI matches messages of one source and tag in the order they were sent, so these
        receive this round's, whatever later rounds a fast neighbour has sent already.
        """
        parity = self.parity(step)
        mail = self.mail
        self.grid_recvs = [
            self.data.Irecv(
                self.nothing if r in mail.shared_peers else mail.received(k, parity, r),
                source=r,
                tag=_GRID_TAG + k,
            )
            for r in self.sources
        ]

    def grid_arrival(self, step: int, k: int, block: bool = True) -> tuple[int, np.ndarray] | None:
        """Wait for the next message of grid exchange ``k``; its source and its bytes
        (``block=False``: ``None`` if none is in)."""
        from mpi4py import MPI

        if block:
            t = time.perf_counter()
            j = MPI.Request.Waitany(self.grid_recvs)
            self.wait_seconds += time.perf_counter() - t
        else:
            j, done = MPI.Request.Testany(self.grid_recvs)
            if not done or j == MPI.UNDEFINED:
                return None
        self.grid_recvs[j] = MPI.REQUEST_NULL
        source = self.sources[j]
        if source in self.mail.shared_peers:
            self.mail.sync()
        raw = self.mail.received(k, self.parity(step), source)
        header = read_header(raw)
        self.message_log.append((source, raw.nbytes, (time.time_ns() - header.sent_ns) * 1e-9))
        self.progress_at = time.perf_counter()
        if header.round != (step, k, HALO):
            raise RuntimeError(
                f"grid message from rank {source} is of round {header.round}, expected "
                f"{(step, k, HALO)}: the ranks' plans disagree"
            )
        return source, raw

    def post(self, dest: int, raw: np.ndarray) -> None:
        stamp(raw)
        self.sends.append((self.data.Isend(raw, dest=dest, tag=_DATA_TAG), raw))
        self.bytes_sent += raw.nbytes
        self.messages += 1

    def receive(self, round_: tuple[int, int, int]) -> tuple[int, np.ndarray]:
        """The next message of ``round_`` from any rank; other rounds' messages are kept."""
        from mpi4py import MPI

        kept = self.stash.get(round_)
        if kept:
            return kept.pop(0)
        status = MPI.Status()
        t = time.perf_counter()
        try:
            return self.probe_round(round_, status)
        finally:
            self.wait_seconds += time.perf_counter() - t

    def probe_round(self, round_: tuple[int, int, int], status) -> tuple[int, np.ndarray]:
        from mpi4py import MPI

        while True:
            self.data.Probe(source=MPI.ANY_SOURCE, tag=_DATA_TAG, status=status)
            source = status.Get_source()
            count = status.Get_count(MPI.BYTE)
            raw = np.empty(count, dtype=np.uint8)
            self.data.Recv(raw, source=source, tag=_DATA_TAG)
            header = read_header(raw)
            # Send posted to receive complete, on the system clock (shared by the ranks of a
            # node, NTP-aligned across nodes): what the simulator's network is calibrated on.
            self.message_log.append((source, raw.nbytes, (time.time_ns() - header.sent_ns) * 1e-9))
            self.progress_at = time.perf_counter()
            if header.round == round_:
                self.prune_sends()
                return source, raw
            self.stash.setdefault(header.round, []).append((source, raw))

    def prune_sends(self) -> None:
        from mpi4py import MPI

        if len(self.sends) < 16:
            return
        done = MPI.Request.Testsome([r for r, _ in self.sends]) or []
        if done:
            finished = set(done)
            self.sends = [s for i, s in enumerate(self.sends) if i not in finished]

    def finish_sends(self) -> None:
        from mpi4py import MPI

        requests = [r for r, _ in self.sends] + [r for r, _ in self.grid_sends.values()]
        if requests:
            MPI.Request.Waitall(requests)
        self.sends.clear()
        self.grid_sends.clear()

    # -- failures ------------------------------------------------------------------------

    def watch(self, stop: threading.Event) -> None:
        """Abort the run when nothing has progressed for ``timeout`` seconds."""
        period = min(1.0, self.timeout / 4)
        while not stop.wait(period):
            if time.perf_counter() - self.progress_at > self.timeout:
                self.abort(f"no progress for {self.timeout:g} s; waiting for {self.waiting_for}")

    def abort(self, message: str) -> None:
        abort_run(self.data, f"rank {self.rank}: {message}")


def abort_run(comm, message: str) -> None:
    """End every rank of the job, exit status 2, after one line on standard error.

    ``MPI_Abort`` is what ends every rank under any launcher; MPICH then prints a line of its
    own saying the same, which would make the error two lines: it goes to ``/dev/null``.
    """
    sys.stderr.write(f"grapeshot: error: {message}\n")
    sys.stderr.flush()
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
    comm.Abort(2)


def _batchable(phase: Phase) -> bool:
    """Whether the runtime may run the phase's batch: no custom packers, no migration."""
    return phase.migrate is None and (phase.exchange is None or _is_grid(phase))


def _batch_of(program: Program, phase: Phase, block: Block) -> Batch | None:
    """The batch the runtime runs for ``phase``: its own, one generated around its plain numba
    kernel (whose walls the kernel fills itself: a Python ``boundary`` needs the per-task
    path), or ``None``."""
    if not _batchable(phase):
        return None
    if phase.batch is not None:
        return phase.batch
    if phase.fields is None or not is_compiled(phase.kernel):
        return None
    if phase.exchange is not None and phase.exchange.boundary is not None:
        return None
    work = program.work_field
    if work not in phase.fields or type(program).work is not Program.work:
        work = None
    ndims = tuple(np.ndim(block[f]) for f in phase.fields)
    return plain_batch(phase, len(program.parts_shape), ndims, work)


def _exchanged_offsets(program: Program) -> tuple[Offset, ...]:
    """The neighbours a rank's links cover: the faces alone when no halo needs a corner."""
    ndim = len(program.parts_shape)
    return neighbour_offsets(ndim) if needs_corners(program) else face_offsets(ndim)


def _sender(item: tuple[int, np.ndarray]) -> int:
    return item[0]


def _chunks(items: list, size: int) -> list[list]:
    """``items`` dealt round-robin into runs of at most ``size``, each in ``items`` order.

    Dealt, not cut in slices: neighbouring partitions carry similar loads (the water of a dam
    break is in one corner), so slices would give one thread the heavy run and leave the
    others waiting at the end of the phase.
    """
    n = -(-len(items) // size)
    return [items[j::n] for j in range(n)]


def _is_grid(phase: Phase) -> bool:
    """Whether the phase's exchange uses the planned grid packers (no custom pack/unpack)."""
    ex = phase.exchange
    return ex is not None and ex.pack is None and ex.unpack is None
