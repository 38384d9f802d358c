"""Time every static placement strategy on 1,000,000 partitions and 1,024 nodes.

Run: ``python benchmarks/bench_place.py [--large]``. For a 1000 x 1000 and a 100 x 100 x 100
partition grid, on 1,024 equal nodes (32 cores each) and on 1,024 heterogeneous nodes (16, 32,
48 or 64 cores, cycling), prints the best-of-3 wall time (after one warm-up call, which also
loads or compiles the numba kernels) of each strategy in the registry, its ratio to a numpy
baseline of the same size measured in this run (one ``rng.permutation(1_000_000)``, the core of
Birdshot's placement), and PASS/MISS against the 1 s goal. Numbers only; no plotting, no asserts.

``--large`` (``make bench`` passes it) adds the exascale case of issue 25: 100,000,000
partitions (10,000 x 10,000) on 1,000,000 cores (31,250 nodes x 32; the issue wrote 1,048,576).
Each strategy runs in a fresh child process (after a small warm-up call there that loads the
numba kernels), best of 2, and is paired with a child timing
``np.random.default_rng(s).permutation(100_000_000)`` just before it, the baseline; the child
reports its own peak RSS (``ru_maxrss``, the whole process: interpreter, numpy, numba and the
placement) and checks the placement is valid: every partition on a node in range and every node
holding exactly its quota (so Birdshot is balanced to within one partition per core). Goals:
Birdshot <= 0.5x the permutation, every strategy <= 1.6x, peak < 4 GiB; each is a figure in
``RESULTS.md`` (the time ratio is printed there as baseline / ours, so <= 0.5x is a target of
>= 2x and <= 1.6x one of >= 0.625x; the peak is against the 4 GiB goal, a scale). A child that
finds an invalid placement exits with an error, and so does this benchmark.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np

from grapeshot.place.quota import quotas
from grapeshot.place.static import STATIC_STRATEGIES
from timing import best_of, figure

SHAPES = [(1000, 1000), (100, 100, 100)]
NODES = 1024
MACHINES = {
    "equal": np.full(NODES, 32, dtype=np.int64),
    "mixed": np.resize(np.array([16, 32, 48, 64], dtype=np.int64), NODES),
}
GOAL_SECONDS = 1.0
REPEATS = 3
SEED = 2024


def main() -> None:
    n_parts = math.prod(SHAPES[0])
    rng = np.random.default_rng(SEED)
    t_base = best_of(lambda: rng.permutation(n_parts), REPEATS)
    print(
        f"static placement of {n_parts:,} partitions on {NODES:,} nodes "
        f"(best of {REPEATS}, after warm-up)"
    )
    print(f"baseline: rng.permutation({n_parts:_}) = {t_base * 1e3:.1f} ms")
    print(f"{'grid':>13} {'nodes':>6} {'strategy':>10} {'time':>11} {'ratio':>8}  goal")
    all_pass = True
    for shape in SHAPES:
        grid = "x".join(map(str, shape))
        for machine, cores in MACHINES.items():
            for name, fn in STATIC_STRATEGIES.items():
                t = best_of(
                    lambda fn=fn, shape=shape, cores=cores: fn(shape, cores, seed=SEED), REPEATS
                )
                verdict = "PASS" if t < GOAL_SECONDS else "MISS"
                all_pass &= verdict == "PASS"
                print(
                    f"{grid:>13} {machine:>6} {name:>10} {t * 1e3:>8.1f} ms {t / t_base:>8.2f}  "
                    f"{verdict} (< {GOAL_SECONDS:g} s)"
                )
    print(f"every static strategy under {GOAL_SECONDS:g} s: {'PASS' if all_pass else 'MISS'}")
    t_bird = best_of(
        lambda: STATIC_STRATEGIES["birdshot"](SHAPES[0], MACHINES["equal"], seed=SEED), 3
    )
    figure(
        f"birdshot placement, {n_parts:,} partitions on {NODES:,} nodes",
        t_bird,
        t_base,
        baseline_name=f"one rng.permutation({n_parts:_}), a scale",
        same=None,
    )


LARGE_SHAPE = (10_000, 10_000)
LARGE_NODES = 31_250
LARGE_CORES = 32
LARGE_REPEATS = 2
#: Most time of one placement over the permutation's (birdshot, everything else).
LARGE_GOAL_BIRDSHOT = 0.5
LARGE_GOAL = 1.6
LARGE_PEAK_GIB = 4.0
BASELINE = "baseline"


def large_child(case: str) -> dict:
    """One large case in this (fresh) process: best-of time, peak RSS, validity."""
    n_parts = math.prod(LARGE_SHAPE)
    cores = np.full(LARGE_NODES, LARGE_CORES, dtype=np.int64)
    if case == BASELINE:
        rng = np.random.default_rng(SEED)
        seconds = best_of(lambda: rng.permutation(n_parts), LARGE_REPEATS, warm_up=False)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 2**30  # KiB
        return {"seconds": seconds, "peak_gib": peak, "valid": True}
    fn = STATIC_STRATEGIES[case]
    fn((1000, 1000), cores[:64], seed=SEED)  # numba kernels loaded, outside the timing
    node_of = None

    def place() -> None:
        nonlocal node_of
        node_of = None  # the previous result is freed first, as a caller's would be
        node_of = fn(LARGE_SHAPE, cores, seed=SEED)

    seconds = best_of(place, LARGE_REPEATS, warm_up=False)
    # The peak is read before the check, which needs a little memory of its own.
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 2**30  # KiB on Linux
    counts = np.zeros(LARGE_NODES, dtype=np.int64)
    in_range = node_of.dtype == np.int32 and node_of.shape == (n_parts,)
    for chunk in np.array_split(node_of, 100):
        in_range = in_range and int(chunk.min()) >= 0 and int(chunk.max()) < LARGE_NODES
        if in_range:
            counts += np.bincount(chunk, minlength=LARGE_NODES)
    valid = in_range and np.array_equal(counts, quotas(n_parts, cores))
    return {"seconds": seconds, "peak_gib": peak, "valid": bool(valid)}


def run_child(case: str) -> dict:
    """Run :func:`large_child` for ``case`` in a fresh interpreter and return its report."""
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", case],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"the {case} child failed (exit status {proc.returncode})")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main_large() -> bool:
    """The 100M-partition case; returns whether every placement was valid."""
    n_parts = math.prod(LARGE_SHAPE)
    n_cores = LARGE_NODES * LARGE_CORES
    grid = "x".join(f"{x:_}" for x in LARGE_SHAPE)
    print()
    print(
        f"large: {n_parts:_} partitions ({grid}) on {n_cores:_} cores ({LARGE_NODES:_} nodes x "
        f"{LARGE_CORES}), each case in a fresh process, best of {LARGE_REPEATS}"
    )
    print(
        f"{'strategy':>10} {'time':>9} {'baseline':>9} {'ours/base':>9}  {'goal':<16} "
        f"{'peak RSS':>9}  goal"
    )
    all_valid = True
    for name in STATIC_STRATEGIES:
        base = run_child(BASELINE)
        ours = run_child(name)
        all_valid &= ours["valid"]
        goal = LARGE_GOAL_BIRDSHOT if name == "birdshot" else LARGE_GOAL
        share = ours["seconds"] / base["seconds"]
        time_ok = "PASS" if share <= goal else "MISS"
        peak_ok = "PASS" if ours["peak_gib"] < LARGE_PEAK_GIB else "MISS"
        print(
            f"{name:>10} {ours['seconds']:>7.2f} s {base['seconds']:>7.2f} s {share:>8.2f}x  "
            f"{time_ok} (<= {goal:g}x){'':<3} {ours['peak_gib']:>5.2f} GiB  {peak_ok} "
            f"(< {LARGE_PEAK_GIB:g} GiB){'' if ours['valid'] else '  INVALID PLACEMENT'}"
        )
        what = f"{name} placement, {n_parts:,} partitions on {n_cores:,} cores"
        figure(
            what,
            ours["seconds"],
            base["seconds"],
            baseline_name=f"one rng.permutation({n_parts:_}), same run (a scale)",
            same=None,
            target=1.0 / goal,
            note=f"goal: at most {goal:g}x the permutation's time",
        )
        figure(
            f"{name} placement peak RSS, {n_parts:,} partitions",
            ours["peak_gib"],
            LARGE_PEAK_GIB,
            baseline_name=(
                f"the {LARGE_PEAK_GIB:g} GiB goal (a scale; the permutation's process "
                f"peaks at {base['peak_gib']:.2f} GiB)"
            ),
            same=None,
            unit="GiB",
            target=1.0,
            note="peak RSS of a fresh process doing only this placement",
        )
    print(f"every large placement valid: {'yes' if all_valid else 'NO'}")
    return all_valid


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--large", action="store_true", help="add 100M partitions on 31,250 nodes x 32 cores"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(large_child(args.child)))
    else:
        main()
        if args.large and not main_large():
            sys.exit(1)
