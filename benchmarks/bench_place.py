"""Time every static placement strategy on 1,000,000 partitions and 1,024 nodes.

Run: ``python benchmarks/bench_place.py``. For a 1000 x 1000 and a 100 x 100 x 100 partition
grid, on 1,024 equal nodes (32 cores each) and on 1,024 heterogeneous nodes (16, 32, 48 or 64
cores, cycling), prints the best-of-3 wall time (after one warm-up call, which also loads or
compiles the numba kernels) of each strategy in the registry, its ratio to a numpy baseline of
the same size measured in this run (one ``rng.permutation(1_000_000)``, the core of Birdshot's
placement), and PASS/MISS against the 1 s goal. Numbers only; no plotting, no asserts.
"""

from __future__ import annotations

import math

import numpy as np

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


if __name__ == "__main__":
    main()
