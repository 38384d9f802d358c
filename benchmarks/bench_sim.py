"""Simulator speed: events per second, against a pure-Python heapq loop in the same run.

Prints, with PASS/MISS against the targets of the simulator issue:

1. the numba engine and the pure-Python reference (:mod:`grapeshot.sim.reference`, a minimal
   ``heapq`` event loop over the same tasks and messages, checked to give the same times bit
   for bit) on one mid-sized program: events per CPU-second of each and their ratio;
2. the engine on 64 nodes x 18 cores x 16 partitions per core x 100 steps of the synthetic
   3D dam break: events per CPU-second and the seconds the whole run takes (planning,
   placement and simulation), target under a minute;
3. the same run on the 3D-torus preset (link sharing on), for information.

An event is a task or a halo message (on-node or inter-node). Times are CPU seconds of this
process (``time.process_time``), so other work on the machine does not distort them; the
wall-clock seconds are printed too. Run: ``.venv/bin/python benchmarks/bench_sim.py``.
"""

from __future__ import annotations

import time

import numpy as np

from grapeshot.model.machine_file import load_machine
from grapeshot.place import place
from grapeshot.sim import SimOptions, WorkloadSource, simulate
from grapeshot.sim.reference import reference_run
from grapeshot.sim.resize import parts_needed
from timing import figure

SPEC = "dambreak:parts=32x16x16,cells=16,steps={steps},cell_bytes=40,ghost=3,cell_cost=2e-6"
TARGET_EVENTS_PER_S = 2e6
TARGET_BIG_RUN_S = 60.0


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def engine_vs_reference() -> bool:
    machine = load_machine("ec2-c4.8xlarge", 16)
    workload = WorkloadSource(spec=SPEC.format(steps=20)).at_parts(parts_needed(machine, 4))
    placement = place(workload, machine, "birdshot", seed=1)
    options = SimOptions()
    simulate(workload, placement, machine, options)  # compile (or load the numba cache)
    fast = min(
        (simulate(workload, placement, machine, options, timeline_steps=(0, 20)) for _ in range(3)),
        key=lambda r: r.cpu_seconds,
    )
    slow = reference_run(workload, placement, machine, options)
    same = bool(np.array_equal(fast.tasks.end, slow.task_end))
    events = fast.n_events
    fast_rate = events / fast.cpu_seconds
    slow_rate = events / slow.cpu_seconds
    print(
        f"[1] {workload.n_parts} partitions x {workload.n_steps} steps on 16 x ec2-c4.8xlarge, "
        f"birdshot: {events:,} events"
    )
    print(f"    numba engine      {fast.cpu_seconds:8.3f} s  {fast_rate:12,.0f} events/s")
    print(f"    pure-Python heapq {slow.cpu_seconds:8.3f} s  {slow_rate:12,.0f} events/s")
    print(f"    ratio {fast_rate / slow_rate:,.0f}x; same simulated times bit for bit: {same}")
    ok = fast_rate >= TARGET_EVENTS_PER_S and same
    print(f"    {verdict(ok)}: >= {TARGET_EVENTS_PER_S:,.0f} events/s and identical to reference")
    figure(
        f"simulator, {events:,} events ({fast_rate / 1e6:.1f} M events/s)",
        fast.cpu_seconds,
        slow.cpu_seconds,
        baseline_name="pure-Python heapq event loop",
        same=same,
        unit="CPU-s",
    )
    return ok


def big_run(machine_name: str, *, target: bool) -> bool:
    machine = load_machine(machine_name, 64)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    workload = WorkloadSource(spec=SPEC.format(steps=100)).at_parts(parts_needed(machine, 16))
    placement = place(workload, machine, "birdshot", seed=1)
    result = simulate(workload, placement, machine, SimOptions())
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    rate = result.n_events / result.cpu_seconds
    print(
        f"[{'2' if target else '3'}] 64 x {machine_name} ({machine.cores_per_node} cores) x 16 "
        f"per core x 100 steps = {workload.n_parts:,} partitions, {result.n_events:,} events "
        f"(simulated {result.total_time:.3f} s)"
    )
    print(
        f"    engine {result.cpu_seconds:.2f} s CPU = {rate:,.0f} events/s; whole run "
        f"{cpu:.2f} s CPU, {wall:.2f} s wall"
    )
    if not target:
        return True
    ok = rate >= TARGET_EVENTS_PER_S and cpu < TARGET_BIG_RUN_S
    print(
        f"    {verdict(ok)}: >= {TARGET_EVENTS_PER_S:,.0f} events/s and under "
        f"{TARGET_BIG_RUN_S:.0f} s"
    )
    return ok


def main() -> None:
    results = [engine_vs_reference(), big_run("ec2-c4.8xlarge", target=True)]
    big_run("bluewaters-xe6", target=False)
    print("bench_sim:", "PASS" if all(results) else "MISS")


if __name__ == "__main__":
    main()
