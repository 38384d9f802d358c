"""The example programs' kernels as a plain MPI code would run them: one block per rank.

What a competent user writes without grapeshot: the domain cut into one block per rank
(``--split 2,1`` cuts the first axis, ``1,2`` the second), each rank's block padded with one
ghost layer, and every sweep a blocking ``Sendrecv`` of the faces with the neighbouring
blocks, then the example's own numba kernel (imported from ``examples/program/``) called on
the whole block. No tasks, no threads, no overlap. Programs: ``front`` and ``allen-cahn``
(``front.py``, ``allen_cahn.py``) and ``heat`` (``heat.py``'s light kernel, ``make_heat``). It
is the hand-written baseline of ``benchmarks/bench_micro_partitions.py`` and
``benchmarks/bench_user_kernel.py``, which check its fields equal, bit for bit, to grapeshot's
run of the same program.

Run it (from the repository root)::

    mpiexec -n 2 .venv/bin/python benchmarks/mpi4py_block.py front --split 2,1 --json

It prints (rank 0) the wall time of the steps (the slowest rank's, as ``grapeshot run``
reports it), each rank's busy time (CPU seconds in the kernel) and idle time, the set-up
before the steps and the gathering after them, and the SHA-256 digest of the final fields
(:func:`grapeshot.model.fields.fields_digest`, the one ``grapeshot run`` prints).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples" / "program"))
sys.path.insert(0, str(ROOT / "src"))

import allen_cahn  # noqa: E402
import front  # noqa: E402
import heat  # noqa: E402

from grapeshot.model.fields import fields_digest  # noqa: E402
from grapeshot.model.program import Context, KernelBox  # noqa: E402

#: ``(step, sweep) -> params``: the kernel's params for sweep 0 (``u`` into ``v``) or 1
#: (back) of a step.
SweepParams = Callable[[int, int], np.ndarray]


@dataclass(frozen=True)
class BlockProgram:
    """One example as the block code needs it.

    Attributes
    ----------
    kernel
        The example's numba kernel ``(u, out, work, box, params)``.
    initial
        ``(lo, hi, domain, seed) -> u`` on the cells ``lo .. hi - 1`` (float64, shape
        ``hi - lo``).
    params
        ``(domain, seed) -> SweepParams``: what the kernel gets at each sweep.
    default_cells, default_steps
        The sizes the benchmarks use.
    """

    kernel: Callable
    initial: Callable[[tuple[int, int], tuple[int, int], tuple[int, int], int], np.ndarray]
    params: Callable[[tuple[int, int], int], SweepParams]
    default_cells: tuple[int, int]
    default_steps: int


def _constant(params: np.ndarray) -> Callable[[tuple[int, int], int], SweepParams]:
    return lambda domain, seed: lambda step, sweep: params


def _front_initial(lo, hi, domain, seed):
    return front.initial_front(lo, hi, domain, front.front_axes(seed))


def _allen_cahn_initial(lo, hi, domain, seed):
    # The example draws the whole plate from its seed; a block keeps its own cells.
    return allen_cahn.initial_allen_cahn(domain, seed)[lo[0] : hi[0], lo[1] : hi[1]].copy()


def _heat_initial(lo, hi, domain, seed):
    return np.zeros((hi[0] - lo[0], hi[1] - lo[1]))


def _heat_params(domain, seed) -> SweepParams:
    # The torch's path is the example's (its seed picks where on its orbit it starts); a
    # step is two half-steps, so step k starts at time 2k.
    plate = heat.make_heat((1, 1), domain, seed)

    def params(step: int, sweep: int) -> np.ndarray:
        ctx = Context(step, 2.0 * step)
        return plate.params_even(ctx) if sweep == 0 else plate.params_odd(ctx)

    return params


#: The programs by name (the names ``grapeshot run`` prints as ``app``); ``heat`` is the
#: light kernel (``make_heat``).
PROGRAMS = {
    "front": BlockProgram(
        front.front_step, _front_initial,
        _constant(front.front_params(front.SUBSTEPS, front.NEWTON)), front.DEFAULT_CELLS, 200,
    ),
    "allen-cahn": BlockProgram(
        allen_cahn.allen_cahn_step, _allen_cahn_initial,
        _constant(allen_cahn.allen_cahn_params(allen_cahn.NEWTON)), allen_cahn.DEFAULT_CELLS,
        200,
    ),
    "heat": BlockProgram(heat.heat_step, _heat_initial, _heat_params, heat.DEFAULT_CELLS, 100),
}  # fmt: skip


def get_program(name: str) -> BlockProgram:
    """The program called ``name``; a ``ValueError`` listing the names otherwise."""
    try:
        return PROGRAMS[name]
    except KeyError:
        raise ValueError(
            f"unknown program {name!r}; expected one of {', '.join(PROGRAMS)}"
        ) from None


@dataclass
class BlockRun:
    """What :func:`run_block` measured (rank 0; ``fields`` is ``None`` on the others).

    Attributes
    ----------
    wall_time
        Seconds of the steps on the slowest rank.
    busy, idle
        Per rank, CPU seconds in the kernel and the rest of the steps' wall time.
    setup_seconds, gather_seconds
        Rank 0's seconds before the steps (blocks, first state, loading the kernel) and
        after them (gathering the fields, the digest).
    fields
        ``{"u": float64 (nx, ny)}``: the final field over the whole plate.
    digest
        :func:`~grapeshot.model.fields.fields_digest` of ``fields``.
    """

    wall_time: float
    busy: list[float]
    idle: list[float]
    setup_seconds: float
    gather_seconds: float
    fields: dict[str, np.ndarray] | None
    digest: str | None


def _cuts(n: int, k: int) -> np.ndarray:
    """``k + 1`` cell indices cutting ``n`` cells into ``k`` blocks within one cell."""
    return (np.arange(k + 1) * n) // k


def run_block(
    name: str,
    cells: tuple[int, int],
    steps: int,
    split: tuple[int, int],
    *,
    seed: int = 0,
    comm=None,
) -> BlockRun:
    """Run program ``name`` on ``comm``'s ranks, one block each, for ``steps`` steps (two
    sweeps each, ``u`` into ``v`` then back, as the examples' two phases), with the faces
    exchanged before each sweep.

    Parameters
    ----------
    cells
        Cells per axis of the whole plate.
    split
        Blocks per axis; their product is the number of ranks. Rank ``r`` holds block
        ``divmod(r, split[1])``.
    """
    from mpi4py import MPI

    started = time.perf_counter()
    comm = MPI.COMM_WORLD if comm is None else comm
    size, rank = comm.Get_size(), comm.Get_rank()
    program = get_program(name)
    px, py = split
    if px * py != size:
        raise ValueError(f"--split {px},{py} makes {px * py} blocks; expected {size} (the ranks)")
    ix, iy = divmod(rank, py)
    xs, ys = _cuts(cells[0], px), _cuts(cells[1], py)
    lo, hi = (int(xs[ix]), int(ys[iy])), (int(xs[ix + 1]), int(ys[iy + 1]))
    nx, ny = hi[0] - lo[0], hi[1] - lo[1]
    # Neighbours by face; PROC_NULL beyond a wall makes its Sendrecv a no-op (the kernel
    # fills the wall's ghost cells itself).
    null = MPI.PROC_NULL
    west = rank - py if ix > 0 else null
    east = rank + py if ix < px - 1 else null
    south = rank - 1 if iy > 0 else null
    north = rank + 1 if iy < py - 1 else null

    u = np.zeros((nx + 2, ny + 2))
    u[1:-1, 1:-1] = program.initial(lo, hi, tuple(cells), seed)
    v = u.copy()
    work = np.zeros(1, dtype=np.int64)
    box = KernelBox(rank, lo, hi, (nx, ny), 1, tuple(cells))
    params = program.params(tuple(cells), seed)
    # Load (or compile) the kernel before the clock starts, on copies: no effect.
    program.kernel(u.copy(), v.copy(), work.copy(), box, params(0, 0))
    # Columns are strided: they travel through these buffers.
    col_out, col_in = np.empty(nx), np.empty(nx)

    def exchange(f: np.ndarray) -> None:
        """Fill ``f``'s ghost faces from the neighbouring blocks' edge cells."""
        # Rows (first axis) are contiguous: straight from and into ``f``.
        comm.Sendrecv(f[nx, 1:-1], dest=east, sendtag=0, recvbuf=f[0, 1:-1], source=west,
                      recvtag=0)  # fmt: skip
        comm.Sendrecv(f[1, 1:-1], dest=west, sendtag=1, recvbuf=f[nx + 1, 1:-1], source=east,
                      recvtag=1)  # fmt: skip
        if north == null and south == null:
            return
        col_out[:] = f[1:-1, ny]
        comm.Sendrecv(col_out, dest=north, sendtag=2, recvbuf=col_in, source=south, recvtag=2)
        if south != null:
            f[1:-1, 0] = col_in
        col_out[:] = f[1:-1, 1]
        comm.Sendrecv(col_out, dest=south, sendtag=3, recvbuf=col_in, source=north, recvtag=3)
        if north != null:
            f[1:-1, ny + 1] = col_in

    comm.Barrier()
    setup = time.perf_counter() - started
    busy = 0.0
    t0 = time.perf_counter()
    for step in range(steps):
        for sweep, (src, dst) in enumerate(((u, v), (v, u))):
            exchange(src)
            p = params(step, sweep)
            cpu = time.thread_time()
            program.kernel(src, dst, work, box, p)
            busy += time.thread_time() - cpu
    wall = time.perf_counter() - t0
    t1 = time.perf_counter()
    walls = comm.gather(wall, root=0)
    busies = comm.gather(busy, root=0)
    pieces = comm.gather((lo, hi, u[1:-1, 1:-1]), root=0)
    if rank != 0:
        return BlockRun(wall, [busy], [wall - busy], setup, 0.0, None, None)
    whole = np.empty(tuple(cells))
    for (a, b), (c, d), piece in pieces:
        whole[a:c, b:d] = piece
    fields = {"u": whole}
    digest = fields_digest(fields)
    slowest = max(walls)
    return BlockRun(
        slowest,
        busies,
        [slowest - b for b in busies],
        setup,
        time.perf_counter() - t1,
        fields,
        digest,
    )


def _pair(text: str) -> tuple[int, int]:
    a, b = (int(x) for x in text.split(","))
    return a, b


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("program", choices=sorted(PROGRAMS))
    parser.add_argument("--cells", type=_pair, help="cells per axis (default: the example's)")
    parser.add_argument("--steps", type=int, help="steps of two sweeps (default: the benchmark's)")
    parser.add_argument("--split", type=_pair, required=True, help="blocks per axis, e.g. 2,1")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="one JSON line for scripts")
    args = parser.parse_args(argv)
    program = get_program(args.program)
    cells = args.cells or program.default_cells
    steps = args.steps or program.default_steps
    result = run_block(args.program, cells, steps, args.split, seed=args.seed)
    if result.fields is None:
        return
    summary = {
        "app": args.program,
        "strategy": "mpi4py block",
        "split": list(args.split),
        "cells": list(cells),
        "steps": steps,
        "wall_time": result.wall_time,
        "busy": result.busy,
        "idle": result.idle,
        "setup_seconds": result.setup_seconds,
        "gather_seconds": result.gather_seconds,
        "fields_digest": result.digest,
    }
    if args.json:
        print(json.dumps(summary))
    else:
        busy = " / ".join(f"{b:.2f}" for b in result.busy)
        print(
            f"{args.program} {cells[0]}x{cells[1]}, {steps} steps, mpi4py blocks "
            f"{args.split[0]}x{args.split[1]}: wall {result.wall_time:.3f} s, busy {busy} s, "
            f"fields_digest {result.digest}"
        )


if __name__ == "__main__":
    main()
