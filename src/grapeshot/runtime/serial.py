"""The serial executor: the reference every other executor must reproduce.

It runs a :class:`~grapeshot.model.program.Program` in one process, partition by partition,
phase by phase, in partition-id order, moving halo buffers by copy. It times each kernel by
two clocks, the thread's CPU time and the wall clock, and records the trace (cost, work
counts, halo bytes per neighbour pair). A trace's cost in seconds is the CPU time
(:attr:`SerialRun.cpu`): on a shared machine the wall clock also counts the time another
process held the core, which is no partition's cost (the task runtime's busy time is CPU time
too, :class:`~grapeshot.runtime.timeline.ThreadClock`).
As the task runtime does, it compiles (or loads) the kernels before the first step
(:func:`~grapeshot.runtime.warmup.warm_up`), so the kernels' seconds are theirs, not
numba's; what numba still compiles during the steps is counted
(:attr:`SerialRun.compile_seconds`). :func:`run_phase` is one phase of a step, in any order
of the partitions (``grapeshot check`` shuffles them).
"""

from __future__ import annotations

import functools
import gc
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from grapeshot.model.errors import GrapeshotError, InputError
from grapeshot.model.fields import assemble_fields, fields_digest
from grapeshot.model.program import (
    Block,
    Box,
    Context,
    Exchange,
    GraphExchange,
    Offset,
    Phase,
    Program,
    TaskFailed,
    failure_text,
    make_block,
    neighbour_offsets,
)
from grapeshot.model.workload import HaloGraph, Workload

#: ``progress(step_done, steps)`` after every step.
Progress = Callable[[int, int], None]


@dataclass
class SerialRun:
    """What a serial run leaves: final state and the recorded trace.

    Attributes
    ----------
    blocks
        Final block of every partition, in partition-id order.
    seconds
        float64, ``(steps, P)``: the kernels' wall-clock seconds per partition per step
        (their phases summed), time the core was taken by another process included.
    work
        int64, ``(steps, P)``: the program's work count per partition per step.
    halo_bytes
        ``{(src, dst): bytes}`` summed over the run.
    time
        Simulated time reached.
    compile_seconds, compiled
        Seconds numba spent compiling during the steps (inside :attr:`seconds`) and the
        functions it compiled: a kernel meeting argument types the warm-up did not give it.
    cpu
        float64, ``(steps, P)``: the kernels' CPU seconds, as :attr:`seconds`, by the
        calling thread's CPU clock (``time.thread_time``): the trace's cost. ``None`` when
        not measured.
    thread_cpu_seconds, other_cpu_seconds
        CPU seconds of this thread and of the process's other threads during the steps: a
        kernel that runs on other threads too (numba ``parallel=True``, a threaded BLAS)
        does work the thread's clock does not see, and shows here.
    preemptions
        Times the system took this thread's core during the steps (involuntary context
        switches; ``None`` where the system does not say, off Linux). The CPU clock leaves
        out the time away but not what coming back costs (the switch, the caches refilled):
        on a busy 2-core virtual machine a 12 µs kernel preempted once measured about 90 µs
        of CPU, so preemptions still show, as noise.
    """

    program: Program
    boxes: list[Box]
    blocks: list[Block]
    seconds: np.ndarray
    work: np.ndarray
    halo_bytes: dict[tuple[int, int], int]
    time: float
    compile_seconds: float = 0.0
    compiled: list[str] = field(default_factory=list)
    cpu: np.ndarray | None = None
    thread_cpu_seconds: float = 0.0
    other_cpu_seconds: float = 0.0
    preemptions: int | None = None

    def fields(self) -> dict[str, np.ndarray]:
        """Final output fields over the whole domain."""
        outputs = [
            self.program.output_fields(b, x) for b, x in zip(self.blocks, self.boxes, strict=True)
        ]
        return assemble_fields(self.boxes, outputs, self.program.particle_fields)

    def digest(self) -> str:
        """Hash of the final fields (equal across executors when the results are bitwise)."""
        return fields_digest(self.fields())

    def workload(self, units: str = "s", clock: str = "cpu") -> Workload:
        """The recorded trace as a :class:`Workload`.

        Parameters
        ----------
        units
            ``"s"``: measured seconds; ``"work"``: the work counts.
        clock
            The seconds the cost holds with ``units="s"``: ``"cpu"`` (:attr:`cpu`, the
            default) or ``"wall"`` (:attr:`seconds`). The wall-clock seconds are kept as
            :attr:`Workload.wall` whatever the cost holds.
        """
        if clock not in CLOCKS:
            raise InputError("--clock", f"got {clock!r}", f"one of {', '.join(CLOCKS)}")
        if clock == "cpu" and self.cpu is None:
            raise InputError("clock", "cpu: this run measured no CPU time", "clock='wall'")
        steps = self.seconds.shape[0]
        n = self.program.n_parts
        pairs = sorted(self.halo_bytes)
        src = np.array([p[0] for p in pairs], dtype=np.int64)
        dst = np.array([p[1] for p in pairs], dtype=np.int64)
        nbytes = np.array([self.halo_bytes[p] for p in pairs], dtype=np.int64) // max(steps, 1)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
        if units == "s":
            cost = self.cpu if clock == "cpu" else self.seconds
        else:
            cost = self.work.astype(np.float64)
        return Workload(
            domain_shape=self.program.domain_shape,
            parts_shape=self.program.parts_shape,
            cost=cost,
            halo=HaloGraph(indptr, dst, nbytes),
            units=units,
            work=self.work,
            app=self.program.name,
            scene=self.program.scene,
            clock=clock if units == "s" else "",
            wall=self.seconds,
        )


