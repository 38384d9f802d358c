"""Compile a program's kernels before the clock starts.

numba compiles (or loads from its cache) each kernel on its first call, which can take
longer than hundreds of real tasks; timed as the first tasks' cost it would be reported as
load imbalance, and with threads the others wait for it. :func:`warm_up` runs every phase
once on a throw-away copy of one partition's initial block, with no halo and a context
holding each reduction's local value, and packs and unpacks its custom halos (particles, a
message graph) on that copy, to itself. It is best effort: a program whose kernels cannot
run without their halos just compiles later, inside the run.
"""

from __future__ import annotations

import contextlib
import copy

from grapeshot.model.program import Block, Box, Context, Phase, Program, make_block


def warm_up(program: Program, box: Box) -> None:
    """Run each phase of ``program`` once on a copy of ``box``'s initial block; no effect."""
    block = copy.deepcopy(make_block(program, box))
    ctx = Context(step=0, time=0.0)
    with contextlib.suppress(Exception):
        for phase in program.phases:
            with contextlib.suppress(Exception):  # the phase's kernel is warmed either way
                _warm_exchanges(phase, block, box)
            if phase.exchange is not None and phase.exchange.boundary is not None:
                phase.exchange.boundary(block, box)
            value = phase.call(block, box, ctx)
            if phase.reduce is not None:
                ctx.values[phase.reduce.name] = float(value)
            if phase.migrate is not None:
                phase.migrate.immigrate(
                    block, box, list(phase.migrate.emigrate(block, box).values())
                )


def _warm_exchanges(phase: Phase, block: Block, box: Box) -> None:
    """Pack ``block``'s custom halos of ``phase`` and unpack them into it (its own copy):
    grid fields are copied by the runtime's own functions, warmed by the executor."""
    exchange, graph = phase.exchange, phase.graph
    if exchange is not None and exchange.pack is not None:
        offset = exchange.offsets(len(box.shape))[0]
        payload = exchange.packer()(block, box, offset)
        exchange.packer_all()(block, box, [offset])
        exchange.unpacker()(block, box, offset, payload)
    if graph is not None and len(graph.targets(box)):
        graph.unpack(block, box, [(box.part, graph.pack(block, box, 0))])
