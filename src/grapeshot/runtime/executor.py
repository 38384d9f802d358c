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
is about to read or has just written, and count as its work. The messages the tasks packed
leave as soon as the phase's last task ran: from its compiled call where they all go to node
neighbours (:attr:`Fusion.tells <grapeshot.runtime.fusion.Fusion.tells>`), else before the
rank's own bookkeeping between the phases (:meth:`RankRunner._packed`).

Grid messages land where the plan puts them (:mod:`grapeshot.runtime.mailboxes`), in one of
two inboxes used on alternate rounds: from other nodes by MPI receives posted before the
phase's sends; between ranks of one node the inboxes are a shared-memory window that the
sender writes straight into, the last word of the header (its news,
:mod:`grapeshot.model.news`) telling that the message is whole, with no MPI message. Where a
fused phase's messages all come from node neighbours, its tasks wait for them themselves and
the phase is one compiled call (:attr:`Fusion.hears
<grapeshot.runtime.fusion.Fusion.hears>`). Where that holds of every phase, and nothing
between phases needs Python (no reduction, migration or check), a rank runs several steps'
phases in one compiled call (:mod:`grapeshot.runtime.compiled_steps`), as many as every rank
agreed at the step's end; else it runs phase by phase (:meth:`RankRunner.run_phase`).

Tasks run on the calling (main) thread and, with ``threads > 1``, on ``threads - 1`` worker
threads that take them (or runs of them, for batches) from the same FIFO queue; kernels and
batches are numba functions that release the GIL. MPI is called from the main thread only.
Waiting on a message is a blocking MPI call that releases the GIL; a watchdog thread aborts
the run if nothing progresses for ``timeout`` seconds. Results are bitwise those of the serial
executor: every halo lands in its own ghost cells whatever the arrival order, unpackers see
their buffers in neighbour order, reductions combine in partition order.

The runner is put together from parts with one job each, every one built complete before step
0: the plan (:mod:`~grapeshot.runtime.rank_plan`, what is known before step 0, and
:mod:`~grapeshot.runtime.fusion`, which tasks copy their own halos), the messages and
mailboxes (:mod:`~grapeshot.runtime.messages`, :mod:`~grapeshot.runtime.mailboxes`), the halo
exchanges (:mod:`~grapeshot.runtime.halos`), the ready queue and threads
(:mod:`~grapeshot.runtime.dispatch`), the task functions (:mod:`~grapeshot.runtime.tasks`),
reductions (:mod:`~grapeshot.runtime.reductions`), migration
(:mod:`~grapeshot.runtime.migration`), and the records (:mod:`~grapeshot.runtime.timeline`,
:mod:`~grapeshot.runtime.results`), with progress and failures in
:mod:`~grapeshot.runtime.watch`. :class:`RankRunner` only wires them and runs the steps.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

import numpy as np
from numba.core.event import install_listener

from grapeshot.model.errors import GrapeshotError
from grapeshot.model.news import NEWS, first_news, news_of, publish
from grapeshot.model.program import Block, Context, Phase, Program
from grapeshot.model.task_halos import no_halos, pack_all
from grapeshot.runtime.agreement import agreed
from grapeshot.runtime.compile_clock import CompileClock
from grapeshot.runtime.compiled_steps import CompiledSteps
from grapeshot.runtime.copies import copy_within, gather, scatter
from grapeshot.runtime.dispatch import Dispatch
from grapeshot.runtime.fusion import Fusion
from grapeshot.runtime.halos import Halos
from grapeshot.runtime.mailboxes import Mailboxes
from grapeshot.runtime.messages import Messenger
from grapeshot.runtime.migration import Migrator
from grapeshot.runtime.rank_plan import RankPlan
from grapeshot.runtime.reductions import Reducer
from grapeshot.runtime.results import RankResult, Tally, WorkLog
from grapeshot.runtime.tasks import PartSlots, PhaseTasks
from grapeshot.runtime.timeline import RunClock, TaskRows
from grapeshot.runtime.warmup import warm_up
from grapeshot.runtime.watch import Watch
from grapeshot.runtime.wire import HEADER

if TYPE_CHECKING:
    from mpi4py import MPI

    from grapeshot.runtime.checkpoint import Boundary, Decision

__all__ = ["RankRunner", "run_tasks"]