#: The clocks a kernel is timed by: the calling thread's CPU time, the wall clock.
CLOCKS = ("cpu", "wall")


@functools.cache
def cpu_clock_resolution(samples: int = 5, limit: float = 0.5) -> float:
    """The smallest step of the thread CPU clock (``time.thread_time``) seen here, seconds.

    Reads the clock until it changes, ``samples`` times (at most ``limit`` wall seconds
    in all), and keeps the smallest change. On Linux the clock counts nanoseconds and this
    is the cost of reading it (0.3 to 1.5 µs); a clock that advances by scheduler ticks
    (some kernels and virtual machines; Windows) shows its tick (1 to 16 ms). ``inf`` when it
    never changed.
    """
    best = math.inf
    deadline = time.perf_counter() + limit
    for _ in range(samples):
        t0 = t1 = time.thread_time_ns()
        while t1 == t0 and time.perf_counter() < deadline:
            t1 = time.thread_time_ns()
        if t1 > t0:
            best = min(best, (t1 - t0) * 1e-9)
    return best


def preemptions() -> int | None:
    """Involuntary context switches of the calling thread so far (``None`` off Linux)."""
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw
    except (ImportError, AttributeError, OSError):
        return None


def run_serial(
    program: Program,
    steps: int,
    *,
    progress: Progress | None = None,
    blocks: list[Block] | None = None,
    start_step: int = 0,
    start_time: float = 0.0,
    warm: bool = True,
) -> SerialRun:
    """Run ``program`` for ``steps`` steps in this process.

    Parameters
    ----------
    program
        The program to run.
    steps
        Number of steps (>= 1).
    progress
        Called after each step with (steps done, steps).
    blocks, start_step, start_time
        Resume from given state instead of ``program.init_block``.
    warm
        Compile (or load) the kernels before the first step, on a throw-away copy of the
        first partition's initial block (:func:`~grapeshot.runtime.warmup.warm_up`), so that
        compiling is not timed as the first partition's cost. ``False`` when they are warm
        already (a resumed run).
    """
    from numba.core.event import install_listener  # numba: not for `trace --help`

    from grapeshot.runtime.compile_clock import CompileClock
    from grapeshot.runtime.warmup import warm_up

    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise InputError("--steps", f"got {steps!r}", "an integer >= 1")
    boxes = program.boxes()
    n = len(boxes)
    if blocks is None:
        blocks = [make_block(program, box) for box in boxes]
    if warm:
        warm_up(program, boxes[0])
    seconds = np.zeros((steps, n))
    cpu = np.zeros((steps, n))
    work = np.zeros((steps, n), dtype=np.int64)
    halo_bytes: dict[tuple[int, int], int] = {}
    compiles = CompileClock()
    t = start_time
    process0, thread0, switched0 = time.process_time(), time.thread_time(), preemptions()
    with install_listener("numba:compile", compiles):
        for s in range(steps):
            ctx = Context(step=start_step + s, time=t)
            for phase in program.phases:
                run_phase(
                    program, phase, boxes, blocks, ctx, halo_bytes=halo_bytes,
                    seconds=seconds[s], cpu=cpu[s],
                )  # fmt: skip
            for p, (box, block) in enumerate(zip(boxes, blocks, strict=True)):
                work[s, p] = program.work(block, box)
            t += program.advance(ctx)
            if progress is not None:
                progress(s + 1, steps)
    thread = time.thread_time() - thread0
    other = max(0.0, time.process_time() - process0 - thread)
    switched1 = preemptions()
    switched = None if switched0 is None or switched1 is None else switched1 - switched0
    return SerialRun(
        program, boxes, blocks, seconds, work, halo_bytes, t, compiles.seconds, compiles.names,
        cpu, thread, other, switched,
    )  # fmt: skip


