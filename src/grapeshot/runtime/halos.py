"""One rank's halo exchanges: sending a phase's halos, taking each arriving message in, and
the graph exchange's round, on the main thread.

A grid exchange (no custom packers) moves each message in one compiled gather into its
mailbox, one scatter out of it, and copies the halos between the rank's own partitions in one
compiled call (or leaves them to the tasks, when the phase is fused:
:mod:`grapeshot.runtime.fusion`). Custom packers (particles) are called per buffer, as they
must be, but their buffers still travel one message per rank pair, and their unpackers run in
the task. A graph exchange (payloads to arbitrary partitions) is a whole round of its own
before the phase's halo exchange and tasks.
"""

from __future__ import annotations

import time

import numpy as np

from grapeshot.model.news import news_of
from grapeshot.model.program import Exchange, Offset, Phase
from grapeshot.model.task_halos import pack_all
from grapeshot.runtime.copies import gather, scatter
from grapeshot.runtime.dispatch import Dispatch
from grapeshot.runtime.fusion import Fusion
from grapeshot.runtime.halo_plan import GridPlan
from grapeshot.runtime.mailboxes import Mailboxes
from grapeshot.runtime.messages import Messenger
from grapeshot.runtime.rank_plan import RankPlan
from grapeshot.runtime.results import Tally
from grapeshot.runtime.tasks import PartSlots
from grapeshot.runtime.timeline import RunClock
from grapeshot.runtime.watch import Watch
from grapeshot.runtime.wire import (
    GRAPH,
    HALO,
    check_grid_round,
    decode_items,
    encode_items,
    payload,
    read_header,
    write_header,
)


