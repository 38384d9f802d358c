"""Per-task timelines of one rank: every thread's task rows and CPU clock, and the run's clock.

A rank's tasks run on several threads; each thread appends its own rows (no lock on the hot
path) to its :class:`ThreadClock`, and :class:`TaskRecord` merges them at the end into the
columns a run record and a timeline keep.
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

        A batch row becomes its tasks' columns by whole arrays: at thousands of partitions a
        rank records hundreds of thousands of tasks, and a Python value per task and column
        (as before) cost about 0.6 µs a task in the gathering after the run.
        """
        names = ("part", "step", "phase", "thread", "start", "end", "wait", "halo", "cpu")
        pieces: dict[str, list] = {name: [] for name in names}
        singles: list[tuple] = []  # per-task rows since the last batch row, in order

        def flush() -> None:
            if singles:
                for name, column in zip(names, zip(*singles, strict=True), strict=True):
                    pieces[name].append(np.asarray(column))
                singles.clear()

        for clock in clocks:
            for row, cpu in zip(clock.rows, clock.cpu, strict=True):
                # The halo copies' wall seconds, at the same share of a core as the task.
                halo = row[7] * cpu / np.maximum(row[5] - row[4], 1e-12) if len(row) > 7 else 0.0
                if isinstance(row[0], np.ndarray):  # a batch: parts, starts, ends are arrays
                    flush()
                    n = row[0].size
                    for name, value in zip(names, (*row[:7], halo, cpu), strict=True):
                        pieces[name].append(
                            value if isinstance(value, np.ndarray) else np.full(n, value)
                        )
                else:
                    singles.append((*row[:7], halo, cpu))
        flush()
        record = cls()
        for name, kind in zip(names, (np.int64,) * 4 + (np.float64,) * 5, strict=True):
            chunks = [np.asarray(piece, dtype=kind) for piece in pieces[name]]
            setattr(record, name, np.concatenate(chunks) if chunks else np.zeros(0, kind))
        return record


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
        ``(part, step, phase, thread, start, end, wait[, halo])`` per task, or per batch of
        tasks with ``part``, ``start``, ``end`` (and ``halo``: wall seconds of the task's own
        halo copies) as arrays; times in seconds since :attr:`RunClock.t0`.
    cpu
        CPU seconds of each row (of each task of a batch row: one value for the batch), filled
        in when a burst ends.
    """

    def __init__(self) -> None:
        self.rows: list[tuple] = []
        self.cpu: list[float] = []
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
        self.cpu.extend((row[5] - row[4]) * share for row in self.rows[len(self.cpu) :])

    def main_seconds(self) -> float:
        """Wall seconds of every row (the main thread's time in tasks)."""
        total = 0.0
        for row in self.rows:  # a task's row holds floats: np.sum of one cost 3-7 µs a task
            span = row[5] - row[4]
            total += float(span.sum()) if isinstance(span, np.ndarray) else span
        return total


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