def run_phase(
    program: Program,
    phase: Phase,
    boxes: list[Box],
    blocks: list[Block],
    ctx: Context,
    *,
    halo_bytes: dict[tuple[int, int], int] | None = None,
    seconds: np.ndarray | None = None,
    cpu: np.ndarray | None = None,
    order: Sequence[int] | None = None,
) -> list[Any]:
    """One phase of a step on every partition, in this process: its graph exchange, halo
    exchange, kernel (and ``check_block``), reduction (into ``ctx.values``) and migration.

    Parameters
    ----------
    halo_bytes
        ``{(src, dst): bytes}``, accumulated.
    seconds, cpu
        float64 ``(P,)``: each partition's kernel seconds by the wall clock, and by this
        thread's CPU clock, are added to its entry. The clocks are read only for those given
        (a read of the CPU clock is a system call, about a microsecond).
    order
        The partition ids in the order their kernels run, and their halos are packed and
        unpacked (each partition's own buffers still in the canonical order); default: id
        order. The results do not depend on it for a program that keeps to the program
        API's conventions.

    Returns
    -------
    list
        The kernel's return value on each partition, in partition-id order.

    Raises
    ------
    TaskFailed
        When a kernel raises, naming its partition, step and phase.
    """
    order = range(len(boxes)) if order is None else order
    if phase.graph is not None:
        graph_exchange_all(phase.graph, boxes, blocks, halo_bytes, order=order)
    if phase.exchange is not None:
        exchange_all(phase.exchange, boxes, blocks, halo_bytes=halo_bytes, order=order)
    results: list[Any] = [None] * len(boxes)
    timed = seconds is not None or cpu is not None
    # Python's cycle collector waits while the kernels are timed: a collection (milliseconds
    # in a process holding numba's objects) would land in whichever partition's kernel
    # allocated past the threshold, as noise; it runs at the next allocation after the loop.
    held = timed and gc.isenabled()
    if held:
        gc.disable()
    try:
        _run_kernels(program, phase, boxes, blocks, ctx, order, results, seconds, cpu)
    finally:
        if held:
            gc.enable()
    if phase.reduce is not None:
        ctx.values[phase.reduce.name] = phase.reduce.combine(results)
    if phase.migrate is not None:
        offsets = neighbour_offsets(len(program.parts_shape))
        _migrate(phase.migrate, boxes, blocks, offsets, order)
    return results


def _run_kernels(program, phase, boxes, blocks, ctx, order, results, seconds, cpu) -> None:
    """The kernel (and ``check_block``) of ``phase`` on each partition in ``order``, timed
    into ``seconds`` (wall clock) and ``cpu`` (this thread's CPU clock) where given."""
    timed = seconds is not None or cpu is not None
    wall0 = cpu0 = 0.0
    for p in order:
        box, block = boxes[p], blocks[p]
        if timed:
            # The wall clock outside the CPU clock: a kernel's wall time holds its CPU time.
            wall0 = time.perf_counter()
            cpu0 = time.thread_time()
        try:
            value = phase.call(block, box, ctx)
        except GrapeshotError:
            raise
        except Exception as exc:  # the user's kernel: one line naming the task
            raise TaskFailed(failure_text(program, p, ctx.step, phase.name, exc)) from exc
        if timed:
            cpu1 = time.thread_time()
            wall1 = time.perf_counter()
            if cpu is not None:
                cpu[p] += cpu1 - cpu0
            if seconds is not None:
                seconds[p] += wall1 - wall0
        program.check_block(block, box, ctx, phase.name)
        results[p] = value


def exchange_all(
    exchange: Exchange,
    boxes: list[Box],
    blocks: list[Block],
    offsets: tuple[Offset, ...] | None = None,
    halo_bytes: dict[tuple[int, int], int] | None = None,
    order: Sequence[int] | None = None,
) -> None:
    """One halo exchange between all partitions in one process (the reference's order).

    ``offsets`` defaults to the exchange's own (:meth:`Exchange.offsets`: faces only with
    ``corners=False``). ``halo_bytes`` (if given) accumulates the bytes packed per
    ``(src, dst)`` pair. ``order``: the partitions in the order they pack, then unpack
    (default: id order).
    """
    offsets = offsets or exchange.offsets(len(boxes[0].parts_shape))
    halo_bytes = {} if halo_bytes is None else halo_bytes
    order = range(len(boxes)) if order is None else order
    pack, unpack = exchange.packer(), exchange.unpacker()
    # Pack everything before unpacking anything, as concurrent executors do; unpack each
    # partition's buffers in neighbour_offsets order, the canonical order of every executor.
    sent: dict[tuple[int, tuple[int, ...]], np.ndarray] = {}
    for src in order:
        box, block = boxes[src], blocks[src]
        for offset in offsets:
            dst = box.neighbour(offset)
            if dst is not None:
                payload = pack(block, box, offset)
                sent[(src, offset)] = payload
                halo_bytes[(src, dst)] = halo_bytes.get((src, dst), 0) + payload.nbytes
    for p in order:
        box, block = boxes[p], blocks[p]
        for offset in offsets:
            src = box.neighbour(offset)
            if src is not None:
                unpack(block, box, offset, sent[(src, tuple(-o for o in offset))])
    if exchange.boundary is not None:
        for p in order:
            exchange.boundary(blocks[p], boxes[p])


