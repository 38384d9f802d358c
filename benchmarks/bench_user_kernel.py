"""A user's plain kernel on real ranks: does a program written without a Batch gain from
micro-partitions, against the best one-block run? (issues 26 and 41)

Run from the repository root (it starts its own ``mpiexec``; about five minutes on a quiet
machine, twice that when other jobs share its cores):

    .venv/bin/python benchmarks/bench_user_kernel.py [--repeats 3]

The program is the tutorial's (``examples/program/heat.py``, docs/program-api.md): 2-D heat
with a torch circling over one corner of the plate, cells under the torch integrating a stiff
source in small steps, 100 steps (one turn of the torch), 2 ranks × 1 thread, every
grapeshot run through ``grapeshot run --app ... --json``:

1. **Light kernel** (``make_heat``, 2048 × 2048 cells): the one-block runs, geometric 2×1
   and 1×2 (one partition per rank) and the hand-written mpi4py block code of the same kernel
   (``benchmarks/mpi4py_block.py``, 2×1, ``Sendrecv`` halos); Birdshot 16×16 and 32×32. The
   baseline is the best of the three one-block runs in the same rounds, named in the output.
   Goals (issue 41): Birdshot 16×16 ≤ 0.70× and 32×32 ≤ 0.72× its wall time; 16×16 ≤ 0.9×
   its end to end (set-up + steps + gathering, what the user waits for; issue 26).
2. **Before**: the same kernel called from Python per partition (``make_wrapped`` here: a
   phase kernel ``(block, box, ctx)`` calling the numba function, as a user wrote it before
   the runtime batched plain kernels), Birdshot 16×16 and 32×32.
3. **Heavy kernel** (``make_heavy``, 1024 × 1024 cells, four times the substeps): Birdshot
   16×16, batched and called from Python. Goal: batched no slower than called from Python.

The example programs' front and uniform loads (``front.py``, ``allen_cahn.py``) are measured
by ``benchmarks/bench_micro_partitions.py``. Each row here is repeated ``--repeats`` times in
interleaved rounds and its best wall time kept. Every run's fields digest is checked equal
within its kernel (light or heavy): the placements, batched or not, and the block code
compute the same bits.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "examples" / "program"))

from heat import Heat, make_heat, make_heavy  # noqa: E402

from bench_micro_partitions import (  # noqa: E402
    BLOCK,
    check_goal,
    check_same_fields,
    interleaved_best,
    run,
)
from grapeshot.model.program import Phase  # noqa: E402
from timing import figure  # noqa: E402

HEAT = ROOT / "examples" / "program" / "heat.py"
HERE = Path(__file__).resolve()
#: The light kernel on the tutorial's plate, the heavy one on a quarter of it (its flame
#: costs four times as much a cell); 100 steps, one turn of the torch.
LIGHT = ["--cells", "2048,2048", "--steps", "100"]
HEAVY = ["--cells", "1024,1024", "--steps", "100"]
APP_LIGHT = ["--app", f"{HEAT}:make_heat", *LIGHT]
#: (label, arguments: grapeshot run's app or the block code's program, strategy, parts); the
#: first word is the kernel.
RUNS = (
    ("light geometric 2x1", APP_LIGHT, "geometric", "2,1"),
    ("light geometric 1x2", APP_LIGHT, "geometric", "1,2"),
    ("light mpi4py block 2x1", ["heat", *LIGHT], BLOCK, "2,1"),
    ("light birdshot 16x16", APP_LIGHT, "birdshot", "16,16"),
    ("light birdshot 32x32", APP_LIGHT, "birdshot", "32,32"),
    ("light birdshot 16x16, Python calls", ["--app", f"{HERE}:make_wrapped", *LIGHT],
     "birdshot", "16,16"),
    ("light birdshot 32x32, Python calls", ["--app", f"{HERE}:make_wrapped", *LIGHT],
     "birdshot", "32,32"),
    ("heavy birdshot 16x16", ["--app", f"{HEAT}:make_heavy", *HEAVY], "birdshot", "16,16"),
    ("heavy birdshot 16x16, Python calls", ["--app", f"{HERE}:make_wrapped_heavy", *HEAVY],
     "birdshot", "16,16"),
)  # fmt: skip
#: The one-block runs of the light kernel: the baseline is the fastest.
ONE_BLOCK = ("light geometric 2x1", "light geometric 1x2", "light mpi4py block 2x1")
#: Issue 41's goals on the light kernel: Birdshot's wall at most this many times the best
#: one-block run's.
GOALS = (("16x16", 0.70), ("32x32", 0.72))


def _wrapped(program: Heat) -> Heat:
    """``program`` with each phase's kernel called from Python, one call per partition."""
    phases = []
    for phase in program.phases:
        names, params, kernel = phase.fields, phase.params, phase.kernel

        def call(block, box, ctx, names=names, params=params, kernel=kernel):
            return kernel(*[block[n] for n in names], box.kernel_box, params(ctx))

        phases.append(Phase(phase.name, call, exchange=phase.exchange))
    program.phases = tuple(phases)
    return program


