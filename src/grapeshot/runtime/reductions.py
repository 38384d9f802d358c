"""One rank's global reductions: a phase's kernel values combined over every partition, in
partition order whatever the placement, on a communicator of their own."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from grapeshot.exchange.collectives import ordered_allreduce
from grapeshot.model.program import Context, Phase
from grapeshot.runtime.results import Tally
from grapeshot.runtime.watch import Watch

if TYPE_CHECKING:
    from mpi4py import MPI


class Reducer:
    """The global reductions of one rank (main thread).

    Parameters
    ----------
    comm
        The reductions' own communicator.
    algorithm
        ``"mpi"``, ``"linear"`` or ``"binomial"`` (:mod:`grapeshot.exchange.collectives`).
    local
        The rank's partitions, ascending (the order of the values).
    tally, watch
        Where the time is counted (as reduction and as waiting) and what is waited for told.
    """

    def __init__(
        self, comm: MPI.Intracomm, algorithm: str, local: Sequence[int], tally: Tally, watch: Watch
    ) -> None:
        self.comm = comm
        self.algorithm = algorithm
        self.local = local
        self.tally = tally
        self.watch = watch

    def reduce(self, phase: Phase, ctx: Context, values: Sequence) -> None:
        """Combine ``values`` (one per local partition, in ``local`` order) with every other
        rank's by ``phase.reduce`` and publish the result as ``ctx.values[name]``."""
        local = {p: values[i] for i, p in enumerate(self.local)}
        t0 = time.perf_counter()
        self.watch.waiting_for = f"step {ctx.step} phase {phase.name!r}: the global reduction"
        value = ordered_allreduce(
            local,
            phase.reduce.combine,
            comm=self.comm,
            algorithm=self.algorithm,
            op=phase.reduce.op,
        )
        tally = self.tally
        tally.reduce_seconds += time.perf_counter() - t0
        tally.wait_seconds += time.perf_counter() - t0
        tally.reductions += 1
        self.watch.progress_at = time.perf_counter()
        ctx.values[phase.reduce.name] = value
