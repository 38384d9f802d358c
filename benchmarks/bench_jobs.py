"""Batch scheduler speed: jobs per second with EASY on a 200,000-job generated trace.

Runs the compiled kernel (:mod:`grapeshot.jobs.scheduler`) and the plain-Python reference
(:mod:`grapeshot.jobs.reference`) on the same Lublin–Feitelson trace (128 CPUs, load 0.7,
user-estimate policy, EASY backfilling), checks that both give the same schedule bit for bit,
and prints jobs per CPU-second of each, their ratio, and PASS/MISS against the issue's target
of 100,000 jobs/s (pyss reported 2,457 jobs/s). Run: ``.venv/bin/python benchmarks/bench_jobs.py``
(``--jobs N`` for another size).

Then the two example plug-ins of the built-in ``easy++-simple`` on the first ``--plugin-jobs``
jobs of the same trace, each checked equal to it bit for bit: the compiled one
(``examples/policy/ave2_simple_compiled.py``, numba ``predict``/``correct`` called inside the
kernel) against issue 24's goal (a plug-in costs < 2× a built-in policy, i.e. a ratio ≥ 0.5),
with the one-off time to compile its callbacks; the Python one (``ave2_simple.py``, called from
Python for each arrival) with the share of its time in its own methods.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from grapeshot.jobs.correct import LEAD_S, get_correction
from grapeshot.jobs.generate import lublin_feitelson
from grapeshot.jobs.plugin import load_plugin, simulate_plugin
from grapeshot.jobs.reference import reference_schedule
from grapeshot.jobs.scheduler import BACKFILL, PRED_GIVEN, KernelState, make_jobs
from grapeshot.jobs.simulate import Cluster, simulate
from timing import figure

TARGET_JOBS_PER_S = 100_000.0
ROOT = Path(__file__).resolve().parents[1]
CPUS = 128


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=200_000)
    parser.add_argument("--plugin-jobs", type=int, default=50_000)
    args = parser.parse_args()
    trace = lublin_feitelson(args.jobs, cpus=CPUS, load=0.7, seed=42)
    req = np.maximum(trace.req_time, 1.0)
    _, user = np.unique(trace.user, return_inverse=True)
    incr = get_correction("none").increments

    def kernel() -> KernelState:
        st = KernelState(trace.submit, trace.run, trace.procs, req, req, user, CPUS)
        st.advance(req, incr, LEAD_S, PRED_GIVEN, BACKFILL["easy"])
        return st

    kernel()  # compile or load the numba cache
    best = np.inf
    for _ in range(3):
        t0 = time.process_time()
        fast = kernel()
        best = min(best, time.process_time() - t0)
    t0 = time.process_time()
    jobs = make_jobs(trace.submit, trace.run, trace.procs, req, req, user)
    ref = reference_schedule(jobs, CPUS, req, incr, LEAD_S, PRED_GIVEN, "easy")
    slow = time.process_time() - t0
    same = np.array_equal(fast.start, ref["start"]) and np.array_equal(fast.end, ref["end"])
    n = len(trace)
    ours, theirs = n / best, n / slow
    wait_h = float(np.mean(fast.start - trace.submit)) / 3600
    print(f"trace: {n} jobs, {CPUS} CPUs, load 0.7, mean wait {wait_h:.2f} h (EASY)")
    print(f"compiled kernel : {best:8.3f} CPU-s  {ours:12,.0f} jobs/s")
    print(f"python reference: {slow:8.3f} CPU-s  {theirs:12,.0f} jobs/s")
    print(f"ratio           : {ours / theirs:8.1f}x   same schedule: {same}")
    figure(
        f"EASY backfilling, {n:,} jobs ({ours:,.0f} jobs/s)",
        best,
        slow,
        baseline_name="plain-Python reference scheduler",
        same=bool(same),
        unit="CPU-s",
    )
    ok = same and ours >= TARGET_JOBS_PER_S
    print(f"{'PASS' if ok else 'MISS'}: >= {TARGET_JOBS_PER_S:,.0f} jobs/s with EASY "
          "(pyss: 2,457 jobs/s)")  # fmt: skip
    plugin_ratio(trace.take(np.arange(min(args.plugin_jobs, n))))


def plugin_ratio(trace) -> None:
    """The example plug-ins against the built-in policy they reproduce (module docstring)."""
    python = load_plugin(f"{ROOT / 'examples' / 'policy' / 'ave2_simple.py'}:Ave2Simple")
    compiled = load_plugin(
        f"{ROOT / 'examples' / 'policy' / 'ave2_simple_compiled.py'}:Ave2SimpleCompiled"
    )
    inside = [0.0]

    class Timed(python.cls):  # the time spent in the plug-in's own methods
        def predict(self, job, history):
            t0 = time.perf_counter()
            p = super().predict(job, history)
            inside[0] += time.perf_counter() - t0
            return p

        def correct(self, job, elapsed, limit):
            t0 = time.perf_counter()
            w = super().correct(job, elapsed, limit)
            inside[0] += time.perf_counter() - t0
            return w

    machine = Cluster(CPUS)
    built_in = simulate(trace, "easy++-simple", machine)
    t0 = time.perf_counter()
    simulate_plugin(trace, compiled, machine)  # its callbacks compile once per process
    first = time.perf_counter() - t0
    best = {"built-in": np.inf, "python": np.inf, "compiled": np.inf}
    for _ in range(3):  # interleaved, best of 3: the machine is shared
        for name, run in (
            ("built-in", lambda: simulate(trace, "easy++-simple", machine)),
            ("python", lambda: simulate_plugin(trace, python, machine)),
            ("compiled", lambda: simulate_plugin(trace, compiled, machine)),
        ):
            t0 = time.perf_counter()
            out = run()
            best[name] = min(best[name], time.perf_counter() - t0)
            if name != "built-in":
                same = all(np.array_equal(getattr(built_in, f), getattr(out, f)) for f in FIELDS)
                if not same:
                    raise SystemExit(f"the {name} plug-in differs from easy++-simple")
    inside[0] = 0.0
    t0 = time.perf_counter()
    simulate_plugin(trace, type(python)(python.spec, python.name, python.kill, Timed), machine)
    share = inside[0] / (time.perf_counter() - t0)
    print(f"built-in: {best['built-in']:.3f} s; compiled plug-in: {best['compiled']:.3f} s "
          f"(first run, compiling its callbacks: {first:.2f} s); Python plug-in: "
          f"{best['python']:.3f} s, {100 * share:.0f} % of it in its predict/correct")  # fmt: skip
    figure(
        f"compiled plug-in policy (numba AVE2 + simple), {len(trace):,} jobs, EASY",
        best["compiled"],
        best["built-in"],
        baseline_name="the built-in easy++-simple (compiled)",
        same=True,
        target=0.5,
        note=f"once per process, compiling its callbacks: {first:.2f} s (first run)",
    )
    figure(
        f"Python plug-in policy (AVE2 + simple), {len(trace):,} jobs, EASY",
        best["python"],
        best["built-in"],
        baseline_name="the built-in easy++-simple (compiled)",
        same=True,
        note=f"{100 * share:.0f} % of the plug-in's time is in its own predict/correct",
    )


FIELDS = ("start", "end", "prediction", "walltime", "corrections", "noop_corrections", "killed")


if __name__ == "__main__":
    main()