def graph_exchange_all(
    graph: GraphExchange,
    boxes: list[Box],
    blocks: list[Block],
    halo_bytes: dict[tuple[int, int], int] | None = None,
    *,
    order: Sequence[int] | None = None,
) -> None:
    """One round of a graph exchange between all partitions in one process.

    Every partition packs first (in ``order``, default id order); then each unpacks (in
    ``order``) its arrivals ordered by sender id and, for one sender, by destination
    position (the canonical order of every executor).
    """
    halo_bytes = {} if halo_bytes is None else halo_bytes
    order = range(len(boxes)) if order is None else order
    arrived: list[list[tuple[int, int, np.ndarray]]] = [[] for _ in boxes]
    for src in order:
        box, block = boxes[src], blocks[src]
        for j, dst in enumerate(graph.targets(box)):
            buf = graph.pack(block, box, j)
            arrived[int(dst)].append((src, j, buf))
            key = (src, int(dst))
            halo_bytes[key] = halo_bytes.get(key, 0) + buf.nbytes
    for p in order:
        got = sorted(arrived[p], key=lambda item: item[:2])  # the canonical order
        graph.unpack(blocks[p], boxes[p], [(src, buf) for src, _, buf in got])


def _migrate(migration, boxes, blocks, offsets, order) -> None:
    leaving: list[dict[Offset, np.ndarray]] = [{} for _ in boxes]
    for p in order:
        leaving[p] = migration.emigrate(blocks[p], boxes[p])
    for p in order:
        box, block = boxes[p], blocks[p]
        arrived = []
        for offset in offsets:
            src = box.neighbour(offset)
            if src is None:
                continue
            back = tuple(-o for o in offset)
            if back in leaving[src]:
                arrived.append(leaving[src][back])
        migration.immigrate(block, box, arrived)


def run_recorded(
    program: Program,
    steps: int,
    *,
    every: int | None = None,
    on_frame: Callable[[int, float, dict[str, np.ndarray]], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SerialRun:
    """Run ``program`` serially for ``steps`` steps, in chunks of ``every`` steps.

    After step 0 and after every chunk (the last one may be shorter), ``on_frame(step,
    time, fields)`` sees the assembled fields. The chunks resume from the previous chunk's
    blocks, step and time, so the result is the same, bit for bit, as one run; the recorded
    traces are concatenated.

    Returns
    -------
    SerialRun
        As :func:`run_serial` would return for one run of ``steps`` steps.
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise InputError("--steps", f"got {steps!r}", "an integer >= 1")
    chunk = steps if every is None else every
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise InputError("--every", f"got {every!r}", "an integer >= 1")
    boxes = program.boxes()
    blocks: list[Block] = [make_block(program, box) for box in boxes]
    if on_frame is not None:
        outputs = [program.output_fields(b, x) for b, x in zip(blocks, boxes, strict=True)]
        on_frame(0, 0.0, assemble_fields(boxes, outputs, program.particle_fields))
    seconds, cpu, work = [], [], []
    compile_seconds, compiled, thread_cpu, other_cpu = 0.0, [], 0.0, 0.0
    switched: int | None = 0
    halo: dict[tuple[int, int], int] = {}
    done, t = 0, 0.0
    while done < steps:
        n = min(chunk, steps - done)
        base = done

        def tick(k: int, _n: int, base: int = base) -> None:
            if progress is not None:
                progress(base + k, steps)

        run = run_serial(
            program, n, progress=tick, blocks=blocks, start_step=done, start_time=t,
            warm=done == 0,
        )  # fmt: skip
        blocks, t, done = run.blocks, run.time, done + n
        seconds.append(run.seconds)
        cpu.append(run.cpu)
        work.append(run.work)
        compile_seconds += run.compile_seconds
        compiled += run.compiled
        thread_cpu += run.thread_cpu_seconds
        other_cpu += run.other_cpu_seconds
        if switched is not None:
            switched = None if run.preemptions is None else switched + run.preemptions
        for pair, nbytes in run.halo_bytes.items():
            halo[pair] = halo.get(pair, 0) + nbytes
        if on_frame is not None:
            on_frame(done, t, run.fields())
    return SerialRun(
        program, boxes, blocks, np.vstack(seconds), np.vstack(work), halo, t,
        compile_seconds, compiled, np.vstack(cpu), thread_cpu, other_cpu, switched,
    )  # fmt: skip