#: ``rebalance(step, result of the segment before) -> (placement, this rank's blocks) | None``.
Rebalance = Callable[[int, RankResult], "tuple[np.ndarray, dict[int, Block]] | None"]
#: A run resumed: ``(step, simulated time, this rank's blocks)``.
Start = tuple[int, float, "dict[int, Block]"]


def run_tasks(
    program: Program,
    node_of: np.ndarray,
    steps: int,
    *,
    comm: MPI.Intracomm,
    threads: int = 1,
    reduction: str = "mpi",
    timeout: float = 120.0,
    exchange: str = "ac",
    on_step: Callable[[int], None] | None = None,
    shm: bool = True,
    cuts: Sequence[int] = (),
    rebalance: Rebalance | None = None,
    start: Start | None = None,
    boundary: Boundary | None = None,
) -> list[RankResult]:
    """Run ``steps`` steps of ``program`` on the ranks of ``comm``; one result per segment.

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
    on_step
        Called on every rank with the step number when this rank's partitions are all done
        with it (progress reporting).
    shm
        Whether ranks of one node write their grid messages straight into each other's
        inboxes, in a shared-memory window (:mod:`grapeshot.runtime.mailboxes`); ``False``
        sends every message through MPI, as between nodes.
    cuts, rebalance
        Rebalance in the run: before each step of ``cuts`` every rank calls
        ``rebalance(step, result of the segment before)``, which returns the new placement
        and this rank's blocks under it (their state moved there), or ``None``; the runner
        re-plans in place and goes on (:meth:`RankRunner.run_segments`).
    start
        Resume a run (a restart): ``(step, simulated time, this rank's blocks under
        node_of)``; ``steps`` are then the steps run from ``step``. Default: step 0, time 0,
        ``program.init_block``.
    boundary
        Asked after every step (:class:`~grapeshot.runtime.checkpoint.Boundary`, collective)
        whether to end a segment there, to write a checkpoint or to stop the run.
    """
    data = comm.Dup()
    coll = comm.Dup()
    step0, time0, blocks = (0, 0.0, None) if start is None else start
    try:
        runner = RankRunner(
            program,
            np.asarray(node_of),
            data,
            coll,
            threads=threads,
            reduction=reduction,
            exchange=exchange,
            timeout=timeout,
            shm=shm,
            blocks=blocks,
            start_step=step0,
        )
        return runner.run_segments(time0, steps, on_step, list(cuts), rebalance, boundary)
    finally:
        data.Free()
        coll.Free()


