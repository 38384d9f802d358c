"""Start-up time of the ``grapeshot`` command line against a bare ``python -c pass``.

Run: ``python benchmarks/bench_startup.py``. Each command runs in a fresh interpreter (the
venv's), best of several runs, after one warm-up run so the file cache and numba's on-disk
cache are hot. Prints, per command, its wall time, the bare interpreter's, the ratio of the two
and PASS/MISS against the 0.5 s goal of issue 15 for the commands that print help or a
formula. Numbers only; no plotting, no asserts.
"""

from __future__ import annotations

import subprocess
import sys

from timing import best_of, figure

GOAL_SECONDS = 0.5
REPEATS = 5
ENTRY = "from grapeshot.cli.main import main; main()"
COMMANDS: list[tuple[str, list[str]]] = [
    ("--help", ["--help"]),
    ("--version", ["--version"]),
    ("theorem1", "theorem1 --chares-per-node 64 --nodes 16 --alpha 0.05 --a 1 --b 2".split()),
    ("lif", "lif --nodes 16 --parts-per-node 8 --busy 0.5".split()),
    ("advise", "advise --nodes 16 --busy 0.5 --target-lif 0.1".split()),
    ("run --help", ["run", "--help"]),
]


def _runner(argv: list[str]) -> object:
    return lambda: subprocess.run(argv, check=True, capture_output=True)


def main() -> None:
    bare = best_of(_runner([sys.executable, "-c", "pass"]), REPEATS)
    print(f"python -c pass: {bare * 1e3:.1f} ms (best of {REPEATS})")
    print(f"{'command':<12} {'time':>9} {'ratio':>7}  goal")
    for label, args in COMMANDS:
        t = best_of(_runner([sys.executable, "-c", ENTRY, *args]), REPEATS)
        verdict = "PASS" if t < GOAL_SECONDS else "MISS"
        print(f"{label:<12} {t * 1e3:>6.0f} ms {t / bare:>6.1f}×  {verdict} (< 500 ms)")
        figure(
            f"start-up of grapeshot {label}",
            t,
            bare,
            baseline_name="python -c pass (a scale)",
            same=None,
            note="ratio < 1: how much of a bare interpreter's start the command costs",
        )


if __name__ == "__main__":
    main()