class Halos:
    """The halo exchanges of one rank (main thread).

    Parameters
    ----------
    plan, fusion
        The rank's plan and fused copies.
    mail, messenger
        Where grid messages live, and how messages travel.
    dispatch
        The rank's threads (local copies are shared out among them).
    slots
        Where custom halos are left for the tasks.
    clock, tally, watch
        The run's clock, counters and progress.

    Attributes
    ----------
    rounds
        ``{grid phase: rounds sent}`` (its bytes per round are planned: counted at the end).
    custom_halo
        ``{(source partition, destination partition): bytes}`` of custom and graph buffers.
    """

    def __init__(
        self,
        plan: RankPlan,
        fusion: Fusion,
        mail: Mailboxes,
        messenger: Messenger,
        dispatch: Dispatch,
        slots: PartSlots,
        clock: RunClock,
        tally: Tally,
        watch: Watch,
    ) -> None:
        self.plan = plan
        self.fusion = fusion
        self.mail = mail
        self.messenger = messenger
        self.dispatch = dispatch
        self.slots = slots
        self.clock = clock
        self.tally = tally
        self.watch = watch
        self.rounds = dict.fromkeys(plan.plans, 0)
        #: The grid exchanges whose messages the phase before packed already.
        self.prepacked: set[int] = set()
        #: The grid exchanges whose messages left as soon as they were packed (send_ahead).
        self.sent: set[int] = set()
        self.custom_halo: dict[tuple[int, int], int] = {}
        #: ``{grid phase: bytes}`` of its local halos in one round.
        self.local_bytes = {
            k: int(p.local_sizes.sum(axis=1) @ [plan.arena.flat[n].itemsize for n in p.names])
            for k, p in plan.plans.items()
        }
        #: Every local position: the ready tasks of a phase without an exchange.
        self.everyone = np.arange(len(plan.local), dtype=np.int64)
        #: ``{telling phase's next phase: (messages, bytes)}`` of one round (Fusion.tells).
        self.told = {}
        for j in fusion.tells:
            k = fusion.prepacks[j]
            sizes = [mail.outgoing(k, 0, r).nbytes for r in plan.plans[k].send_sizes]
            self.told[k] = (len(sizes), sum(sizes))
        #: ``{hearing phase: bytes of each source's message}`` (Fusion.hears) and their sum.
        self.heard_bytes = {k: [mail.received(k, 0, r).nbytes for r in sources]
                            for k, (_, sources) in fusion.hears.items()}  # fmt: skip
        self.heard_total = {k: sum(sizes) for k, sizes in self.heard_bytes.items()}

    # -- a phase's halo round ----------------------------------------------------------------

    def send(self, step: int, k: int, phase: Phase, start: float) -> HaloRound:
        """Send phase ``k``'s halos of ``step`` (if it has an exchange) and hand the local
        ones over; the round whose arrivals make the rest of its tasks ready.

        ``start`` is the phase's start, seconds since the run's ``t0``.
        """
        plan, fusion = self.plan, self.fusion
        exchange = phase.exchange
        pending: list[int] = []
        need, first = None, self.everyone
        if exchange is not None:
            t = time.perf_counter()
            if k in plan.plans:
                hears = fusion.hears.get(k)
                if hears is None:
                    self.messenger.post_grid_receives(step, k)
                self.send_untold(step, k)
                if k in fusion.fused:
                    fusion.ran[:] = 0
                if hears is not None:  # the tasks wait for their messages themselves
                    fusion.views.expect[0] = news_of(step)
                    fusion.views.heard[:] = 0  # (the numbers are this phase's sources)
                    self.watch.waiting_for = (
                        f"step {step} phase {k}: halos from ranks {plan.sources}"
                    )
                    self.tally.halo_seconds += time.perf_counter() - t
                    return HaloRound(self, step, k, None, [], start, hears[0])
            else:
                self.send_custom(step, k, exchange)
            self.tally.halo_seconds += time.perf_counter() - t
            need, first = plan.need_template.copy(), plan.unfed
            pending = list(plan.sources)
        return HaloRound(self, step, k, need, pending, start, first)

    def send_untold(self, step: int, k: int) -> None:
        """Send grid exchange ``k``'s messages of ``step``, unless the phase before told them
        already (:meth:`tell_ahead`, :meth:`send_ahead`)."""
        if k in self.sent:
            self.sent.discard(k)
        else:
            self.send_grid(step, k)

    def heard(self, step: int, k: int) -> None:
        """After a phase whose tasks waited for their messages themselves
        (:attr:`Fusion.hears <grapeshot.runtime.fusion.Fusion.hears>`): refuse a message of
        another round, log each one's time on the way (the tasks' waits are in their rows:
        :class:`~grapeshot.runtime.timeline.TaskRows`)."""
        views = self.fusion.views
        views.expect[0] = 0
        self.log_heard(step, k, int(views.bad[0]), views.latency_ns)

    def log_heard(self, step: int, k: int, bad: int, latency_ns: np.ndarray) -> None:
        """What :meth:`heard` does once the tasks of a hearing phase ran: refuse a message of
        another round (``bad``: 1 + its source's number, 0 for none), log each source's
        message and its time on the way (``latency_ns``, int ``(sources,)``)."""
        sources, tally = self.fusion.hears[k][1], self.tally
        if bad:
            source = sources[bad - 1]
            self.fusion.views.bad[0] = 0
            raw = self.mail.received(k, self.messenger.parity(step), source)
            check_grid_round(read_header(raw), step, k, source)
        sizes, log = self.heard_bytes[k], tally.message_log
        for source, nbytes, latency in zip(sources, sizes, latency_ns.tolist(), strict=False):
            log.append((source, nbytes, latency * 1e-9))
        tally.copied_bytes += self.heard_total[k]
        self.watch.progress_at = time.perf_counter()

    def tell_ahead(self, step: int, k: int) -> int:
        """Count grid exchange ``k``'s messages of ``step`` as sent: all to node neighbours,
        packed by the phase about to run, whose last call writes their headers and sends them
        (:attr:`Fusion.tells <grapeshot.runtime.fusion.Fusion.tells>`); the news it writes."""
        self.count_told(k)
        self.sent.add(k)
        return news_of(step)

    def count_told(self, k: int) -> None:
        """Count a round of grid exchange ``k``'s messages, told by the phase before it
        (:meth:`tell_ahead`), as sent, and its local halos as copied."""
        n, nbytes = self.told[k]
        self.messenger.count_grid(nbytes, n)
        self.tally.copied_bytes += self.local_bytes[k]
        self.rounds[k] += 1

    def send_grid(self, step: int, k: int) -> None:
        """Pack grid exchange ``k``'s messages into the mailboxes (unless the phase before's
        tasks did), send them, and copy the local halos (unless the tasks will)."""
        plan, arena, mail, fusion = self.plan.plans[k], self.plan.arena, self.mail, self.fusion
        if not self.plan.all_batched:
            for name in plan.names:
                arena.refresh(self.plan.blocks, name)
        parity = self.messenger.parity(step)
        segments = {r: mail.outgoing(k, parity, r) for r in plan.send_sizes}
        if k in self.prepacked:  # the tasks of the phase before packed them
            self.prepacked.discard(k)
        elif (packing := fusion.packing(k, parity)) is not None:
            self.outbox_free(k)
            pack_all(packing)  # as the tasks pack (the plan has no cells for them)
        else:
            self.outbox_free(k)
            self._gather(plan, segments)
        for r, raw in segments.items():
            write_header(raw, step, k, HALO)
            self.messenger.send_grid(k, parity, r, raw, step)
        if k not in fusion.fused:  # else each task copies its own
            for name in plan.names:
                flat = arena.flat[name]
                self.dispatch.copy_local(flat, plan.local_src[name], plan.local_dst[name])
        self.tally.copied_bytes += self.local_bytes[k]
        self.rounds[k] += 1

    def _gather(self, plan: GridPlan, segments: dict[int, np.ndarray]) -> None:
        """Pack each message of grid exchange ``plan`` into its segment by the plan's cells."""
        arena = self.plan.arena
        for r, indices in plan.send.items():
            body = payload(segments[r])
            at = 0
            for name in plan.names:
                flat = arena.flat[name]
                idx = indices[name]
                size = idx.size * flat.itemsize
                gather(flat, idx, body[at : at + size].view(flat.dtype))
                at += size + (-size) % 8

    def send_ahead(self, step: int, k: int) -> None:
        """Send grid exchange ``k``'s messages of ``step`` now, before its phase begins: the
        phase before packed them (the phase's :meth:`send` then only posts its receives;
        MPI keeps a message that comes before its receive)."""
        t = time.perf_counter()
        self.send_grid(step, k)
        self.sent.add(k)
        self.tally.halo_seconds += time.perf_counter() - t

    def outbox_free(self, k: int) -> None:
        """Wait until the last round's messages of grid exchange ``k`` have left."""
        self.messenger.outbox_free(k, self.plan.plans[k].send_sizes)

    def send_custom(self, step: int, k: int, exchange: Exchange) -> None:
        """Pack phase ``k``'s custom halos, hand the local ones to the inboxes and post one
        message per destination rank."""
        # Every buffer of a partition in one call (Exchange.pack_all), then handed out.
        plan = self.plan
        pack_all = exchange.packer_all()
        blocks, boxes, position, inbox = plan.blocks, plan.boxes, plan.position, self.slots.inbox
        packed: dict[tuple[int, Offset], np.ndarray] = {}
        for src, offsets in plan.outgoing:
            bufs = pack_all(blocks[src], boxes[src], offsets)
            packed.update(zip([(src, o) for o in offsets], bufs, strict=True))
        for link in plan.links.local:
            buf = packed[(link.src, link.offset)]
            inbox[position[link.dst]][link.slot] = buf
            self.count_halo(link.src, link.dst, buf.nbytes)
        for r, links in plan.links.send.items():
            items = []
            for link in links:
                buf = packed[(link.src, link.offset)]
                items.append((link.dst, link.slot, buf))
                self.count_halo(link.src, link.dst, buf.nbytes)
            self.messenger.post(r, encode_items(step, k, HALO, items))

    def take(self, k: int, source: int, raw: np.ndarray) -> None:
        """Take in rank ``source``'s halo message of phase ``k``: scatter a grid message into
        the ghost cells (unless the tasks copy their own), leave custom buffers in the
        inboxes."""
        self.tally.copied_bytes += raw.nbytes
        plan = self.plan.plans.get(k)
        if plan is None:
            position, inbox = self.plan.position, self.slots.inbox
            for part, slot, buf in decode_items(raw):
                inbox[position[part]][slot] = buf
            return
        if k in self.fusion.fused:
            return  # its pieces are copied by the tasks they complete
        body = payload(raw)
        at = 0
        for name in plan.names:
            flat = self.plan.arena.flat[name]
            idx = plan.recv[source][name]
            size = idx.size * flat.itemsize
            scatter(body[at : at + size].view(flat.dtype), idx, flat)
            at += size + (-size) % 8

    # -- graph exchanges ---------------------------------------------------------------------

    def graph_round(self, step: int, k: int, phase: Phase) -> None:
        """One round of phase ``k``'s graph exchange, before its grid exchange and tasks.

        Packs every buffer of the local partitions (one message per destination rank, local
        buffers handed over in memory), receives one message from each source rank, then
        unpacks each local partition's arrivals in sender order, on this thread.
        """
        graph, plan = phase.graph, self.plan.graph_plans[k]
        blocks, boxes, position = self.plan.blocks, self.plan.boxes, self.plan.position
        local, watch, tally = self.plan.local, self.watch, self.tally
        arrived: list[list[tuple[int, np.ndarray]]] = [[] for _ in local]
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
                tally.copied_bytes += raw.nbytes
                self.messenger.post(r, raw)
        except BaseException as exc:
            watch.fail(src, step, phase.name, exc)
            watch.abort(watch.failure)
        tally.halo_seconds += time.perf_counter() - t
        pending = list(plan.sources)
        while pending:
            watch.waiting_for = f"step {step} phase {phase.name!r}: graph buffers from {pending}"
            source, raw = self.messenger.receive((step, k, GRAPH))
            pending.remove(source)
            tally.copied_bytes += raw.nbytes
            for dst, sender, buf in decode_items(raw):
                arrived[position[dst]].append((sender, buf))
        t = time.perf_counter()
        p = -1
        try:
            for i, p in enumerate(local):
                got = arrived[i]
                got.sort(key=_sender)  # stable: one sender's buffers stay in target order
                graph.unpack(blocks[p], boxes[p], got)
        except BaseException as exc:
            watch.fail(p, step, phase.name, exc)
            watch.abort(watch.failure)
        tally.halo_seconds += time.perf_counter() - t
        watch.progress_at = time.perf_counter()

    # -- bytes -------------------------------------------------------------------------------

    def count_halo(self, src: int, dst: int, nbytes: int) -> None:
        """Count a custom or graph buffer of ``nbytes`` from partition ``src`` to ``dst``."""
        self.custom_halo[(src, dst)] = self.custom_halo.get((src, dst), 0) + nbytes
        self.tally.copied_bytes += nbytes

    def take_halo_bytes(
        self,
    ) -> tuple[dict[tuple[int, int], int], list[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
        """The halos since the last take: custom ones as ``{(source partition, destination
        partition): bytes}``, and per grid exchange its links as int64 arrays ``(src, dst,
        bytes)``, summed by pair once the run is over
        (:meth:`~grapeshot.runtime.results.RankResult.halo_pairs`: at each segment's end it
        cost a rebalance 0.3-0.5 ms at 16×16, joining them 50 µs). Counting starts afresh (a
        run's segments each report their own)."""
        plans = self.plan.plans
        sent = [
            (p.sent.src, p.sent.dst, p.sent_bytes * self.rounds[k])
            for k, p in plans.items()
            if self.rounds[k]
        ]
        custom = self.custom_halo
        self.rounds = dict.fromkeys(plans, 0)
        self.custom_halo = {}
        return custom, sent


class HaloRound:
    """One phase's halo messages still to come on this rank, and the tasks they make ready
    (an :class:`~grapeshot.runtime.dispatch.Arrivals`).

    Attributes
    ----------
    need
        int ``(L,)``: how many source ranks' messages each local partition still waits for
        (``None`` in a phase without an exchange: none).
    pending
        Source ranks whose message has not arrived yet.
    start
        The phase's start, seconds since the run's ``t0``.
    """

    __slots__ = ("first", "grid", "halos", "k", "need", "pending", "start", "step")

    def __init__(
        self,
        halos: Halos,
        step: int,
        k: int,
        need: np.ndarray | None,
        pending: list[int],
        start: float,
        first: np.ndarray,
    ) -> None:
        self.halos = halos
        self.step = step
        self.k = k
        self.need = need
        self.pending = pending
        self.start = start
        self.first = first
        self.grid = k in halos.plan.plans

    def ready(self) -> np.ndarray:
        """Positions of the local partitions whose tasks run before any message of the round
        has arrived (planned: those with every halo at hand, ascending; every partition where
        the tasks wait for their messages themselves, those needing none first)."""
        return self.first

    def next(self, block: bool = True) -> tuple[np.ndarray, float] | None:
        """Wait for the next halo message of this round; the tasks it makes ready, and the
        seconds since the phase started (``block=False``, grid exchanges only: ``None`` if no
        message is in yet)."""
        halos, step, k, pending = self.halos, self.step, self.k, self.pending
        if block:  # (a look that finds nothing has nothing to tell the watch)
            halos.watch.waiting_for = f"step {step} phase {k}: halos from ranks {pending}"
        if self.grid:
            got = halos.messenger.grid_arrival(step, k, block)
            if got is None:
                return None
            source, raw = got
        else:
            source, raw = halos.messenger.receive((step, k, HALO))
        pending.remove(source)
        t = time.perf_counter()
        halos.take(k, source, raw)
        halos.tally.halo_seconds += time.perf_counter() - t
        feeds = halos.plan.feeds[source]
        waited = t - halos.clock.t0 - self.start
        if not pending and len(halos.plan.sources) == 1:
            return feeds, waited  # the one source: what it feeds waited for it alone
        need = self.need
        need[feeds] -= 1
        return feeds[need[feeds] == 0], waited


def _sender(item: tuple[int, np.ndarray]) -> int:
    return item[0]
