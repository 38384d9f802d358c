"""Run the mini-apps on MPI ranks in every configuration the runtime tests compare.

Usage: python -m tests.runtime.mpi_apps   (under mpiexec); rank 0 prints one JSON line per
run: {"app", "threads", "strategy", "migrate", "executor", "digest", "bytes_migrated",
"work", "task_halo"}.
"""

from __future__ import annotations

import itertools
import json
import sys

from mpi4py import MPI

from grapeshot.apps import get_app
from grapeshot.runtime.driver import run_program

STEPS = 6
#: (app, scene, partitions, cells): small, so that every configuration runs in seconds.
#: Shallow water's partitions differ in size (64 or 63 by 33 or 32 cells): its batches share
#: one partition's face records, which must fit every partition of the batch; and on one
#: rank its local halo copies are large enough to be shared out among the threads (a mound in
#: the middle, wet across partition borders from the start, so a halo missed shows).
CASES = [
    ("sph", "dambreak", (4, 2), (16, 8)),
    ("swe", "drop", (4, 2), (254, 65)),
    ("wavefront", "diagonal", (4, 2), (24, 16)),
]


def make(app: str, scene: str, parts, cells):
    return get_app(app).make_program(scene, parts, cells=cells)


#: Besides every case on two threads (its grid messages all through MPI), the batched app on
#: one thread per rank, where its tasks copy their own halos and pack the next phase's
#: messages (fused exchanges), with the messages between ranks written into each other's
#: inboxes through a shared-memory window and through MPI.
FUSED = ("swe",)


def configurations(app: str) -> list[tuple[int, bool]]:
    """``(threads, shm)`` runs of ``app``."""
    return [(2, False), *([(1, True), (1, False)] if app in FUSED else [])]


def main(only: list[str]) -> None:
    """Every case (or those of the apps ``only`` names) in each of its configurations."""
    comm = MPI.COMM_WORLD
    for app, scene, parts, cells in CASES:
        if only and app not in only:
            continue
        for threads, shm in configurations(app):
            for strategy, migrate in itertools.product(
                ("geometric", "birdshot"), (None, STEPS // 2)
            ):
                outcome = run_program(
                    make(app, scene, parts, cells),
                    steps=STEPS,
                    strategy=strategy,
                    seed=3,
                    comm=comm,
                    threads=threads,
                    shm=shm,
                    migrate_at=migrate,
                    timeout=60.0,
                )
                if outcome is not None:
                    s = outcome.summary
                    print(
                        json.dumps(
                            {
                                "app": app,
                                "threads": threads,
                                "shm": shm,
                                "strategy": strategy,
                                "migrate": migrate,
                                "executor": s["executor"],
                                "digest": s["fields_digest"],
                                "bytes_migrated": s["bytes_migrated"],
                                "work": outcome.work.sum(axis=1).tolist(),
                                "task_halo": sum(s["task_halo_seconds"]),
                            }
                        ),
                        flush=True,
                    )


if __name__ == "__main__":
    main(sys.argv[1:])
