"""Compile a program's kernels before the clock starts.

numba compiles (or loads from its cache) each kernel on its first call, which can take
longer than hundreds of real tasks; timed as the first tasks' cost it would be reported as
load imbalance. :func:`warm_up` runs every phase once on a throw-away copy of one
partition's initial block, with no halo and a context holding each reduction's local value.
It is best effort: a program whose kernels cannot run without their halos just compiles
later, inside the run.
"""

from __future__ import annotations

import contextlib
import copy

from grapeshot.model.program import Box, Context, Program


def warm_up(program: Program, box: Box) -> None:
    """Run each phase of ``program`` once on a copy of ``box``'s initial block; no effect."""
    block = copy.deepcopy(program.init_block(box))
    ctx = Context(step=0, time=0.0)
    with contextlib.suppress(Exception):
        for phase in program.phases:
            if phase.exchange is not None and phase.exchange.boundary is not None:
                phase.exchange.boundary(block, box)
            value = phase.call(block, box, ctx)
            if phase.reduce is not None:
                ctx.values[phase.reduce.name] = float(value)
            if phase.migrate is not None:
                phase.migrate.immigrate(
                    block, box, list(phase.migrate.emigrate(block, box).values())
                )
