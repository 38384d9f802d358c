"""Workloads run as they come: any partition count on any machine, no resizing unless asked."""

from __future__ import annotations

import numpy as np
import pytest

from grapeshot.model.machine import Machine, NodeTree
from grapeshot.model.machine_file import load_machine
from grapeshot.model.synthetic import synthetic_workload
from grapeshot.place import STATIC_STRATEGIES
from grapeshot.place.quota import quotas
from grapeshot.sim import SimOptions, WorkloadSource, run_one, run_sweep
from grapeshot.sim.program import build_layout, build_program
from grapeshot.sim.resize import parts_per_core, sparse_note


def _grid(parts: int, rng: np.random.Generator) -> tuple[int, int]:
    """A 2D grid of exactly ``parts`` partitions (a random factorisation)."""
    divisors = [d for d in range(1, parts + 1) if parts % d == 0]
    a = int(rng.choice(divisors))
    return a, parts // a


def _random_cases(n: int) -> list[tuple[Machine, int]]:
    """``n`` heterogeneous machines, each with a partition count that rarely divides evenly."""
    rng = np.random.default_rng(26)
    cases = []
    for i in range(n):
        nodes = int(rng.integers(1, 7))
        cores = tuple(int(c) for c in rng.integers(1, 13, size=nodes))
        machine = Machine(f"mixed{i}", nodes, NodeTree((("core", max(cores)),)), node_cores=cores)
        # From fewer partitions than nodes to a few per core.
        parts = int(rng.integers(1, 4 * sum(cores) + 1))
        cases.append((machine, parts))
    return cases


CASES = [
    *_random_cases(8),
    # Fewer partitions than nodes (some nodes get none), and a prime count on mixed nodes.
    (Machine("sparse", 15, NodeTree((("core", 3),)), node_cores=(1, 2, 3) * 5), 7),
    (Machine("prime", 3, NodeTree((("core", 24),)), node_cores=(8, 16, 24)), 101),
]


@pytest.mark.parametrize(("machine", "parts"), CASES, ids=[f"{m.cores()}-{p}" for m, p in CASES])
def test_every_node_gets_its_share_by_cores_within_one(machine: Machine, parts: int) -> None:
    rng = np.random.default_rng(parts)
    shape = _grid(parts, rng)
    source = WorkloadSource(spec=f"uniform:parts={shape[0]}x{shape[1]},steps=2,cells=2")
    cores = machine.cores()
    exact = parts * cores / cores.sum()
    for strategy in STATIC_STRATEGIES:
        run = run_one(source, machine, strategy, None, seed=3, options=SimOptions())
        assert run.parts == parts and run.ppc is None  # not resized to any multiple of cores
        node_of = run.result.placements[0][1]
        counts = np.bincount(node_of, minlength=machine.nodes)
        # The one quota rule, whatever the strategy: within one of the exact share by cores.
        assert np.array_equal(counts, quotas(parts, cores)), strategy
        assert np.all(np.abs(counts - exact) < 1), strategy
        assert run.parts_per_core == pytest.approx(parts / cores.sum())
        # Every partition ran every step, on its node.
        assert run.result.n_tasks == 2 * parts
        assert np.isfinite(run.result.total_time) and run.result.total_time > 0


@pytest.mark.parametrize(("machine", "parts"), CASES, ids=[f"{m.cores()}-{p}" for m, p in CASES])
def test_pinned_partitions_share_a_nodes_cores_within_one(machine: Machine, parts: int) -> None:
    rng = np.random.default_rng(parts)
    shape = _grid(parts, rng)
    wl = synthetic_workload(f"uniform:parts={shape[0]}x{shape[1]},steps=2,cells=2")
    options = SimOptions(pin=True)
    node_of = STATIC_STRATEGIES["birdshot"](wl.parts_shape, machine.cores(), seed=1)
    layout = build_layout(build_program(wl, options), machine, node_of, options)
    again = build_layout(build_program(wl, options), machine, node_of, options)
    assert np.array_equal(layout.queue_of, again.queue_of)  # deterministic
    per_core = np.bincount(layout.queue_of, minlength=machine.total_cores)
    start = np.concatenate(([0], np.cumsum(machine.cores())))
    for k in range(machine.nodes):
        mine = per_core[start[k] : start[k + 1]]
        assert mine.sum() == np.count_nonzero(node_of == k)
        assert mine.max() - mine.min() <= 1  # a non-multiple count: the first cores get one more
        assert np.all(np.diff(mine) <= 0)