class RankRunner:
    """One rank's run of a placed program: its parts wired together, and the step loop.

    Parameters
    ----------
    program
        The program; every rank builds the same one.
    node_of
        int ``(P,)``: the rank of each partition.
    data, coll
        The runtime's own communicators: point-to-point messages, and collectives
        (reductions, planned exchanges of migrants).
    threads, reduction, exchange, timeout, shm
        As :func:`run_tasks`. The run starts at step 0 from ``program.init_block``; a
        rebalance re-plans from the blocks it moved (:meth:`place`).
    blocks, start_step
        A resumed run: this rank's blocks under ``node_of`` and the step they are at.
    """

    def __init__(
        self,
        program: Program,
        node_of: np.ndarray,
        data: MPI.Intracomm,
        coll: MPI.Intracomm,
        *,
        threads: int = 1,
        reduction: str = "mpi",
        exchange: str = "ac",
        timeout: float = 120.0,
        shm: bool = True,
        blocks: dict[int, Block] | None = None,
        start_step: int = 0,
    ) -> None:
        self.data, self.coll = data, coll
        self.options = (reduction, exchange, shm)
        self.clock = RunClock()
        self.watch = Watch(program, data, timeout)
        #: The running counters; every part holds this one object, reset per segment.
        self.tally = Tally()
        self.dispatch = Dispatch(max(1, int(threads)), 0, self.tally, self.watch)
        #: What numba compiles while the steps run (what warm() did not).
        self.compiles = CompileClock()
        self.plan: RankPlan | None = None
        self.mail: Mailboxes | None = None
        self.messenger: Messenger | None = None
        #: The batches' iparams rows of every partition met, kept across re-plans.
        self.iparams: dict[int, dict[int, np.ndarray]] = {}
        #: ``goes_on(step, block=True)``: whether the segment running goes on to ``step`` (its
        #: messages may then leave before it begins; ``None`` if that is not known yet and
        #: ``block`` is false); set by :meth:`run_segments`.
        self.goes_on: Callable[..., bool | None] = lambda step, block=True: False
        #: ``poke()``: lets the ranks' agreement of the step's end progress (MPI advances a
        #: non-blocking collective only inside MPI calls, and node neighbours' halos make
        #: none): at each phase's start, so that it is done where the last phase asks.
        self.poke: Callable[[], object] = lambda: None
        #: Where nothing between phases needs Python, what runs them several steps a call.
        self.steps: CompiledSteps | None = None
        self.place(program, node_of, blocks, start_step)

    def place(
        self,
        program: Program,
        node_of: np.ndarray,
        blocks: dict[int, Block] | None,
        start_step: int,
    ) -> None:
        """Build what depends on the placement ``node_of``: the plan (from ``blocks``, this
        rank's partitions, or ``program.init_block``), mailboxes, fused copies and the parts
        that use them, for a run going on from ``start_step``. The threads, the clock, the
        watch and the compiled batches stay: a rebalance calls this again, no restart."""
        data, coll, (reduction, exchange, shm) = self.data, self.coll, self.options
        self.start_step = start_step
        # Every rank builds its own partitions: all of them learn of one that failed before
        # any waits for it in a collective.
        # A rebalance keeps the partitions that stay where they are in the arena.
        previous = self.plan.arena if self.plan is not None and blocks is not None else None
        try:
            self.plan = plan = agreed(
                data, lambda: RankPlan.build(program, node_of, data.Get_rank(), blocks, previous)
            )
        except GrapeshotError:
            # Every rank raises it here alike (agreed): they free the old window together.
            # (Another error is one rank's alone: it ends the job without a collective.)
            if self.mail is not None:
                self.mail.close()
            raise
        # A re-plan takes over the mailboxes' window where the new layout fits in it.
        self.mail = Mailboxes(
            data, plan.plans, plan.arena, plan.links, HEADER * 8, shared=shm, previous=self.mail
        )
        self.fusion = fusion = Fusion.build(plan, self.mail, self.dispatch.threads)
        for k, grid in plan.plans.items():  # what the tasks do not copy, the rank does
            grid.make_cells(copies=k not in fusion.fused, gathers=fusion.packing(k, 0) is None)
        tally, watch = self.tally, self.watch
        self.dispatch.n_local = len(plan.local)
        self.slots = slots = PartSlots(len(plan.local))
        if self.messenger is not None:  # its sends were done at the segment's end
            self.messenger.close()
        self.messenger = Messenger(data, self.mail, plan.sources, start_step, tally, watch)
        self.tasks = PhaseTasks(
            plan, self.fusion, slots, self.clock, watch, self.messenger.parity, self.iparams
        )
        self.halos = Halos(
            plan, self.fusion, self.mail, self.messenger, self.dispatch, slots, self.clock,
            tally, watch,
        )  # fmt: skip
        self.reducer = Reducer(coll, reduction, plan.local, tally, watch)
        self.migrator = Migrator(plan, exchange, coll, self.messenger, slots, tally, watch)
        self.work = WorkLog(plan)
        previous, self.steps = self.steps, None
        if CompiledSteps.fits(plan, self.fusion, self.tasks, self.work, self.dispatch.threads):
            self.steps = CompiledSteps(
                plan, self.fusion, self.tasks, self.halos, slots, self.work, self.clock,
                self.dispatch.clocks[0], watch,
            )  # fmt: skip
            if previous is not None:  # the steps a call runs, as before the re-plan
                self.steps.proposal = previous.proposal

    def warm(self) -> None:
        """Compile (or load) everything a step calls, before the clock starts."""
        plan = self.plan
        warm_up(plan.program, plan.boxes[plan.local[0]])
        for flat in plan.arena.flat.values():  # the copies
            none = np.zeros(0, dtype=np.int64)
            gather(flat, none, flat[:0].copy())
            scatter(flat[:0].copy(), none, flat[:0].copy())
            copy_within(flat[:0].copy(), none, none)
        for k in plan.batched:  # and the batches, on no partition
            self.tasks.of(k).warm()
        if self.steps is not None:
            self.steps.warm()
        pack_all(no_halos(1))  # the rank's packing of a round its tasks did not pack
        word = np.zeros(HEADER * 8, dtype=np.uint8)  # node neighbours' news, told and heard
        publish(word, NEWS * 8, news_of(self.start_step))
        first_news(word, np.zeros(1, dtype=np.int64), news_of(self.start_step), 0)

    def run_segments(
        self,
        start_time: float,
        steps: int,
        on_step: Callable[[int], None] | None,
        cuts: Sequence[int] = (),
        rebalance: Rebalance | None = None,
        boundary: Boundary | None = None,
    ) -> list[RankResult]:
        """Run ``steps`` steps from ``start_step``, cut into segments at the steps ``cuts``.

        After each segment but the last, ``rebalance(step, result)`` (collective: every rank
        calls it) returns a new placement and this rank's blocks under it, or ``None`` to
        keep the placement; the runner re-plans in place (:meth:`place`) and goes on. With
        ``boundary``, every step's end is asked too (collective): a segment also ends where
        it says to checkpoint (``boundary.save``, given the blocks) or to stop (the run
        ends there). One :class:`RankResult` per segment, its times from the segment's start.
        """
        program = self.plan.program
        end = self.start_step + steps
        cutset = {c for c in cuts if self.start_step < c < end}
        self.warm()
        self.data.Barrier()
        results: list[RankResult] = []
        stop = threading.Event()
        watchdog = threading.Thread(target=self.watch.watch, args=(stop,), daemon=True)
        ctx = Context(self.start_step, start_time)
        step = self.start_step

        def goes_on(step: int, block: bool = True) -> bool | None:
            if step == end or step in cutset:
                return False
            if boundary is None:
                return True
            if not block and not boundary.settled():
                return None
            self.watch.waiting_for = f"the ranks' agreement after step {step}"
            return boundary.coming(step) is None

        self.goes_on = goes_on
        self.poke = (lambda: None) if boundary is None else boundary.settled
        with install_listener("numba:compile", self.compiles), self.dispatch.workers():
            watchdog.start()
            try:
                while True:
                    self.clock.start()
                    # Where nothing between phases needs Python, several run in one call.
                    steps = self.steps.run if self.steps is not None else self._phase_by_phase
                    step, ctx, decision = steps(step, ctx, end, cutset, boundary, on_step)
                    self.messenger.finish_sends()
                    results.append(self._segment(ctx))
                    values = ctx.values
                    ctx = Context(step, ctx.time + program.advance(ctx))
                    if decision is not None and decision.checkpoint:
                        self.watch.waiting_for = f"the checkpoint at step {step}"
                        self.watch.progress_at = time.perf_counter()
                        boundary.save(step, ctx.time, values, self.plan.blocks, self.plan.node_of)
                        self.watch.progress_at = time.perf_counter()
                    if step == end or (decision is not None and decision.stop):
                        break
                    if step not in cutset:
                        self.start_step = step
                        continue
                    self.watch.waiting_for = f"the rebalance at step {step}"
                    moved = None if rebalance is None else rebalance(step, results[-1])
                    self.watch.progress_at = time.perf_counter()
                    if moved is None:
                        self.start_step = step
                    else:
                        self.place(program, moved[0], moved[1], step)
            finally:
                stop.set()
                if boundary is not None:
                    boundary.close()
        self.messenger.close()
        self.mail.close()
        return results

    def _phase_by_phase(
        self,
        step: int,
        ctx: Context,
        end: int,
        cuts: Collection[int],
        boundary: Boundary | None,
        on_step: Callable[[int], None] | None,
    ) -> tuple[int, Context, Decision | None]:
        """Run steps from ``step`` (its context ``ctx``) phase by phase until ``end``, a step
        of ``cuts`` or the agreement's decision; ``(the step reached, the last step's
        context, the decision)``."""
        program = self.plan.program
        while True:
            for k, phase in enumerate(program.phases):
                self.run_phase(step, k, phase, ctx)
            self.work.record()
            if on_step is not None:
                on_step(step)
            step += 1
            decision = None
            if boundary is not None:
                self.watch.waiting_for = f"the ranks' agreement after step {step}"
                decision = boundary(step)
            if step == end or step in cuts or decision is not None:
                return step, ctx, decision
            ctx = Context(step, ctx.time + program.advance(ctx))

    def _packed(self, step: int, k: int, nxt: int) -> None:
        """Phase ``k``'s tasks of ``step`` packed phase ``nxt``'s messages: they leave now,
        where that phase runs on this plan, not after this rank's Python between the phases
        (70-110 µs a phase at 16×16, on the path of a neighbour waiting for them)."""
        self.halos.prepacked.add(nxt)
        ahead = step if nxt > k else step + 1
        if nxt > k or self.goes_on(ahead):
            self.halos.send_ahead(ahead, nxt)

    def _segment(self, ctx: Context) -> RankResult:
        """The result of the segment just run, ending at ``ctx``'s step; the records and
        counters start afresh for the next one."""
        plan, program, tally, clocks = (
            self.plan,
            self.plan.program,
            self.tally,
            self.dispatch.clocks,
        )
        wall = time.perf_counter() - self.clock.t0
        while any(clock.running for clock in clocks[1:]):  # a worker closing its last burst
            time.sleep(0.0001)
        compile_seconds, compiled = self.compiles.take()
        record = TaskRows.take(clocks)
        custom_halo, halo_links = self.halos.take_halo_bytes()
        result = RankResult(
            rank=plan.rank,
            blocks=plan.blocks,
            tasks=record,
            work=self.work.take(),
            wall=wall,
            threads=self.dispatch.threads,
            bytes_sent=tally.bytes_sent,
            messages=tally.messages,
            time=ctx.time + program.advance(ctx),
            halo_bytes=custom_halo,
            halo_links=halo_links,
            message_log=tally.message_log,
            reduce_seconds=tally.reduce_seconds,
            reductions=tally.reductions,
            halo_seconds=tally.halo_seconds,
            wait_seconds=tally.wait_seconds + record.waited,
            serial=None,
            copied_bytes=tally.copied_bytes,
            started=self.clock.t0,
            gil_seconds=sum(seconds for seconds, _ in self.tasks.gil.values()),
            gil_returns=sum(returns for _, returns in self.tasks.gil.values()),
            compile_seconds=compile_seconds,
            compiled=compiled,
        )
        self.tally.reset()
        self.tasks.gil.clear()
        return result

    def run_phase(self, step: int, k: int, phase: Phase, ctx: Context) -> None:
        """Phase ``k`` of ``step`` on this rank: its exchanges, tasks, reduction and
        migration."""
        plan, halos, fusion = self.plan, self.halos, self.fusion
        self.poke()
        if phase.graph is not None:
            halos.graph_round(step, k, phase)
        arrivals = halos.send(step, k, phase, time.perf_counter() - self.clock.t0)
        batched = k in plan.batched
        if batched and (k - 1) % len(plan.program.phases) not in plan.batched:
            # The phase before ran task by task: a kernel may have replaced an array this
            # batch works on (exchanged fields were brought back by send_grid already).
            for name in plan.batches[k].fields:
                plan.arena.refresh(plan.blocks, name)
        # FIFO: the partitions with all their halos at hand first, in partition order, then
        # those each arriving message completes.
        ready = arrivals.ready()
        task = self.tasks.of(k)
        nxt = fusion.prepacks.get(k)
        then, news = None, 0
        if nxt is not None:  # the tasks pack the next phase's messages: free their buffer
            halos.outbox_free(nxt)
            ahead = step if nxt > k else step + 1
            # Where the phase tells and the run surely goes on, its last call sends them
            # (compiled, headers and all); else they leave from here once it is done.
            if k in fusion.tells and (nxt > k or self.goes_on(ahead, block=False)):
                news = halos.tell_ahead(ahead, nxt)
            else:
                then = functools.partial(self._packed, step, k, nxt)
        self.dispatch.run(task, ready, arrivals, ctx, batched, then, news)
        if k in fusion.hears:
            halos.heard(step, k)
        self.watch.check()
        if phase.reduce is not None:
            values = self.slots.batch_values.tolist() if batched else self.slots.values
            self.reducer.reduce(phase, ctx, values)
        if phase.migrate is not None:
            tally = self.tally
            t = time.perf_counter()
            wait = tally.wait_seconds
            self.migrator.migrate(step, k, phase)
            # Its receives count as waiting already.
            tally.halo_seconds += time.perf_counter() - t - (tally.wait_seconds - wait)
