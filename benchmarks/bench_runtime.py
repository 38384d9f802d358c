"""Task-runtime overhead, measured against the bulk-synchronous reference in the same run.

Run with two ranks (this machine's two cores):

    .venv/bin/mpiexec -n 2 .venv/bin/python benchmarks/bench_runtime.py

1. Empty kernels: the runtime's cost per task (no exchange) and per halo message (tiny
   halos between every pair of neighbouring partitions), from programs whose kernels do
   nothing.
2. A balanced stencil program, one partition per rank: task runtime vs the reference
   executor (Birdshot reports its runtime within 10% of MPI). Each is run ``REPEATS`` times,
   interleaved, and the best of each is compared: the ratio is task / reference.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from mpi4py import MPI
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from grapeshot.model.program import Exchange, Phase, Program, Reduction
from grapeshot.runtime.driver import run_program

REPEATS = 5


def _nothing(block, box, ctx):
    return None


def _one(block, box, ctx):
    return 1.0


class Empty(Program):
    """Kernels that do nothing; with ``exchange``, every phase swaps a one-cell halo; with
    ``reduce``, every phase ends in a global sum instead."""

    name = "empty"

    def __init__(
        self, parts: tuple[int, int], exchange: bool, phases: int = 4, reduce: bool = False
    ) -> None:
        self.parts_shape = parts
        self.domain_shape = (parts[0] * 2, parts[1] * 2)
        ex = Exchange(("u",), 1) if exchange else None
        red = Reduction("x", "sum") if reduce else None
        kernel = _one if reduce else _nothing
        self.phases = tuple(Phase(f"p{i}", kernel, exchange=ex, reduce=red) for i in range(phases))

    def init_block(self, box):
        return {"u": np.zeros(box.padded_shape)}

    def work(self, block, box):
        return 0

    def output_fields(self, block, box):
        return {"u": block["u"][box.interior()].copy()}


@njit(cache=True, nogil=True)
def _jacobi(u, out, sweeps):
    nx, ny = u.shape
    for _ in range(sweeps):
        for i in range(1, nx - 1):
            for j in range(1, ny - 1):
                out[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])
        for i in range(1, nx - 1):
            for j in range(1, ny - 1):
                u[i, j] = out[i, j]


class Balanced(Program):
    """A stencil over the whole domain: equal work on every partition."""

    name = "balanced"

    def __init__(self, parts: tuple[int, int], cells: int = 512, sweeps: int = 40) -> None:
        self.parts_shape = parts
        self.domain_shape = (cells, cells)
        self.sweeps = sweeps

        def smooth(block, box, ctx):
            _jacobi(block["u"], block["tmp"], self.sweeps)

        self.phases = (Phase("smooth", smooth, exchange=Exchange(("u",), 1)),)

    def init_block(self, box):
        u = np.zeros(box.padded_shape)
        u[box.interior()] = 1.0
        return {"u": u, "tmp": u.copy()}

    def work(self, block, box):
        return int(np.prod(box.shape))

    def output_fields(self, block, box):
        return {"u": block["u"][box.interior()].copy()}


def _wall(program: Program, steps: int, executor: str, comm, reduction: str = "mpi") -> float:
    comm.Barrier()
    t0 = time.perf_counter()
    run_program(
        program, steps=steps, strategy="geometric", seed=0, comm=comm, threads=1,
        executor=executor, reduction=reduction,
    )  # fmt: skip
    return comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)


def main() -> None:
    comm = MPI.COMM_WORLD
    size = comm.Get_size()
    say = print if comm.rank == 0 else (lambda *a, **k: None)
    steps = 50
    # Warm up numba and the code paths.
    _wall(Empty((size, 2), False), 2, "task", comm)
    _wall(Balanced((size, 1), sweeps=1), 2, "task", comm)
    _wall(Balanced((size, 1), sweeps=1), 2, "reference", comm)

    parts = (8 * size, 8)
    n_tasks = parts[0] * parts[1] * 4 * steps / size
    no_ex = min(_wall(Empty(parts, False), steps, "task", comm) for _ in range(3))
    with_ex = min(_wall(Empty(parts, True), steps, "task", comm) for _ in range(3))
    prog = Empty(parts, True)
    boxes = prog.boxes()
    halos = sum(
        1
        for b in boxes
        for o in ((-1, 0), (1, 0), (0, -1), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))
        if b.neighbour(o) is not None
    )
    per_rank_msgs = halos * 4 * steps / size
    say(
        f"empty kernels, {parts[0]}x{parts[1]} partitions on {size} ranks, {steps} steps x 4 phases"
    )
    say(f"  per task (no exchange):      {no_ex / n_tasks * 1e6:8.1f} us")
    say(
        f"  per halo buffer (pack, move, unpack; local and remote): "
        f"{(with_ex - no_ex) / per_rank_msgs * 1e6:8.1f} us"
    )

    say(f"global reductions (ordered sums of {parts[0] * parts[1]} values), per reduction:")
    for algorithm in ("mpi", "linear", "binomial"):
        best = np.inf
        for _ in range(3):
            outcome = run_program(
                Empty(parts, False, reduce=True), steps=steps, strategy="geometric", seed=0,
                comm=comm, threads=1, reduction=algorithm,
            )  # fmt: skip
            if outcome is not None:
                s = outcome.summary
                best = min(best, max(s["reduce_seconds"]) / s["reductions"])
        say(f"  {algorithm:<9} {best * 1e6:8.1f} us")

    balanced = Balanced((size, 1))
    task_times, ref_times = [], []
    for _ in range(REPEATS):
        task_times.append(_wall(balanced, 20, "task", comm))
        ref_times.append(_wall(balanced, 20, "reference", comm))
    ratio = min(task_times) / min(ref_times)
    say(f"balanced stencil, one partition per rank, {size} ranks, 20 steps (best of {REPEATS})")
    say(f"  reference (bulk-synchronous): {min(ref_times):.4f} s")
    say(f"  task runtime:                 {min(task_times):.4f} s")
    say(
        f"  ratio task/reference: {ratio:.3f}  -> {'PASS' if ratio <= 1.10 else 'MISS'} "
        "(target <= 1.10)"
    )


if __name__ == "__main__":
    main()
