"""What one rank of the task runtime reports: its counters while it runs, its partitions'
work counts per step, and the :class:`RankResult` it leaves.

:class:`Tally` is shared by every part of the runner (messages, halos, reductions, migration),
each adding what it did; it is plain numbers so that adding costs nothing measurable.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from grapeshot.model.program import Block
from grapeshot.runtime.halo_plan import pair_sums
from grapeshot.runtime.rank_plan import RankPlan
from grapeshot.runtime.timeline import TaskRows


@dataclass(kw_only=True)
class RankResult:
    """What one rank leaves after :func:`~grapeshot.runtime.executor.run_tasks` (keywords
    only: twenty-two fields, several of one type, are not told apart by position)."""

    rank: int
    blocks: dict[int, Block]
    tasks: TaskRows
    #: ``{partition: its work count per step}`` (a list or an int array ``(steps,)``).
    work: Mapping[int, Sequence[int]]
    wall: float
    threads: int
    bytes_sent: int
    messages: int
    time: float
    #: ``{(source partition, destination partition): bytes}`` of the segment's halos; with
    #: ``halo_links``, the grid exchanges' are not in it yet: int64 ``(src, dst, bytes)`` per
    #: link of each exchange, summed by pair when the run is gathered
    #: (:meth:`RankResult.halo_pairs`).
    halo_bytes: dict[tuple[int, int], int]
    #: ``(source rank, bytes, seconds from send posted to receive complete)`` per message
    #: this rank received.
    message_log: list[tuple[int, int, float]] = field(default_factory=list)
    halo_links: list[tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
    #: Seconds spent in global reductions, and how many there were.
    reduce_seconds: float = 0.0
    reductions: int = 0
    #: The main thread's time outside tasks, seconds: packing, unpacking and copying halos
    #: and emigrants (``halo``); blocked on messages, reductions and workers (``wait``); and
    #: the rest, the runtime's own bookkeeping (``serial``). With ``copied_bytes``, the bytes
    #: those copies moved, they are what the simulator's calibration fits.
    halo_seconds: float = 0.0
    wait_seconds: float = 0.0
    #: ``serial_seconds`` as known, or ``None``: the wall less the main thread's tasks, halo
    #: and wait seconds, summed when first read (the task runtime's: not in a rebalance's
    #: pause).
    serial: float | None = 0.0
    copied_bytes: int = 0
    #: ``time.perf_counter()`` on this rank when its first step started (every rank leaves
    #: the barrier before it together); the wall before it is the run's set-up.
    started: float = 0.0
    #: Seconds this rank's threads waited, summed, to hold the GIL again after their batched
    #: calls' compiled code ended, and how many such returns there were: a GIL convoy among
    #: the threads shows here (near zero otherwise).
    gil_seconds: float = 0.0
    gil_returns: int = 0
    #: Seconds numba spent compiling while the steps ran (counted in ``wall``), and what it
    #: compiled: a kernel called with types the warm-up did not give it.
    compile_seconds: float = 0.0
    compiled: list[str] = field(default_factory=list)

    @property
    def serial_seconds(self) -> float:
        """The main thread's seconds outside tasks, halos and waits: the runtime's own."""
        if self.serial is None:
            main_tasks = self.tasks.sums()[2]
            self.serial = max(0.0, self.wall - main_tasks - self.halo_seconds - self.wait_seconds)
        return self.serial

    def halo_pairs(self) -> dict[tuple[int, int], int]:
        """``{(source partition, destination partition): bytes}`` of every halo of the
        segment."""
        total = dict(self.halo_bytes)
        if self.halo_links:
            links = map(np.concatenate, zip(*self.halo_links, strict=True))
            for pair, nbytes in pair_sums(*links).items():
                total[pair] = total.get(pair, 0) + nbytes
        return total

    def loads(self, kind: str) -> tuple[np.ndarray, np.ndarray]:
        """This rank's partitions and their loads in each step of the segment: int64
        ``(L,)`` and float64 ``(steps, L)``; ``kind`` ``"work"``: the work counts,
        ``"cpu"``: the thread CPU seconds of each partition's tasks (all its phases)."""
        if kind == "work" and isinstance(self.work, WorkColumns):  # parts ascending already
            return np.array(self.work.parts, dtype=np.int64), self.work.rows.astype(np.float64)
        parts = np.array(sorted(self.work), dtype=np.int64)
        steps = len(self.work[int(parts[0])]) if parts.size else 0
        if kind == "work":
            counts = [self.work[p] for p in parts.tolist()]
            return parts, np.array(counts, dtype=np.float64).reshape(parts.size, steps).T
        tasks = self.tasks.arrays()
        seconds = np.zeros((steps, parts.size))
        if tasks["step"].size:
            row = tasks["step"] - tasks["step"].min()
            np.add.at(seconds, (row, np.searchsorted(parts, tasks["part"])), tasks["cpu"])
        return parts, seconds


