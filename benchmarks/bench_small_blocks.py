"""The floor of micro-partitions on a uniform load: the kernel alone on small blocks, and
what the runtime adds to it.

Run from the repository root (it starts its own ``mpiexec``; about two minutes):

    .venv/bin/python benchmarks/bench_small_blocks.py [--repeats 5]

The kernel is ``examples/program/allen_cahn.py``'s ``allen_cahn_step`` (every cell the same
work), on a 1024 × 1024 plate.

1. **Alone.** One rank's half of the plate cut as one block per rank (1×2) and as Birdshot's
   8×8, 16×16 and 32×32 partitions: the blocks lie one after another in one array per field
   (as in the runtime's arena), and one compiled loop calls the kernel on each block for
   every sweep (u → v, then v → u), with no Python between calls and no halo exchange. The
   thread's CPU time, as the runtime's busy time is, best of 7; nanoseconds per cell and
   sweep. The ratio against the one block is what the kernel
   itself pays for small blocks (its loops' start-up per row and per block): the floor no
   runtime goes under.
2. **In the runtime.** ``grapeshot run --app allen_cahn.py:make_allen_cahn --cells 1024,1024
   --strategy birdshot`` on 2 ranks, 100 steps, ``--json``: the busy
   time (CPU seconds in tasks, both ranks) per cell and sweep, and the same less the tasks'
   own halo copies (``task_halo_seconds``). Against (1) at the same partitions: what the
   runtime adds to the kernel. Issue 41's goal: at most 3% at 64×64-cell partitions (16×16).

Every row runs once per round, ``--repeats`` rounds, and keeps its best.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "examples" / "program"))

from allen_cahn import allen_cahn_step, make_allen_cahn  # noqa: E402

from grapeshot.model.program import KernelBox  # noqa: E402
from timing import figure  # noqa: E402

CELLS = (1024, 1024)
SPLITS = ((1, 2), (8, 8), (16, 16), (32, 32))
SWEEPS = 20


@njit(cache=True, nogil=True)
def _sweeps(u, v, work, bases, table, params, sweeps):
    """``sweeps`` sweeps of every block, u → v then v → u; ``table`` rows: part, lo, hi,
    domain (2-D), ``bases``: where each block starts in ``u`` and ``v``."""
    for s in range(sweeps):
        for b in range(bases.size):
            r = table[b]
            n0, n1 = r[3] - r[1], r[4] - r[2]
            box = KernelBox(r[0], (r[1], r[2]), (r[3], r[4]), (n0, n1), 1, (r[5], r[6]))
            size = (n0 + 2) * (n1 + 2)
            a = u[bases[b] : bases[b] + size].reshape((n0 + 2, n1 + 2))
            c = v[bases[b] : bases[b] + size].reshape((n0 + 2, n1 + 2))
            if s % 2 == 0:
                allen_cahn_step(a, c, work[b : b + 1], box, params)
            else:
                allen_cahn_step(c, a, work[b : b + 1], box, params)


def alone(parts: tuple[int, int]) -> tuple[float, int]:
    """Seconds per cell and sweep of the kernel alone on one rank's half of the plate cut in
    ``parts``; and the cells of a block."""
    program = make_allen_cahn(parts, CELLS)
    boxes = program.boxes()[: program.n_parts // 2]  # one rank's half: the same blocks
    blocks = [program.init_block(b) for b in boxes]
    sizes = np.array([blk["u"].size for blk in blocks], dtype=np.int64)
    bases = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    u = np.concatenate([blk["u"].ravel() for blk in blocks])
    v = np.concatenate([blk["v"].ravel() for blk in blocks])
    work = np.zeros(len(boxes), dtype=np.int64)
    table = np.array(
        [[b.part, *b.lo, *b.hi, *b.domain_shape] for b in boxes], dtype=np.int64
    ).reshape(len(boxes), 7)
    params = program.kernel_params
    _sweeps(u, v, work, bases, table, params, 1)  # compiled (or loaded) outside the timing
    seconds = float("inf")
    for _ in range(7):  # CPU time, as the runtime's busy: a core taken away is not counted
        start = time.thread_time()
        _sweeps(u, v, work, bases, table, params, SWEEPS)
        seconds = min(seconds, time.thread_time() - start)
    cells = sum(int(np.prod(b.shape)) for b in boxes)
    return seconds / (cells * SWEEPS), int(np.prod(boxes[0].shape))


def in_runtime(parts: tuple[int, int]) -> tuple[float, float]:
    """(busy, busy less the tasks' halo copies) per cell and sweep of a 2-rank Birdshot run."""
    here = Path(sys.executable).parent / "mpiexec"
    cmd = [
        str(here) if here.exists() else "mpiexec", "-n", "2", sys.executable, "-m",
        "grapeshot.cli.main", "run", "--app",
        f"{ROOT / 'examples' / 'program' / 'allen_cahn.py'}:make_allen_cahn",
        "--cells", f"{CELLS[0]},{CELLS[1]}", "--parts", f"{parts[0]},{parts[1]}",
        "--strategy", "birdshot", "--steps", "100", "--seed", "0", "--json",
    ]  # fmt: skip
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    per = CELLS[0] * CELLS[1] * summary["steps"] * summary["phases"]
    busy = sum(summary["busy"])
    return busy / per, (busy - sum(summary["task_halo_seconds"])) / per


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="rounds; each row's best kept")
    args = parser.parse_args()
    # Rounds interleave every row (the kernel alone and the runtime runs): this machine's
    # speed drifts by a third over minutes, and a drift must hit both sides of a ratio.
    floor: dict[tuple[int, int], tuple[float, int]] = {}
    runtime: dict[tuple[int, int], tuple[float, float]] = {}
    for _ in range(max(1, args.repeats)):
        for parts in SPLITS:
            seconds, cells = alone(parts)
            floor[parts] = (min(seconds, floor.get(parts, (np.inf, 0))[0]), cells)
            if parts != (1, 2):
                got = in_runtime(parts)
                runtime[parts] = min(got, runtime.get(parts, (np.inf, np.inf)))
    one, _ = floor[(1, 2)]
    print(f"allen_cahn_step alone, {CELLS[0]}x{CELLS[1]} plate, one rank's half, ns per cell:")
    for parts, (seconds, cells) in floor.items():
        print(f"  {parts[0]}x{parts[1]} ({cells} cells a block): {seconds * 1e9:6.3f} ns")
        if parts != (1, 2):
            figure(
                f"allen_cahn_step alone on {parts[0]}x{parts[1]} blocks, per cell",
                seconds, one, baseline_name="the same kernel on one block per rank (1x2)",
                same=None, note="the kernel's own cost of small blocks (a scale)",
            )  # fmt: skip
    print("in the runtime (birdshot, 2 ranks, 100 steps), busy per cell and sweep:")
    for parts, (busy, kernels) in runtime.items():
        seconds = floor[parts][0]
        print(
            f"  {parts[0]}x{parts[1]}: busy {busy * 1e9:6.3f} ns ({busy / seconds - 1:+.1%} over "
            f"the kernel alone), less the tasks' halo copies {kernels * 1e9:6.3f} ns "
            f"({kernels / seconds - 1:+.1%})"
        )
        figure(
            f"allen_cahn busy in the runtime, birdshot {parts[0]}x{parts[1]}, per cell",
            busy, seconds, baseline_name="the kernel alone on the same blocks",
            same=None, target=1 / 1.03 if parts == (16, 16) else None,
            note="busy includes the tasks' own halo copies",
        )  # fmt: skip


if __name__ == "__main__":
    main()
