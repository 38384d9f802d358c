"""The serial executor: the reference every other executor must reproduce.

It runs a :class:`~grapeshot.model.program.Program` in one process, partition by partition,
phase by phase, in partition-id order, moving halo buffers by copy. It measures each
kernel's seconds and records the trace (cost, work counts, halo bytes per neighbour pair).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

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
    Program,
    TaskFailed,
    failure_text,
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
        float64, ``(steps, P)``: measured kernel seconds per partition per step.
    work
        int64, ``(steps, P)``: the program's work count per partition per step.
    halo_bytes
        ``{(src, dst): bytes}`` summed over the run.
    time
        Simulated time reached.
    """

    program: Program
    boxes: list[Box]
    blocks: list[Block]
    seconds: np.ndarray
    work: np.ndarray
    halo_bytes: dict[tuple[int, int], int]
    time: float

    def fields(self) -> dict[str, np.ndarray]:
        """Final output fields over the whole domain."""
        outputs = [
            self.program.output_fields(b, x) for b, x in zip(self.blocks, self.boxes, strict=True)
        ]
        return assemble_fields(self.boxes, outputs, self.program.particle_fields)

    def digest(self) -> str:
        """Hash of the final fields (equal across executors when the results are bitwise)."""
        return fields_digest(self.fields())

    def workload(self, units: str = "s") -> Workload:
        """The recorded trace as a :class:`Workload` (``units="s"``: measured seconds)."""
        steps = self.seconds.shape[0]
        n = self.program.n_parts
        pairs = sorted(self.halo_bytes)
        src = np.array([p[0] for p in pairs], dtype=np.int64)
        dst = np.array([p[1] for p in pairs], dtype=np.int64)
        nbytes = np.array([self.halo_bytes[p] for p in pairs], dtype=np.int64) // max(steps, 1)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
        cost = self.seconds if units == "s" else self.work.astype(np.float64)
        return Workload(
            domain_shape=self.program.domain_shape,
            parts_shape=self.program.parts_shape,
            cost=cost,
            halo=HaloGraph(indptr, dst, nbytes),
            units=units,
            work=self.work,
            app=self.program.name,
            scene=self.program.scene,
        )


