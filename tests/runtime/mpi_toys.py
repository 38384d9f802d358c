"""Run a toy program on MPI ranks with the given options; rank 0 prints the summary JSON.

Usage: python -m tests.runtime.mpi_toys PROGRAM EXECUTOR STRATEGY THREADS REDUCTION MIGRATE
"""

from __future__ import annotations

import json
import sys

from mpi4py import MPI

from grapeshot.apps import swe
from grapeshot.runtime.driver import run_program
from tests.runtime.toy_programs import (
    BatchedHeat,
    Dying,
    Failing,
    Heat,
    RebindThenBatch,
    SelfStampingBatch,
    Walkers,
)

PROGRAMS = {
    "heat": lambda: Heat(parts=(4, 3)),
    "heat4": lambda: Heat(parts=(2, 2)),
    "heat-batched": lambda: BatchedHeat(parts=(4, 3)),
    "rebind-then-batch": lambda: RebindThenBatch(parts=(4, 3)),
    "batch-failing": lambda: BatchedHeat(parts=(2, 2), fail_at=2),
    "self-stamping-batch": lambda: SelfStampingBatch(parts=(2, 2)),
    # CFL 3: the shallow-water stage goes negative at once; its batch flags the partition.
    "swe-unstable": lambda: swe.make_program("dambreak", (4, 2), cells=(64, 16), cfl=3.0),
    "walkers": lambda: Walkers(parts=(4, 2)),
    "failing": lambda: Failing(parts=(2, 2)),
    "dying": lambda: Dying(parts=(2, 2)),
}


def main() -> None:
    name, executor, strategy, threads, reduction, migrate = sys.argv[1:7]
    outcome = run_program(
        PROGRAMS[name](),
        steps=10,
        strategy=strategy,
        seed=1,
        comm=MPI.COMM_WORLD,
        threads=int(threads),
        executor=executor,
        reduction=reduction,
        migrate_at=None if migrate == "none" else int(migrate),
        timeout=30.0,
    )
    if outcome is not None:
        print(json.dumps(outcome.summary))


if __name__ == "__main__":
    main()
