"""Per-task timelines of one rank: every thread's task rows and CPU clock, and the run's clock.

A rank's tasks run on several threads; each thread appends its own rows (no lock on the hot
path) to its :class:`ThreadClock`; a segment takes them as they are (:class:`TaskRows`),
sums them for the run's summary, and merges them into the per-task columns a run record and
a timeline keep (:class:`TaskRecord`) only when asked.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np


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
            "halo": np.asarray(
                self.halo if len(self.halo) else np.zeros(len(self.part)), dtype=np.float64
            ),
        }

    @classmethod
    def from_clocks(cls, clocks: list[ThreadClock]) -> TaskRecord:
        """The rows every thread's clock recorded (columns as numpy arrays).

        A batch row holds its tasks' parts, stamps (and halo nanoseconds) as arrays and one
        value of each other column: those are repeated and the stamps turned into seconds
        once for the whole run, so gathering costs a few list appends per batch row and
        nothing per task. A task's ``cpu`` is its wall time times its burst's share of a
        core, and so is its ``halo``.
        """
        parts: list[np.ndarray] = []
        starts: list[np.ndarray] = []  # nanoseconds (batches) or seconds (single tasks)
        ends: list[np.ndarray] = []
        halos: list[tuple[int, np.ndarray]] = []  # (first task, its batch's halo ns)
        # Per row: (step, phase, thread, wait, share, seconds per start unit, offset) and how
        # many tasks it holds.
        scalars: list[tuple] = []
        counts: list[int] = []
        singles: list[tuple] = []  # per-task rows since the last batch row, in order
        total = 0

        def flush() -> None:
            if singles:
                part, start, end = zip(*singles, strict=True)
                parts.append(np.asarray(part, dtype=np.int64))
                starts.append(np.asarray(start, dtype=np.float64))
                ends.append(np.asarray(end, dtype=np.float64))
                singles.clear()

        for clock in clocks:
            for row, share in zip(clock.rows, clock.shares, strict=True):
                if isinstance(row[0], np.ndarray):  # a batch row (ThreadClock)
                    flush()
                    n = row[0].size
                    stamps = row[4]
                    parts.append(row[0])
                    starts.append(stamps[:-1])
                    if len(row) > 8:  # a task that waited before it began ends the one before
                        end = stamps[1:].copy()
                        end[:-1] -= row[8][1:]
                        ends.append(end)
                    else:
                        ends.append(stamps[1:])
                    if len(row) > 7:
                        halos.append((total, row[7]))
                    scalars.append((row[1], row[2], row[3], row[6], share, 1e-9, row[5]))
                else:
                    n = 1
                    singles.append((row[0], row[4], row[5]))
                    scalars.append((row[1], row[2], row[3], row[6], share, 1.0, 0.0))
                counts.append(n)
                total += n
        flush()
        record = cls()
        table = np.asarray(scalars, dtype=np.float64).reshape(-1, 7)
        columns = [np.repeat(table[:, c], np.asarray(counts, dtype=np.int64)) for c in range(7)]
        step, phase, thread, wait, share, unit, offset = columns
        record.part = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        raw = [np.concatenate(pieces) if pieces else np.zeros(0) for pieces in (starts, ends)]
        record.start, record.end = (r * unit + offset for r in raw)
        record.step, record.phase, record.thread = (
            c.astype(np.int64) for c in (step, phase, thread)
        )
        record.wait = wait
        record.cpu = (record.end - record.start) * share
        halo = np.zeros(total)
        for first, ns in halos:
            halo[first : first + len(ns)] = ns
        # The halo copies' wall seconds, at the same share of a core as the task.
        record.halo = halo * 1e-9 * share
        return record


class TaskRows:
    """A segment's task rows, expanded into per-task columns only when asked.

    What a run needs of its tasks at the end of a segment is their sums (busy, halo copies,
    the main thread's task time), which each batch row gives at once; the per-task columns
    (:class:`TaskRecord`) cost a tenth of a microsecond a task to build and more to gather,
    and only a record, a timeline or a rebalance on CPU seconds reads them.
    """

    def __init__(
        self,
        clocks: list[ThreadClock] | None = None,
        record: TaskRecord | None = None,
        waited: float = 0.0,
    ) -> None:
        self._clocks = clocks or []
        self._record = record
        self._sums: tuple[float, float, float] | None = None
        #: Seconds the tasks of batched calls waited for messages before they began
        #: (:attr:`Fusion.hears <grapeshot.runtime.fusion.Fusion.hears>`), summed when taken.
        self.waited = waited

    @classmethod
    def take(cls, clocks: list[ThreadClock]) -> TaskRows:
        """The rows ``clocks`` recorded; each clock starts afresh."""
        taken = []
        waited = 0
        for clock in clocks:
            kept = ThreadClock()
            kept.rows, kept.shares = clock.rows, clock.shares
            clock.rows, clock.shares = [], []
            taken.append(kept)
            for row in kept.rows:  # (a batch row of tasks that waited has their waits last)
                if len(row) > 8:
                    waited += int(row[8].sum())
        return cls(clocks=taken, waited=waited * 1e-9)

    def record(self) -> TaskRecord:
        """The per-task columns (built once)."""
        if self._record is None:
            self._record = TaskRecord.from_clocks(self._clocks)
            self._clocks = []
            self._sums = None  # from the columns from now on, to the last bit
        return self._record

    def arrays(self) -> dict[str, np.ndarray]:
        """The per-task columns as numpy arrays (:meth:`TaskRecord.arrays`)."""
        return self.record().arrays()

    def sums(self) -> tuple[float, float, float]:
        """The tasks' CPU seconds, the part of them in their own halo copies, and the main
        thread's (0's) tasks' wall seconds (summed once: the segment's end, a rebalance on
        measured seconds and the gathering all read them; again from the columns once they
        are built, which round a task's seconds alike)."""
        if self._sums is None:
            self._sums = self._summed()
        return self._sums

    def _summed(self) -> tuple[float, float, float]:
        if self._record is not None:
            t = self._record.arrays()
            main = t["thread"] == 0
            return (
                float(t["cpu"].sum()),
                float(t["halo"].sum()),
                float((t["end"][main] - t["start"][main]).sum()),
            )
        # A batch row's tasks run back to back: their wall seconds are its last stamp less
        # its first. The rows' halo nanoseconds are summed in one pass over all of them.
        cpu = main = 0.0
        copies: list[np.ndarray] = []
        copy_shares: list[float] = []
        for clock in self._clocks:
            for row, share in zip(clock.rows, clock.shares, strict=True):
                if isinstance(row[0], np.ndarray):
                    stamps = row[4]
                    wall = (int(stamps[-1]) - int(stamps[0])) * 1e-9
                    if len(row) > 8:  # the waits between its tasks
                        wall -= int(row[8][1:].sum()) * 1e-9
                    if len(row) > 7 and row[7].size:
                        copies.append(row[7])
                        copy_shares.append(share)
                else:
                    wall = row[5] - row[4]
                cpu += wall * share
                if row[3] == 0:
                    main += wall
        halo = 0.0
        if copies:
            starts = np.cumsum([0] + [c.size for c in copies[:-1]])
            per_row = np.add.reduceat(np.concatenate(copies), starts)
            halo = float(np.dot(per_row, copy_shares)) * 1e-9
        return cpu, halo, main


