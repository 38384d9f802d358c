"""The ready queue of one rank: its threads, and the order its tasks run in.

Tasks run on the calling (main) thread and, with ``threads > 1``, on ``threads - 1`` worker
threads that take them (or runs of them, for batches) from one FIFO queue; kernels and
batches are numba functions that release the GIL. The main thread alone receives the
messages that make more tasks ready (MPI is called from it only), through a
:class:`Arrivals` of the phase's halo round.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

import numpy as np

from grapeshot.model.program import Context
from grapeshot.runtime.copies import copy_within
from grapeshot.runtime.results import Tally
from grapeshot.runtime.timeline import ThreadClock
from grapeshot.runtime.watch import Watch

#: Below this many cells a local halo copy is not worth handing part of to another thread.
SPLIT_COPIES = 4096


class Arrivals(Protocol):
    """The halo messages of one phase's round still to come (the main thread waits on them)."""

    #: The phase and step of the round.
    k: int
    step: int
    #: Source ranks whose message has not arrived yet.
    pending: list[int]
    #: Whether a message can be looked for without waiting (grid exchanges).
    grid: bool

    def next(self, block: bool = True) -> tuple[np.ndarray, float] | None:
        """Take the next message in: the positions it makes ready and the seconds since the
        phase started (``block=False``: ``None`` if no message is in yet)."""