def make_wrapped(parts, cells=None, seed=0) -> Heat:
    """The light kernel, called from Python per partition (no batching)."""
    return _wrapped(make_heat(parts, cells, seed))


def make_wrapped_heavy(parts, cells=None, seed=0) -> Heat:
    """The heavy kernel, called from Python per partition (no batching)."""
    return _wrapped(make_heavy(parts, cells, seed))


def _end_to_end(s: dict) -> float:
    return s["setup_seconds"] + s["wall_time"] + s["gather_seconds"]


def _check(label: str, ok: bool, detail: str) -> None:
    print(f"  {'PASS' if ok else 'MISS'}  {label}: {detail}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="rounds; each row's best kept")
    args = parser.parse_args()
    rows = {label: rest for label, *rest in RUNS}

    def run_one(label: str) -> dict:
        app, strategy, parts = rows[label]
        return run(app, 2, 1, strategy, parts, None)

    # Compile each kernel and the loops around it once, outside the rounds (a short run).
    for factory, size in (("make_heat", LIGHT), ("make_heavy", HEAVY)):
        app = ["--app", f"{HEAT}:{factory}", *size[:2], "--steps", "1"]
        run(app, 2, 1, "birdshot", "8,8", None)
    best = interleaved_best(list(rows), run_one, args.repeats)
    for kind in ("light", "heavy"):
        check_same_fields(best, kind)
    print(
        f"best of {args.repeats} interleaved rounds, seed 0, 2 ranks, `grapeshot run --app ... "
        f"--json` (`{BLOCK}`: benchmarks/mpi4py_block.py)"
    )
    print(
        f"{'run':<38} {'wall s':>7} {'set-up s':>8} {'gather s':>8} {'end to end s':>12} "
        f"{'busy per rank s':>16}"
    )
    for label in rows:
        s = best[label]
        busy = " / ".join(f"{b:.2f}" for b in s["busy"])
        print(
            f"{label:<38} {s['wall_time']:7.3f} {s['setup_seconds']:8.3f} "
            f"{s['gather_seconds']:8.3f} {_end_to_end(s):12.3f} {busy:>16}"
        )
    wall = {label: s["wall_time"] for label, s in best.items()}
    base_label = min(ONE_BLOCK, key=lambda label: (wall[label], label))
    base = wall[base_label]
    print(
        f"checks (issues 26 and 41; baseline: {base_label}, the best one-block run of "
        f"{', '.join(ONE_BLOCK)}):"
    )
    for parts, at_most in GOALS:
        check_goal(f"light birdshot {parts}", wall[f"light birdshot {parts}"], base, base_label,
                   at_most)  # fmt: skip
    e2e_label = min(ONE_BLOCK, key=lambda label: (_end_to_end(best[label]), label))
    check_goal(
        "light birdshot 16x16", _end_to_end(best["light birdshot 16x16"]),
        _end_to_end(best[e2e_label]), e2e_label, 0.9,
        what="end to end (set-up + steps + gathering)",
    )  # fmt: skip
    for label in ("light birdshot 16x16", "light birdshot 32x32", "heavy birdshot 16x16"):
        ours, before = wall[label], wall[f"{label}, Python calls"]
        _check(
            f"{label}: batched plain kernel no slower than called from Python",
            ours <= before,
            f"{ours:.3f} s vs {before:.3f} s ({before / ours:.2f}x)",
        )
        figure(
            f"{label}, plain kernel batched vs called from Python",
            ours, before, same=True, target=1.0,
            baseline_name="the same numba kernel called once per partition from Python",
        )  # fmt: skip


if __name__ == "__main__":
    main()