@dataclass
class Tally:
    """A rank's running counters, each part of the runner adding its own.

    Attributes
    ----------
    bytes_sent, messages
        Bytes and messages this rank sent (halos, graph buffers, migrants).
    copied_bytes
        Bytes the main thread's copies moved (packing, unpacking, local halos, messages).
    halo_seconds
        Main-thread seconds packing, unpacking and copying halos and emigrants.
    wait_seconds
        Main-thread seconds blocked on messages, reductions and workers.
    reduce_seconds, reductions
        Seconds in global reductions (also counted in ``wait_seconds``), and how many.
    message_log
        ``(source rank, bytes, seconds from send posted to receive complete)`` per message
        received.
    """

    bytes_sent: int = 0
    messages: int = 0
    copied_bytes: int = 0
    halo_seconds: float = 0.0
    wait_seconds: float = 0.0
    reduce_seconds: float = 0.0
    reductions: int = 0
    message_log: list[tuple[int, int, float]] = field(default_factory=list)

    def reset(self) -> None:
        """Count afresh, in this object every part of the runner holds (a run's next
        segment); what was read before keeps its values."""
        vars(self).update(vars(Tally()))


class WorkLog:
    """Each local partition's work count per step (``Program.work``), kept the cheapest way
    the plan allows.

    With every phase batched nothing rebinds a block's array, so a batch's ``Batch.work``
    field holds every partition's count at fixed places of the arena (one index a step); with
    the default ``Program.work`` counting cells the counts are the same every step; otherwise
    ``Program.work`` is called per partition.
    """

    def __init__(self, plan: RankPlan) -> None:
        program, local = plan.program, plan.local
        self.plan = plan
        self.work: dict[int, list[int]] = {p: [] for p in local}
        #: One int array ``(L,)`` per step, when counts are read for the whole rank at once.
        self.rows: list[np.ndarray] = []
        #: ``(flat work field, base of each local partition)`` when a batch names it.
        self.at: tuple[np.ndarray, np.ndarray] | None = None
        #: Cells of each local partition, ``(L,)``, when those are the counts.
        self.cells: np.ndarray | None = None
        named = {batch.work for batch in plan.batches.values()} - {None}
        if plan.all_batched and len(named) == 1:
            w = named.pop()
            self.at = (plan.arena.flat[w], plan.arena.bases(w))  # the arena's order: local's
        elif plan.all_batched and not program.counts_work:
            self.cells = np.array([math.prod(plan.boxes[p].shape) for p in local], np.int64)

    def record(self, counts: np.ndarray | None = None) -> None:
        """Keep each local partition's work count of the step just done (``counts``, int
        ``(L,)``: read already, :attr:`at`'s entries at the step's end)."""
        if counts is not None:
            self.rows.append(counts)
            return
        if self.at is not None:  # every count in one index (Batch.work)
            flat, bases = self.at
            self.rows.append(flat[bases])
            return
        if self.cells is not None:
            self.rows.append(self.cells)
            return
        plan = self.plan
        program, blocks, boxes = plan.program, plan.blocks, plan.boxes
        for p in plan.local:
            self.work[p].append(int(program.work(blocks[p], boxes[p])))

    def take(self) -> Mapping[int, Sequence[int]]:
        """``{partition: counts per step}`` of every step recorded: lists, or the columns of
        one int array ``(steps, L)`` (:class:`WorkColumns`) where the rank's counts were read
        at once; counting starts afresh (a run's next segment, on the same plan)."""
        if self.rows:
            columns = WorkColumns(self.plan.local, np.stack(self.rows))
            self.rows = []
            return columns
        lists, self.work = self.work, {p: [] for p in self.plan.local}
        return lists


class WorkColumns(Mapping[int, np.ndarray]):
    """``{partition: its counts per step}`` over one int array ``(steps, L)``, a column per
    local partition (``parts``, ascending), each made when read: a segment's end made them
    all, 60-100 µs of a rebalance's pause at 16×16, for the run's end to read them."""

    def __init__(self, parts: list[int], rows: np.ndarray) -> None:
        self.parts, self.rows = parts, rows
        self._at: dict[int, int] | None = None

    def __getitem__(self, p: int) -> np.ndarray:
        if self._at is None:
            self._at = {q: i for i, q in enumerate(self.parts)}
        return self.rows[:, self._at[p]]

    def __iter__(self) -> Iterator[int]:
        return iter(self.parts)

    def __len__(self) -> int:
        return len(self.parts)
