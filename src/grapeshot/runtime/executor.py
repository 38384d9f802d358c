"""The task runtime: a placed program on MPI ranks, one rank per node, threads per rank.

Each rank owns the partitions its placement gives it. The main thread owns MPI (so
``MPI_THREAD_FUNNELED`` is enough): it files arriving buffers, packs and sends halos, does the
global reductions, and feeds ready tasks, first in first out, to a pool of worker threads that
run the kernels (numba, without the GIL). A task runs as soon as its inputs are in, while the
messages of other tasks are still in flight: that is what hides communication behind
computation. Buffers between partitions of the same rank are handed over in memory.

The dependency logic is :class:`~grapeshot.runtime.schedule.RankSchedule` (pure); this module
only carries out its actions.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from grapeshot.exchange.collectives import ordered_allreduce
from grapeshot.model.program import Block, Context, Program, neighbour_offsets
from grapeshot.runtime.schedule import Prep, RankSchedule, Reduce, Run
from grapeshot.runtime.warmup import warm_up
from grapeshot.runtime.wire import HALO, MIGRANTS, Envelope, decode, encode

_DATA_TAG = 11
#: Seconds the main thread waits for a worker when all of them are busy, and naps between
#: network polls when some are idle.
_SATURATED_WAIT = 0.05
_IDLE_NAP = 2e-4


@dataclass
class TaskRecord:
    """Per-task measurements of one rank.

    ``start``/``end`` are wall seconds since the run's start (for timelines); ``cpu`` is the
    thread CPU seconds the task used, which excludes the time its core was taken by another
    process or thread (what busy time adds up); ``wait`` is the time between the task's own
    inputs being ready and its last halo arriving.
    """

    part: list[int] = field(default_factory=list)
    step: list[int] = field(default_factory=list)
    phase: list[int] = field(default_factory=list)
    thread: list[int] = field(default_factory=list)
    start: list[float] = field(default_factory=list)
    end: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    wait: list[float] = field(default_factory=list)

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
        }


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


@dataclass
class _Done:
    run: Run
    value: float | None
    emigrants: dict | None
    start: float
    end: float
    cpu: float
    thread: int
    waited: float
    error: str | None = None


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
    start_step: int = 0,
    start_time: float = 0.0,
    on_step: Callable[[int], None] | None = None,
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
        Worker threads on this rank (the node's cores).
    reduction
        ``"mpi"``, ``"linear"`` or ``"binomial"`` (see :mod:`grapeshot.exchange.collectives`).
    timeout
        Seconds without any progress after which the run is aborted with what it waits for.
    blocks
        This rank's partitions' state to resume from (default: ``program.init_block``).
    start_step, start_time
        Where a resumed run starts.
    on_step
        Called on every rank with the step number when this rank's partitions are all done
        with it (progress reporting).
    """
    data = comm.Dup()
    coll = comm.Dup()
    try:
        return _Runner(
            program,
            np.asarray(node_of),
            data,
            coll,
            threads,
            reduction,
            timeout,
            blocks,
            start_step,
            start_time,
            steps,
            on_step,
        ).run()
    finally:
        data.Free()
        coll.Free()


