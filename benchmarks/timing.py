"""The one timer the benchmarks share: best wall time over repeated runs."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_of(
    fn: Callable[[], object], repeats: int, *, warm_up: bool = True, min_seconds: float = 0.0
) -> float:
    """Best wall time of one call of ``fn``, seconds, over ``repeats`` timed runs.

    Parameters
    ----------
    fn
        What to time.
    repeats
        Timed runs; the best is kept (the machine is shared and noisy).
    warm_up
        Call ``fn`` once first, so numba loads its cache (or compiles) outside the timing.
    min_seconds
        Each timed run loops enough calls to last at least this long, so the timer's
        resolution does not matter for very short calls; the result is per call.
    """
    if warm_up:
        fn()
    loops = 1
    if min_seconds > 0.0:
        start = time.perf_counter()
        fn()
        loops = max(1, int(min_seconds / max(time.perf_counter() - start, 1e-7)))
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        best = min(best, (time.perf_counter() - start) / loops)
    return best
