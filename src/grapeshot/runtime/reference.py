"""The bulk-synchronous reference: one partition per rank, blocking halo exchange.

This is how a plain MPI code is written (Birdshot's "reference" bar in figure 9): every rank
packs and sends its halos, waits for all of its neighbours' halos, runs the phase, and meets
the others in ``MPI_Allreduce`` where the physics needs a global value. Nothing overlaps.
It uses the program's own pack/unpack/kernels, so its fields equal the serial executor's.
"""

from __future__ import annotations

import time

import numpy as np

from grapeshot.exchange.collectives import ordered_allreduce
from grapeshot.model.errors import InputError
from grapeshot.model.program import (
    Context,
    Program,
    failure_text,
    make_block,
    neighbour_offsets,
)
from grapeshot.runtime.agreement import agreed
from grapeshot.runtime.results import RankResult
from grapeshot.runtime.timeline import TaskRecord, TaskRows
from grapeshot.runtime.warmup import warm_up
from grapeshot.runtime.watch import abort_run
from grapeshot.runtime.wire import HALO, MIGRANTS, decode_items, encode_items, stamp

_TAG = 13


def run_reference(program: Program, steps: int, *, comm) -> RankResult:
    """Run ``program`` with partition ``r`` on rank ``r`` (needs exactly one per rank)."""
    from mpi4py import MPI

    data, coll = comm.Dup(), comm.Dup()
    try:
        size, rank = data.Get_size(), data.Get_rank()
        if any(phase.graph is not None for phase in program.phases):
            raise InputError(
                "--executor reference",
                f"does not run graph exchanges ({program.name} has one)",
                "--executor task or serial",
            )
        if program.n_parts != size:
            raise InputError(
                "--executor reference",
                f"needs one partition per rank; got {program.n_parts} partitions on {size} ranks",
                f"--parts whose product is {size}",
            )
        boxes = program.boxes()
        box = boxes[rank]
        block = agreed(data, lambda: make_block(program, box))
        offsets = neighbour_offsets(len(program.parts_shape))
        slot_of = {o: i for i, o in enumerate(offsets)}
        ndim = len(program.parts_shape)

        def around(wanted) -> list[tuple[tuple[int, ...], int]]:
            return [(o, q) for o in wanted if (q := box.neighbour(o)) is not None]

        neighbours = around(offsets)
        # Each exchange's own neighbours (faces only for Exchange(corners=False)).
        halo_neighbours = {
            k: around(phase.exchange.offsets(ndim))
            for k, phase in enumerate(program.phases)
            if phase.exchange is not None
        }
        record = TaskRecord()
        work: list[int] = []
        halo_bytes: dict[tuple[int, int], int] = {}
        sent = [0, 0]

        def swap(kind, step, phase, payloads, neighbours):
            """Send one buffer to every neighbour; wait for one from each; slot order."""
            requests = []
            for (offset, q), payload in zip(neighbours, payloads, strict=True):
                slot = slot_of[tuple(-o for o in offset)]
                items = [] if payload is None else [(q, slot, payload)]
                raw = encode_items(step, phase, kind, items)
                stamp(raw)
                requests.append((data.Isend(raw, dest=q, tag=_TAG), raw))
                sent[0] += raw.nbytes
                sent[1] += 1
            got = {}
            status = MPI.Status()
            # By source: a neighbour may already have sent its next phase's buffer, and
            # messages from one source arrive in order.
            for _, q in neighbours:
                data.Probe(source=q, tag=_TAG, status=status)
                raw = np.empty(status.Get_count(MPI.BYTE), dtype=np.uint8)
                data.Recv(raw, source=q, tag=_TAG)
                for _, slot, payload in decode_items(raw):
                    got[slot] = payload
            MPI.Request.Waitall([r for r, _ in requests])
            return [got[s] for s in sorted(got)]

        warm_up(program, box)
        data.Barrier()
        t0 = time.perf_counter()
        ctx = Context(0, 0.0)
        for step in range(steps):
            ctx = Context(step, ctx.time + (program.advance(ctx) if step else 0.0))
            for k, phase in enumerate(program.phases):
                if phase.exchange is not None:
                    pack = phase.exchange.packer()
                    sides = halo_neighbours[k]
                    payloads = [pack(block, box, o) for o, _ in sides]
                    for (_, q), payload in zip(sides, payloads, strict=True):
                        halo_bytes[(rank, q)] = halo_bytes.get((rank, q), 0) + payload.nbytes
                    unpack = phase.exchange.unpacker()
                    arrived = swap(HALO, step, k, payloads, sides)
                    slots = sorted(slot_of[o] for o, _ in sides)
                    for payload, slot in zip(arrived, slots, strict=True):
                        unpack(block, box, offsets[slot], payload)
                    if phase.exchange.boundary is not None:
                        phase.exchange.boundary(block, box)
                start = time.perf_counter() - t0
                cpu = time.thread_time()
                try:
                    value = phase.call(block, box, ctx)
                    program.check_block(block, box, ctx, phase.name)
                except BaseException as exc:  # the neighbours would wait for us for ever
                    abort_run(
                        data, f"rank {rank}: " + failure_text(program, rank, step, phase.name, exc)
                    )
                cpu = time.thread_time() - cpu
                end = time.perf_counter() - t0
                for col, v in zip(
                    (
                        record.part,
                        record.step,
                        record.phase,
                        record.thread,
                        record.start,
                        record.end,
                        record.cpu,
                        record.wait,
                    ),
                    (rank, step, k, 0, start, end, cpu, 0.0),
                    strict=True,
                ):
                    col.append(v)
                if phase.reduce is not None:
                    ctx.values[phase.reduce.name] = ordered_allreduce(
                        {rank: value},
                        phase.reduce.combine,
                        comm=coll,
                        algorithm="mpi",
                        op=phase.reduce.op,
                    )
                if phase.migrate is not None:
                    leaving = phase.migrate.emigrate(block, box)
                    leavers = [leaving.get(o) for o, _ in neighbours]
                    arrived = swap(MIGRANTS, step, k, leavers, neighbours)
                    phase.migrate.immigrate(block, box, arrived)
            work.append(int(program.work(block, box)))
        wall = time.perf_counter() - t0
        return RankResult(
            rank=rank,
            blocks={rank: block},
            tasks=TaskRows(record=record),
            work={rank: work},
            wall=wall,
            threads=1,
            bytes_sent=sent[0],
            messages=sent[1],
            time=ctx.time + program.advance(ctx),
            halo_bytes=halo_bytes,
            started=t0,
        )
    finally:
        data.Free()
        coll.Free()