class _Runner:
    def __init__(
        self,
        program,
        node_of,
        data,
        coll,
        threads,
        reduction,
        timeout,
        blocks,
        start_step,
        start_time,
        steps,
        on_step,
    ) -> None:
        self.program = program
        self.data, self.coll = data, coll
        self.rank = data.Get_rank()
        self.size = data.Get_size()
        self.threads = max(1, int(threads))
        self.reduction = reduction
        self.timeout = timeout
        self.on_step = on_step
        self.boxes = program.boxes()
        self.node_of = node_of
        self.local = [int(p) for p in np.flatnonzero(node_of == self.rank)]
        self.offsets = neighbour_offsets(len(program.parts_shape))
        self.slot_of = {o: i for i, o in enumerate(self.offsets)}
        self.blocks = (
            blocks
            if blocks is not None
            else {p: program.init_block(self.boxes[p]) for p in self.local}
        )
        # Plan once: per local partition, (offset, neighbour, the slot this partition has in
        # the neighbour's offset order).
        self.neighbours = {
            p: [
                (o, q, self.slot_of[tuple(-x for x in o)])
                for o in self.offsets
                if (q := self.boxes[p].neighbour(o)) is not None
            ]
            for p in self.local
        }
        self.schedule = RankSchedule(
            program.phases,
            {p: len(nb) for p, nb in self.neighbours.items()},
            start_step=start_step,
            steps=steps,
        )
        self.start_step, self.steps = start_step, steps
        self.halo: dict[tuple[int, int, int], dict[int, np.ndarray]] = {}
        self.migrants: dict[tuple[int, int, int], dict[int, np.ndarray | None]] = {}
        self.values: dict[tuple[int, int], dict[int, float]] = {}
        self.contexts: dict[int, Context] = {start_step: Context(start_step, start_time)}
        self.prepped_at: dict[tuple[int, int, int], float] = {}
        self.work: dict[int, list[int]] = {p: [] for p in self.local}
        self.record = TaskRecord()
        self.sends: list = []
        self.bytes_sent = 0
        self.messages = 0
        self.halo_bytes: dict[tuple[int, int], int] = {}
        self.message_log: list[tuple[int, int, float]] = []
        self.outbox: dict[int, list[tuple[Envelope, np.ndarray | None]]] = {}
        self.reduce_seconds = 0.0
        self.reductions = 0
        self.done_q: queue.SimpleQueue[_Done] = queue.SimpleQueue()
        self.in_flight = 0
        self.steps_done: dict[int, int] = {}
        self.thread_ids: dict[int, int] = {}
        self.lock = threading.Lock()

    # -- context -------------------------------------------------------------------------

    def context(self, step: int) -> Context:
        # Every reduction of step - 1 is known once a task of ``step`` may run.
        while step not in self.contexts:
            last = max(self.contexts)
            prev = self.contexts[last]
            self.contexts[last + 1] = Context(last + 1, prev.time + self.program.advance(prev))
        return self.contexts[step]

    # -- main loop -----------------------------------------------------------------------

    def run(self) -> RankResult:
        warm_up(self.program, self.boxes[self.local[0]])
        self.data.Barrier()
        self.t0 = time.perf_counter()
        with ThreadPoolExecutor(self.threads, thread_name_prefix="grapeshot") as pool:
            self.pool = pool
            self.handle(self.schedule.begin())
            last_progress = time.perf_counter()
            while not self.schedule.done or self.in_flight:
                progressed = self.dispatch()
                progressed |= self.poll_network()
                self.flush()
                saturated = self.in_flight >= self.threads
                progressed |= self.collect(block=saturated or not progressed)
                now = time.perf_counter()
                if progressed:
                    last_progress = now
                elif now - last_progress > self.timeout:
                    self.abort(f"no progress for {self.timeout:g} s; {self.waiting()}")
            self.flush()
            self.finish_sends()
        end_step = self.start_step + self.steps
        final = self.context(end_step - 1)
        wall = time.perf_counter() - self.t0
        return RankResult(
            self.rank,
            self.blocks,
            self.record,
            self.work,
            wall,
            self.threads,
            self.bytes_sent,
            self.messages,
            final.time + self.program.advance(final),
            self.halo_bytes,
            self.message_log,
            self.reduce_seconds,
            self.reductions,
        )

    def waiting(self) -> str:
        s = self.schedule
        parts = [
            f"partition {p} at step {s.cursor[p][0]} phase {s.cursor[p][1]}"
            for p in self.local
            if p not in s.finished
        ][:4]
        return "waiting: " + ("; ".join(parts) or "for other ranks")

    def abort(self, message: str) -> None:
        sys.stderr.write(f"grapeshot: error: rank {self.rank}: {message}\n")
        sys.stderr.flush()
        self.data.Abort(3)

    # -- actions -------------------------------------------------------------------------

    def handle(self, actions) -> None:
        pending = list(actions)
        while pending:
            action = pending.pop(0)
            if isinstance(action, Prep):
                pending += self.prep(action)
            elif isinstance(action, Reduce):
                pending += self.reduce(action)

    def prep(self, prep: Prep) -> list:
        p, box, block = prep.part, self.boxes[prep.part], self.blocks[prep.part]
        if prep.immigrate:
            arrived = self.migrants.pop((p, prep.step, prep.phase), {})
            buffers = [arrived[i] for i in sorted(arrived) if arrived[i] is not None]
            prev_phase = self.program.phases[prep.phase - 1 if prep.phase else -1]
            prev_phase.migrate.immigrate(block, box, buffers)
        if prep.record_work_of is not None:
            self.work[p].append(int(self.program.work(block, box)))
            self.step_finished(prep.record_work_of)
        actions: list = []
        if prep.exchange:
            pack = self.program.phases[prep.phase].exchange.packer()
            for offset, q, slot in self.neighbours[p]:
                payload = pack(block, box, offset)
                env = Envelope(HALO, prep.step, prep.phase, q, slot, True)
                self.halo_bytes[(p, q)] = self.halo_bytes.get((p, q), 0) + payload.nbytes
                actions += self.deliver(env, payload)
        self.prepped_at[(p, prep.step, prep.phase)] = time.perf_counter() - self.t0
        return actions

    def step_finished(self, step: int) -> None:
        count = self.steps_done.get(step, 0) + 1
        self.steps_done[step] = count
        if count == len(self.local):
            del self.steps_done[step]
            if self.on_step is not None:
                self.on_step(step)

    def deliver(self, env: Envelope, payload: np.ndarray | None) -> list:
        """Hand a buffer to a local partition, or send it to the partition's rank."""
        dest = int(self.node_of[env.part])
        if dest == self.rank:
            return self.file(env, payload)
        # Batched per destination until the end of this turn of the main loop (flush).
        self.outbox.setdefault(dest, []).append((env, payload))
        return []

    def flush(self) -> None:
        """Send every batched buffer: one MPI message per destination rank."""
        if not self.outbox:
            return
        sent_ns = time.time_ns()
        for dest, items in self.outbox.items():
            raw = encode(items, sent_ns)
            self.sends.append((self.data.Isend(raw, dest=dest, tag=_DATA_TAG), raw))
            self.bytes_sent += raw.nbytes
            self.messages += 1
        self.outbox.clear()

    def file(self, env: Envelope, payload: np.ndarray | None) -> list:
        key = (env.part, env.step, env.phase)
        if env.kind == HALO:
            self.halo.setdefault(key, {})[env.slot] = payload
            return self.schedule.halo_arrived(*key)
        self.migrants.setdefault(key, {})[env.slot] = payload
        return self.schedule.migrants_arrived(*key)

    def reduce(self, action: Reduce) -> list:
        self.flush()  # other ranks may need these to reach the collective
        phase = self.program.phases[action.phase]
        local = self.values.pop((action.step, action.phase), {})
        t0 = time.perf_counter()
        value = ordered_allreduce(
            local,
            phase.reduce.combine,
            comm=self.coll,
            algorithm=self.reduction,
            op=phase.reduce.op,
        )
        self.reduce_seconds += time.perf_counter() - t0
        self.reductions += 1
        self.context(action.step).values[phase.reduce.name] = value
        return self.schedule.reduction_done(action.step, action.phase)

    # -- workers -------------------------------------------------------------------------

    def dispatch(self) -> bool:
        progressed = False
        while self.in_flight < self.threads:
            run = self.schedule.next_ready()
            if run is None:
                break
            key = (run.part, run.step, run.phase)
            waited = time.perf_counter() - self.t0 - self.prepped_at.pop(key, 0.0)
            halo = self.halo.pop(key, {})
            self.in_flight += 1
            self.pool.submit(self.work_on, run, halo, self.context(run.step), waited)
            progressed = True
        return progressed

    def work_on(self, run: Run, halo: dict[int, np.ndarray], ctx: Context, waited: float):
        phase = self.program.phases[run.phase]
        box, block = self.boxes[run.part], self.blocks[run.part]
        ident = threading.get_ident()
        with self.lock:
            thread = self.thread_ids.setdefault(ident, len(self.thread_ids))
        start = time.perf_counter() - self.t0
        cpu = time.thread_time()
        try:
            if phase.exchange is not None:
                unpack = phase.exchange.unpacker()
                for slot in sorted(halo):
                    unpack(block, box, self.offsets[slot], halo[slot])
                if phase.exchange.boundary is not None:
                    phase.exchange.boundary(block, box)
            value = phase.kernel(block, box, ctx)
            self.program.check_block(block, box, ctx, phase.name)
            emigrants = phase.migrate.emigrate(block, box) if phase.migrate else None
            end = time.perf_counter() - self.t0
            cpu = time.thread_time() - cpu
            self.done_q.put(_Done(run, value, emigrants, start, end, cpu, thread, waited))
        except BaseException as exc:  # reported by the main thread, which aborts the run
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            self.done_q.put(_Done(run, None, None, start, start, 0.0, thread, waited, detail))

    def collect(self, *, block: bool) -> bool:
        progressed = False
        while True:
            # The cores belong to the kernels: with every worker busy, nothing this thread
            # could receive would start sooner, so sleep until a worker is done; with some
            # busy, nap briefly between polls of the network; with none busy, the cores are
            # idle and waiting on a message: poll again at once.
            timeout = None
            if block and not progressed and self.in_flight:
                timeout = _SATURATED_WAIT if self.in_flight >= self.threads else _IDLE_NAP
            try:
                done = self.done_q.get(timeout=timeout) if timeout else self.done_q.get_nowait()
            except queue.Empty:
                return progressed
            progressed = True
            self.in_flight -= 1
            run = done.run
            if done.error is not None:
                self.abort(
                    f"partition {run.part}, step {run.step}, phase "
                    f"{self.program.phases[run.phase].name!r} failed: {done.error}"
                )
            rec = self.record
            rec.part.append(run.part)
            rec.step.append(run.step)
            rec.phase.append(run.phase)
            rec.thread.append(done.thread)
            rec.start.append(done.start)
            rec.end.append(done.end)
            rec.cpu.append(done.cpu)
            rec.wait.append(done.waited)
            phase = self.program.phases[run.phase]
            if phase.reduce is not None:
                self.values.setdefault((run.step, run.phase), {})[run.part] = done.value
            actions: list = []
            if done.emigrants is not None:
                nxt = (run.step, run.phase + 1)
                if run.phase + 1 == len(self.program.phases):
                    nxt = (run.step + 1, 0)
                for offset, q, slot in self.neighbours[run.part]:
                    payload = done.emigrants.get(offset)
                    env = Envelope(MIGRANTS, nxt[0], nxt[1], q, slot, payload is not None)
                    actions += self.deliver(env, payload)
            actions += self.schedule.task_done(run)
            self.handle(actions)

    # -- network -------------------------------------------------------------------------

    def poll_network(self) -> bool:
        from mpi4py import MPI

        if self.size == 1:
            return False
        progressed = False
        status = MPI.Status()
        while self.data.Iprobe(source=MPI.ANY_SOURCE, tag=_DATA_TAG, status=status):
            raw = np.empty(status.Get_count(MPI.BYTE), dtype=np.uint8)
            source = status.Get_source()
            self.data.Recv(raw, source=source, tag=_DATA_TAG)
            items = decode(raw)
            # Send posted to receive complete, on the system clock (shared by the ranks of a
            # node, NTP-aligned across nodes): what the simulator's network is calibrated on.
            seconds = (time.time_ns() - items[0][0].sent_ns) * 1e-9
            self.message_log.append((source, raw.nbytes, seconds))
            for env, payload in items:
                self.handle(self.file(env, payload))
            progressed = True
        if self.sends:
            self.finish_sends(wait=False)
        return progressed

    def finish_sends(self, wait: bool = True) -> None:
        from mpi4py import MPI

        if not self.sends:
            return
        requests = [r for r, _ in self.sends]
        if wait:
            MPI.Request.Waitall(requests)
            self.sends.clear()
            return
        done = MPI.Request.Testsome(requests) or []
        if done:
            finished = set(done)
            self.sends = [s for i, s in enumerate(self.sends) if i not in finished]