def run_serial(
    program: Program,
    steps: int,
    *,
    progress: Progress | None = None,
    blocks: list[Block] | None = None,
    start_step: int = 0,
    start_time: float = 0.0,
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
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise InputError("--steps", f"got {steps!r}", "an integer >= 1")
    boxes = program.boxes()
    n = len(boxes)
    if blocks is None:
        blocks = [program.init_block(box) for box in boxes]
    offsets = neighbour_offsets(len(program.parts_shape))
    seconds = np.zeros((steps, n))
    work = np.zeros((steps, n), dtype=np.int64)
    halo_bytes: dict[tuple[int, int], int] = {}
    t = start_time
    for s in range(steps):
        ctx = Context(step=start_step + s, time=t)
        for phase in program.phases:
            if phase.graph is not None:
                graph_exchange_all(phase.graph, boxes, blocks, halo_bytes)
            if phase.exchange is not None:
                exchange_all(phase.exchange, boxes, blocks, halo_bytes=halo_bytes)
            results = []
            for p, (box, block) in enumerate(zip(boxes, blocks, strict=True)):
                t0 = time.perf_counter()
                try:
                    value = phase.call(block, box, ctx)
                except GrapeshotError:
                    raise
                except Exception as exc:  # the user's kernel: one line naming the task
                    message = failure_text(program, p, start_step + s, phase.name, exc)
                    raise TaskFailed(message) from exc
                seconds[s, p] += time.perf_counter() - t0
                program.check_block(block, box, ctx, phase.name)
                results.append(value)
            if phase.reduce is not None:
                ctx.values[phase.reduce.name] = phase.reduce.combine(results)
            if phase.migrate is not None:
                _migrate(phase.migrate, boxes, blocks, offsets)
        for p, (box, block) in enumerate(zip(boxes, blocks, strict=True)):
            work[s, p] = program.work(block, box)
        t += program.advance(ctx)
        if progress is not None:
            progress(s + 1, steps)
    return SerialRun(program, boxes, blocks, seconds, work, halo_bytes, t)


def exchange_all(
    exchange: Exchange,
    boxes: list[Box],
    blocks: list[Block],
    offsets: tuple[Offset, ...] | None = None,
    halo_bytes: dict[tuple[int, int], int] | None = None,
) -> None:
    """One halo exchange between all partitions in one process (the reference's order).

    ``offsets`` defaults to the exchange's own (:meth:`Exchange.offsets`: faces only with
    ``corners=False``). ``halo_bytes`` (if given) accumulates the bytes packed per
    ``(src, dst)`` pair.
    """
    offsets = offsets or exchange.offsets(len(boxes[0].parts_shape))
    halo_bytes = {} if halo_bytes is None else halo_bytes
    pack, unpack = exchange.packer(), exchange.unpacker()
    # Pack everything before unpacking anything, as concurrent executors do; unpack each
    # partition's buffers in neighbour_offsets order, the canonical order of every executor.
    sent: dict[tuple[int, tuple[int, ...]], np.ndarray] = {}
    for src, (box, block) in enumerate(zip(boxes, blocks, strict=True)):
        for offset in offsets:
            dst = box.neighbour(offset)
            if dst is not None:
                payload = pack(block, box, offset)
                sent[(src, offset)] = payload
                halo_bytes[(src, dst)] = halo_bytes.get((src, dst), 0) + payload.nbytes
    for box, block in zip(boxes, blocks, strict=True):
        for offset in offsets:
            src = box.neighbour(offset)
            if src is not None:
                unpack(block, box, offset, sent[(src, tuple(-o for o in offset))])
    if exchange.boundary is not None:
        for box, block in zip(boxes, blocks, strict=True):
            exchange.boundary(block, box)


def graph_exchange_all(
    graph: GraphExchange,
    boxes: list[Box],
    blocks: list[Block],
    halo_bytes: dict[tuple[int, int], int] | None = None,
) -> None:
    """One round of a graph exchange between all partitions in one process.

    Every partition packs first; then each unpacks its arrivals ordered by sender id and, for
    one sender, by destination position (the canonical order of every executor).
    """
    halo_bytes = {} if halo_bytes is None else halo_bytes
    arrived: list[list[tuple[int, np.ndarray]]] = [[] for _ in boxes]
    for src, (box, block) in enumerate(zip(boxes, blocks, strict=True)):
        for j, dst in enumerate(graph.targets(box)):
            buf = graph.pack(block, box, j)
            arrived[int(dst)].append((src, buf))  # senders in id order: already canonical
            key = (src, int(dst))
            halo_bytes[key] = halo_bytes.get(key, 0) + buf.nbytes
    for box, block, got in zip(boxes, blocks, arrived, strict=True):
        graph.unpack(block, box, got)


def _migrate(migration, boxes, blocks, offsets) -> None:
    leaving = [migration.emigrate(block, box) for box, block in zip(boxes, blocks, strict=True)]
    for box, block in zip(boxes, blocks, strict=True):
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
    blocks: list[Block] = [program.init_block(box) for box in boxes]
    if on_frame is not None:
        outputs = [program.output_fields(b, x) for b, x in zip(blocks, boxes, strict=True)]
        on_frame(0, 0.0, assemble_fields(boxes, outputs, program.particle_fields))
    seconds, work = [], []
    halo: dict[tuple[int, int], int] = {}
    done, t = 0, 0.0
    while done < steps:
        n = min(chunk, steps - done)
        base = done

        def tick(k: int, _n: int, base: int = base) -> None:
            if progress is not None:
                progress(base + k, steps)

        run = run_serial(program, n, progress=tick, blocks=blocks, start_step=done, start_time=t)
        blocks, t, done = run.blocks, run.time, done + n
        seconds.append(run.seconds)
        work.append(run.work)
        for pair, nbytes in run.halo_bytes.items():
            halo[pair] = halo.get(pair, 0) + nbytes
        if on_frame is not None:
            on_frame(done, t, run.fields())
    return SerialRun(program, boxes, blocks, np.vstack(seconds), np.vstack(work), halo, t)