class Dispatch:
    """One rank's threads and the FIFO queue they take tasks from.

    Parameters
    ----------
    threads
        Threads running tasks, the calling thread included (at least 1).
    n_local
        Local partitions of the rank.
    tally, watch
        Where waits are counted and what the main thread waits for is told.

    Attributes
    ----------
    clocks
        Every thread's :class:`~grapeshot.runtime.timeline.ThreadClock` (the main thread's
        first).
    """

    def __init__(self, threads: int, n_local: int, tally: Tally, watch: Watch) -> None:
        self.threads = max(1, int(threads))
        self.n_local = n_local
        self.tally = tally
        self.watch = watch
        self.clocks = [ThreadClock() for _ in range(self.threads)]
        #: ``(task, todo, step, ctx, waited)`` items; ``None`` ends a worker.
        self.tasks: queue.SimpleQueue = queue.SimpleQueue()
        #: How many tasks each item a worker finished held.
        self.finished: queue.SimpleQueue = queue.SimpleQueue()
        #: One entry per worker's share of a local halo copy done (:meth:`copy_local`).
        self.copied: queue.SimpleQueue = queue.SimpleQueue()

    @contextlib.contextmanager
    def workers(self) -> Iterator[None]:
        """The worker threads, running for the body of the ``with``."""
        workers = [
            threading.Thread(target=self._work, args=(t,), daemon=True, name=f"grapeshot-{t}")
            for t in range(1, self.threads)
        ]
        for t in workers:
            t.start()
        try:
            yield
        finally:
            for _ in workers:
                self.tasks.put(None)
            for t in workers:  # each closes its clock's last burst on the way out
                t.join()

    def _work(self, thread: int) -> None:
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
            if len(item[1]):  # a task run (not a share of copy_local)
                self.finished.put(len(item[1]))

    def run(
        self,
        task: Callable,
        ready: np.ndarray,
        arrivals: Arrivals,
        ctx: Context,
        batched: bool,
        then: Callable[[], None] | None = None,
        news: int = 0,
    ) -> None:
        """Run every local partition's task of a phase, the ``ready`` positions first, then
        those each of ``arrivals`` makes ready (first in, first out); ``then()``, on this
        thread, as soon as the last of them ran without error (the next phase's messages
        leave there: a neighbour may be waiting for them). ``news``, one thread only: the
        news the phase's last (batched) call writes into the messages its tasks packed
        (:attr:`Fusion.tells <grapeshot.runtime.fusion.Fusion.tells>`)."""
        if self.threads == 1:
            self._run_inline(task, ready, arrivals, ctx, then, news)
        else:
            self._run_pooled(task, ready, arrivals, ctx, batched)
            if then is not None and self.watch.failure is None:
                then()

    def _run_inline(
        self,
        task: Callable,
        ready: np.ndarray,
        arrivals: Arrivals,
        ctx: Context,
        then: Callable[[], None] | None,
        news: int,
    ) -> None:
        """One thread: run the ready tasks, then wait for the next message, until done."""
        clock = self.clocks[0]
        rows = clock.rows
        step, pending = arrivals.step, arrivals.pending
        waited = 0.0
        while True:
            # Grid messages in already join this call: one compiled call less per message.
            while pending and arrivals.grid:
                got = arrivals.next(block=False)
                if got is None:
                    break
                ready = np.concatenate([ready, got[0]])
            # A call on nothing would cost a batch call's Python, ~10 µs: made only where the
            # phase's last call is to send the messages its tasks packed.
            if ready.size or (news and not pending):
                clock.start()
                if pending or (then is None and not news):
                    task(ready, step, ctx, waited, rows, 0)
                elif not news:  # the phase's last call: ``then`` before its own bookkeeping
                    task(ready, step, ctx, waited, rows, 0, then)
                else:  # the phase's last call: it sends what its tasks packed
                    task(ready, step, ctx, waited, rows, 0, then, news)
                clock.stop()
                if not pending:
                    return
            elif not pending:
                if then is not None and self.watch.failure is None:
                    then()
                return
            ready, waited = arrivals.next()

    def _run_pooled(
        self, task: Callable, ready: np.ndarray, arrivals: Arrivals, ctx: Context, batched: bool
    ) -> None:
        """Several threads: workers and this one take tasks from one FIFO queue; this one
        also receives the messages that make more tasks ready, and takes in every grid
        message already there before each run it takes itself (a message waiting behind a
        run would keep the workers idle for the run's length)."""
        # A batched phase hands out runs of partitions (one compiled call each), a few per
        # thread so that they even out; the others one task at a time. (Runs shrinking to
        # single tasks at the end of what is ready shortened the phases' tails but not the
        # wall time: their extra runs are extra GIL hand-overs; docs/runtime.md, threads.)
        chunk = max(1, self.n_local // (4 * self.threads)) if batched else 1
        step, pending = arrivals.step, arrivals.pending
        self._deal(task, ready, step, ctx, 0.0, chunk)
        remaining = self.n_local
        clock = self.clocks[0]
        while remaining:
            while pending and arrivals.grid:
                got = arrivals.next(block=False)
                if got is None:
                    break
                self._deal(task, got[0], step, ctx, got[1], chunk)
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
                ready, waited = arrivals.next()
                self._deal(task, ready, step, ctx, waited, chunk)
            else:
                self.watch.waiting_for = f"step {step} phase {arrivals.k}: tasks on workers"
                t = time.perf_counter()
                remaining -= self.finished.get()
                self.tally.wait_seconds += time.perf_counter() - t
        clock.stop()

    def _deal(
        self, task: Callable, ready: np.ndarray, step: int, ctx: Context, waited: float, size: int
    ) -> None:
        """Queue ``ready``'s tasks in runs (:func:`chunks`) of at most ``size``."""
        put = self.tasks.put
        for part in chunks(ready, size):
            put((task, part, step, ctx, waited))

    def copy_local(self, flat: np.ndarray, src: np.ndarray, dst: np.ndarray) -> None:
        """:func:`~grapeshot.runtime.copies.copy_within`, shared out among this rank's
        threads (main thread, between phases: the workers are idle).

        With one rank and several threads every halo is local: copied by this thread alone it
        would keep the workers waiting at every exchange for a pass over all the halos. On
        shared cores the wait for a worker's share is mostly the worker's wake-up (2-4 ms for
        0.15 ms of copying); copying the shares it has not begun here instead only moved that
        delay into the phase's tasks (docs/runtime.md, threads).
        """
        if self.threads == 1 or src.size < SPLIT_COPIES:
            copy_within(flat, src, dst)
            return
        cut = np.linspace(0, src.size, self.threads + 1).astype(np.int64)
        for t in range(1, self.threads):
            piece = (src[cut[t] : cut[t + 1]], dst[cut[t] : cut[t + 1]])
            self.tasks.put((self._copy_piece, (), (flat, *piece), None, 0.0))
        copy_within(flat, src[: cut[1]], dst[: cut[1]])
        for _ in range(1, self.threads):
            self.copied.get()

    def _copy_piece(self, todo, arrays, ctx, waited, rows, thread) -> None:
        """A worker's share of :meth:`copy_local` (the signature of a task; it tells
        :meth:`copy_local`, not the ready queue's count, that it is done)."""
        copy_within(*arrays)
        self.copied.put(None)


def chunks(items: Sequence, size: int) -> list:
    """``items`` dealt round-robin into runs of at most ``size``, each in ``items`` order.

    Dealt, not cut in slices: neighbouring partitions carry similar loads (the water of a dam
    break is in one corner), so slices would give one thread the heavy run and leave the
    others waiting at the end of the phase.
    """
    n = -(-len(items) // size)
    return [items[j::n] for j in range(n)]
