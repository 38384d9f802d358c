"""Time the exact expected LIF for n = 10,000 nodes against a numpy baseline of the same size.

Run: ``python benchmarks/bench_lif.py``. Prints, per (s, p), the best-of-repeats wall time of
:func:`grapeshot.theory.lif.expected_lif` (binomial model: mean and three quantiles, exact),
the same for one numpy/scipy baseline of the same size measured in this run (the binomial CDF
over the support ``0..s`` raised to the n-th power, i.e. the naive ``F(k)^n`` table), their
ratio, and PASS/MISS against the 50 ms goal. Then, for context, the exact fixed-count route and
the advisor at the same n. Numbers only; no plotting, no asserts.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import stats

from grapeshot.theory.advisor import advise
from grapeshot.theory.lif import expected_lif
from timing import best_of

NODES = 10_000
CASES = [(64, 0.5), (256, 0.05), (1000, 0.5), (4096, 0.1)]
GOAL_SECONDS = 0.050
REPEATS = 7


def baseline(s: int, p: float) -> Callable[[], object]:
    k = np.arange(s + 1)
    return lambda: stats.binom.cdf(k, s, p) ** NODES


def main() -> None:
    print(f"exact E[LIF], binomial model, n = {NODES} nodes (best of {REPEATS}, after warm-up)")
    print(f"{'s':>6} {'p':>5} {'E[LIF]':>9} {'exact':>11} {'baseline':>11} {'ratio':>7}  goal")
    all_pass = True
    for s, p in CASES:
        mean = expected_lif(NODES, s, p).mean
        t_exact = best_of(lambda s=s, p=p: expected_lif(NODES, s, p), REPEATS, min_seconds=0.02)
        t_base = best_of(baseline(s, p), REPEATS, min_seconds=0.02)
        verdict = "PASS" if t_exact < GOAL_SECONDS else "MISS"
        all_pass &= verdict == "PASS"
        print(
            f"{s:>6} {p:>5g} {mean:>9.5f} {t_exact * 1e3:>8.3f} ms {t_base * 1e3:>8.3f} ms "
            f"{t_exact / t_base:>7.2f}  {verdict} (< {GOAL_SECONDS * 1e3:.0f} ms)"
        )
    print(f"binomial exact E[LIF] at n = {NODES}: {'PASS' if all_pass else 'MISS'}")

    print("\nfor context (no goal):")
    for s, p in [(100, 0.5), (1000, 0.5)]:
        r = expected_lif(NODES, s, p, model="fixed-count")
        t = best_of(
            lambda s=s, p=p: expected_lif(NODES, s, p, model="fixed-count"), 3, min_seconds=0.02
        )
        print(
            f"  fixed-count n = {NODES}, s = {s}, p = {p:g}: {r.method}, E[LIF] = {r.mean:.5f}, "
            f"{t * 1e3:.1f} ms"
        )
    a = advise(NODES, 0.5, 0.05, cores_per_node=36)
    t = best_of(lambda: advise(NODES, 0.5, 0.05, cores_per_node=36), 3, min_seconds=0.02)
    print(
        f"  advise n = {NODES}, p = 0.5, target 0.05, 36 cores: s = {a.parts_per_node}, "
        f"k = {a.parts_per_core}/core, eq. 2 s = {a.parts_per_node_eq2}: {t * 1e3:.1f} ms"
    )


if __name__ == "__main__":
    main()
