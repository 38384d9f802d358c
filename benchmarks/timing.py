"""What the benchmarks share: the best-of timer, and one way to report a figure.

A figure is grapeshot's time against a baseline timed in the same run, with the check that
the two computed the same result (:func:`figure`); ``make bench`` gathers every figure into
``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import json
import os
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


#: Environment variable naming a JSON-lines file where :func:`figure` also records each
#: figure; ``benchmarks/run_all.py`` (``make bench``) sets it and tabulates the file.
FIGURES_ENV = "GRAPESHOT_BENCH_FIGURES"


def figure(
    name: str,
    ours: float,
    baseline: float,
    *,
    baseline_name: str,
    same: bool | None,
    unit: str = "s",
    target: float | None = None,
    note: str = "",
) -> float:
    """Print one measured figure against its baseline, and record it for ``RESULTS.md``.

    Parameters
    ----------
    name
        What was measured, e.g. ``"SPH 2-D density+force"``.
    ours, baseline
        Seconds of grapeshot's version and of the baseline, measured in the same run.
    baseline_name
        What the baseline is, e.g. ``"vectorised numpy, all candidate pairs"``.
    same
        Whether the two results were checked equal (within the tolerance the benchmark
        states) in this run; ``None`` when the baseline computes something else (a scale).
    unit
        Unit of ``ours`` and ``baseline`` (seconds unless stated).
    target
        The goal on the ratio ``baseline / ours``, if there is one.
    note
        Anything the reader needs beside the numbers (sizes, tolerance).

    Returns
    -------
    float
        The ratio ``baseline / ours`` (how many times faster ours is).
    """
    ratio = baseline / ours
    verdict = "" if target is None else ("PASS" if ratio >= target else "MISS")
    check = {True: "equal", False: "DIFFERENT", None: "n/a"}[same]
    goal = "" if target is None else f"  target >= {target:g}x {verdict}"
    print(
        f"  figure: {name}: ours {ours:.4g} {unit}, baseline {baseline:.4g} {unit} "
        f"({baseline_name}), ratio {ratio:.1f}x, results {check}{goal}"
    )
    path = os.environ.get(FIGURES_ENV)
    if path:
        record = {
            "name": name,
            "ours": ours,
            "baseline": baseline,
            "baseline_name": baseline_name,
            "unit": unit,
            "ratio": ratio,
            "same": same,
            "target": target,
            "verdict": verdict,
            "note": note,
        }
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")
    return ratio