def test_128_partitions_on_4_nodes_of_18_cores() -> None:
    machine = load_machine("ec2-c4.8xlarge", 4)
    trace = synthetic_workload("dambreak:parts=16x8,cells=8,steps=4,cell_cost=1e-5")
    source = WorkloadSource(workload=trace)
    runs = run_sweep(source, machine, ["geometric", "birdshot"], None, seed=2)
    assert [r.strategy for r in runs] == ["geometric", "birdshot"]
    for run in runs:
        assert run.parts == 128 and run.parts_shape == (16, 8)
        assert np.bincount(run.result.placements[0][1]).tolist() == [32] * 4
        assert run.parts_per_core == pytest.approx(128 / 72)
        assert run.label == "1.78"
        summary = run.summary()
        assert summary["ppc"] == summary["parts_per_core"] == pytest.approx(1.7777777777777777)
    assert source.as_given() is trace  # used as it comes, not a copy resized to 72


def test_an_explicit_ppc_still_resizes() -> None:
    machine = load_machine("ec2-c4.8xlarge", 4)
    source = WorkloadSource(spec="dambreak:parts=16x8,cells=8,steps=3,cell_cost=1e-5")
    resized, given = (
        run_one(source, machine, "birdshot", k, seed=0, options=SimOptions()) for k in (2, None)
    )
    assert resized.ppc == 2 and resized.parts == 144 and resized.summary()["ppc"] == 2
    assert resized.label == "2" and resized.parts_per_core == 2.0
    assert given.ppc is None and given.parts == 128


def test_a_whole_ratio_as_it_comes_is_an_integer_ppc() -> None:
    machine = load_machine("ec2-c4.8xlarge", 2)
    (run,) = run_sweep(WorkloadSource(spec="uniform:parts=9x8,steps=2"), machine, ["sfc"], None)
    assert run.summary()["ppc"] == 2 and isinstance(run.summary()["ppc"], int)
    assert run.summary()["parts_per_core"] == 2.0 and run.label == "2"


def test_same_seed_same_result_as_it_comes() -> None:
    machine = Machine("mixed", 3, NodeTree((("core", 8),)), node_cores=(8, 3, 5))
    spec = "dambreak:parts=13x7,cells=4,steps=4,cell_cost=1e-5"
    for pin in (False, True):
        options = SimOptions(pin=pin)
        first, second = (
            run_sweep(WorkloadSource(spec=spec), machine, ["birdshot", "cyclic"], None,
                      seed=7, options=options)
            for _ in range(2)
        )  # fmt: skip
        for a, b in zip(first, second, strict=True):
            assert a.summary() == b.summary()
            assert np.array_equal(a.result.makespan, b.result.makespan)
            assert np.array_equal(a.result.node_work, b.result.node_work)


def test_fewer_partitions_than_cores_run_and_are_noted() -> None:
    machine = load_machine("ec2-c4.8xlarge", 4)
    for spec, parts in (("uniform:parts=4x4,steps=2", 16), ("uniform:parts=2x1,steps=2", 2)):
        for pin in (False, True):
            (run,) = run_sweep(
                WorkloadSource(spec=spec), machine, ["geometric"], None,
                options=SimOptions(pin=pin),
            )  # fmt: skip
            assert run.parts == parts and np.isfinite(run.result.lif).all()
            # Idle cores: the busy share cannot exceed the share of cores with a partition.
            assert run.result.busy_fraction <= parts / 72 + 1e-12
    assert sparse_note(16, machine) == (
        "16 partitions on 72 cores: 56 cores get none and idle (0.222 per core); fewer "
        "--nodes, or a finer partition grid"
    )
    assert sparse_note(2, machine, "fewer --nodes") == (
        "2 partitions on 4 nodes: 2 nodes get none (0.0278 per core); fewer --nodes"
    )
    assert sparse_note(72, machine) is None and sparse_note(128, machine) is None
    assert parts_per_core(128, machine) == 128 / 72


def test_as_given_applies_the_step_range_and_caches() -> None:
    source = WorkloadSource(spec="dambreak:parts=5x3,steps=10", steps=(2, 5))
    wl = source.as_given()
    assert wl.n_parts == 15 and wl.n_steps == 3 and source.as_given() is wl
    assert source.at_parts(15).n_parts == 15  # --ppc giving the SPEC's own count: unchanged