class ThreadClock:
    """One thread's task rows, and the CPU time of its bursts of consecutive tasks.

    Reading a thread's CPU clock costs about a microsecond, as much as the runtime's whole
    bookkeeping of a task, so it is read at the start and the end of each *burst* (tasks the
    thread ran back to back, without waiting) rather than around each task. A task's ``cpu``
    is its wall time times the share of a core the thread had during its burst: their sum
    over a burst is the burst's CPU time (up to the few microseconds between its tasks), and
    a task whose core was taken by another process is not counted as work.

    Attributes
    ----------
    rows
        ``(part, step, phase, thread, start, end, wait)`` per task, times in seconds since
        :attr:`RunClock.t0`; or per batch of tasks ``(parts, step, phase, thread, stamps,
        offset, wait[, halo[, waits]])``: int arrays ``parts (n,)``, ``stamps (n + 1,)`` (the
        ``CLOCK_MONOTONIC`` nanoseconds each task began at, then the batch's end),
        ``offset`` (:attr:`RunClock.stamp_offset`), ``halo (n,)``: the nanoseconds each
        task spent in its own halo copies, and ``waits (n,)``: those each task waited for
        messages before it began (the task before it ended where the wait began).
    shares
        Per row, the share of a core its burst had (CPU over wall seconds, at most 1), filled
        in when the burst ends: a task's CPU seconds are its wall seconds times it.
    """

    def __init__(self) -> None:
        self.rows: list[tuple] = []
        self.shares: list[float] = []
        self.running = False
        self.cpu0 = self.wall0 = 0.0

    def start(self) -> None:
        """Begin a burst (nothing if one is running)."""
        if not self.running:
            self.running = True
            self.cpu0 = time.thread_time()
            self.wall0 = time.perf_counter()

    def stop(self) -> None:
        """End the running burst: give its rows their share of its CPU time."""
        if not self.running:
            return
        self.running = False
        wall = time.perf_counter() - self.wall0
        share = min(1.0, (time.thread_time() - self.cpu0) / wall) if wall > 0 else 1.0
        self.shares.extend([share] * (len(self.rows) - len(self.shares)))


def batch_row(
    parts: np.ndarray,
    step: int,
    k: int,
    thread: int,
    stamps: np.ndarray,
    offset: float,
    waited: float,
    halo: np.ndarray | None = None,
    waits: np.ndarray | None = None,
) -> tuple:
    """A batched call's row of :attr:`ThreadClock.rows`: its tasks' ``parts`` and ``stamps``
    (ns), ``halo`` (ns of each task's copies, where it makes any) and ``waits`` (ns each task
    waited for messages before it began, where any did: only with ``halo``)."""
    row = (parts, step, k, thread, stamps, offset, waited)
    if halo is None:
        return row
    return (*row, halo) if waits is None else (*row, halo, waits)


class RunClock:
    """Where a rank's timeline starts, read when every rank leaves the barrier before step 0.

    Attributes
    ----------
    t0
        ``time.perf_counter()`` at the start of the first step, seconds (0 until
        :meth:`start`).
    stamp_offset
        Seconds to add to a batch's ``CLOCK_MONOTONIC`` stamp (ns × 1e-9) to get seconds since
        ``t0``.
    """

    def __init__(self) -> None:
        self.t0 = 0.0
        self.stamp_offset = 0.0

    def start(self) -> None:
        """Start the timeline now."""
        self.t0 = time.perf_counter()
        # Batches stamp tasks on CLOCK_MONOTONIC, perf_counter's clock on Linux; the offset
        # turns a stamp into seconds since t0 wherever the two differ.
        self.stamp_offset = time.perf_counter() - time.monotonic_ns() * 1e-9 - self.t0
