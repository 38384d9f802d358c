"""Dynamic strategies: the protocol, the reactive greedy balancer, the cost of migration."""

from __future__ import annotations

import numpy as np
import pytest

from grapeshot.model.errors import InputError
from grapeshot.model.machine_file import load_machine
from grapeshot.model.synthetic import synthetic_workload
from grapeshot.model.workload import partition_bounds
from grapeshot.place import place
from grapeshot.sim import DynamicStrategy, ReactiveGreedy, SimOptions, WorkloadSource, simulate
from grapeshot.sim.sweep import run_one


class Scripted:
    """A dynamic strategy that applies given placements at given steps and logs its calls."""

    name = "scripted"
    initial = "geometric"

    def __init__(self, interval: int, plans: dict[int, np.ndarray]) -> None:
        self.interval = interval
        self.plans = plans
        self.calls: list[tuple[int, tuple[int, ...]]] = []

    def rebalance(self, *, step, loads, node_of, cores, state_bytes, comm=None, machine=None):
        self.calls.append((step, loads.shape))
        return self.plans.get(step)


def test_scripted_strategy_satisfies_the_protocol() -> None:
    assert isinstance(Scripted(1, {}), DynamicStrategy)
    assert isinstance(ReactiveGreedy(), DynamicStrategy)


def test_calls_come_every_interval_with_the_measured_loads() -> None:
    machine = load_machine("ec2-c4.8xlarge", 4)
    workload = synthetic_workload("uniform:parts=12x12,steps=10,cells=4")
    placement = place(workload, machine, "geometric", seed=0)
    strategy = Scripted(3, {})
    r = simulate(workload, placement, machine, dynamic=strategy)
    assert [c[0] for c in strategy.calls] == [3, 6, 9]
    assert [c[1] for c in strategy.calls] == [(3, 144), (3, 144), (3, 144)]
    assert r.bytes_migrated == 0 and r.partitions_migrated == 0
    # No moves: the same tasks, but every call is a synchronisation point that costs time.
    static = simulate(workload, placement, machine)
    assert r.total_time > static.total_time
    assert r.node_work.sum() == pytest.approx(static.node_work.sum(), rel=1e-12)


def test_moved_bytes_are_the_moved_partitions_state() -> None:
    machine = load_machine("ec2-c4.8xlarge", 4)
    workload = synthetic_workload("uniform:parts=12x12,steps=6,cells=8")
    placement = place(workload, machine, "geometric", seed=0)
    new = placement.node_of.astype(np.int64).copy()
    moved = np.array([0, 5, 77])
    new[moved] = (new[moved] + 1) % 4
    options = SimOptions(state_bytes_per_cell=100)
    strategy = Scripted(2, {4: new})
    r = simulate(workload, placement, machine, options, dynamic=strategy)
    extents = [np.diff(b) for b in partition_bounds((96, 96), (12, 12))]
    assert all(np.all(e == 8) for e in extents)  # every partition is 8 x 8 cells
    assert r.partitions_migrated == 3
    assert r.bytes_migrated == 3 * 8 * 8 * 100
    assert r.migration_time > 0
    assert [first for first, _ in r.placements] == [0, 4]
    assert np.array_equal(r.placements[1][1], new)


def test_migration_costs_time_proportional_to_the_state() -> None:
    machine = load_machine("ec2-c4.8xlarge", 4)
    # Microsecond tasks: the migration is the critical path.
    workload = synthetic_workload("uniform:parts=12x12,steps=4,cells=8,a=0.001,b=0.001")
    placement = place(workload, machine, "geometric", seed=0)
    new = placement.node_of.astype(np.int64).copy()
    new[:20] = (new[:20] + 1) % 4
    runs = {
        sb: simulate(
            workload,
            placement,
            machine,
            SimOptions(state_bytes_per_cell=sb),
            dynamic=Scripted(2, {2: new}),
        )
        for sb in (8, 80_000)
    }
    light, heavy = runs[8], runs[80_000]
    assert heavy.bytes_migrated == 10_000 * light.bytes_migrated
    # Node 0 sends its 12 moved partitions through one NIC: 12 * 64 cells * 80 kB.
    sent_by_node_0 = int(np.sum(placement.node_of[:20] == 0)) * 64 * 80_000
    assert heavy.migration_time >= sent_by_node_0 / machine.network.bandwidth
    assert heavy.total_time - light.total_time == pytest.approx(
        heavy.migration_time - light.migration_time, rel=0.05
    )


def test_reactive_greedy_moves_load_from_the_busiest_node() -> None:
    strategy = ReactiveGreedy(interval=1, threshold=0.05, max_moves_fraction=1.0)
    loads = np.array([[4.0, 4.0, 4.0, 4.0, 1.0, 1.0, 0.0, 0.0]])
    node_of = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    new = strategy.rebalance(
        step=1, loads=loads, node_of=node_of.copy(), cores=np.array([1, 1]), state_bytes=np.ones(8)
    )
    assert new is not None
    load0 = loads[0][new == 0].sum()
    load1 = loads[0][new == 1].sum()
    assert abs(load0 - load1) < abs(16 - 2)
    assert load0 == load1 == 9.0
    capped = ReactiveGreedy(interval=1, threshold=0.05, max_moves_fraction=0.01)
    one = capped.rebalance(
        step=1, loads=loads, node_of=node_of.copy(), cores=np.array([1, 1]), state_bytes=np.ones(8)
    )
    assert one is not None and int(np.sum(one != node_of)) == 1
    balanced = strategy.rebalance(
        step=1,
        loads=np.ones((1, 8)),
        node_of=node_of,
        cores=np.array([1, 1]),
        state_bytes=np.ones(8),
    )
    assert balanced is None


class Recorder:
    """Wraps a dynamic strategy and adds up the state bytes of every move it proposes."""

    def __init__(self, inner: ReactiveGreedy) -> None:
        self.inner = inner
        self.name, self.initial, self.interval = inner.name, inner.initial, inner.interval
        self.moved_bytes = 0

    def rebalance(self, *, step, loads, node_of, cores, state_bytes, comm=None, machine=None):
        old = node_of.copy()
        new = self.inner.rebalance(
            step=step, loads=loads, node_of=node_of, cores=cores, state_bytes=state_bytes
        )
        if new is not None:
            self.moved_bytes += int(state_bytes[new != old].sum())
        return new


def test_reactive_run_migrates_and_reduces_imbalance() -> None:
    machine = load_machine("ec2-c4.8xlarge", 8)
    source = WorkloadSource(spec="dambreak:parts=24x24,cells=8,steps=16,cell_cost=2e-5")
    options = SimOptions()
    static = run_one(source, machine, "geometric", 4, seed=0, options=options)
    workload = source.at_parts(8 * 18 * 4)
    placement = place(workload, machine, "geometric", seed=0)
    recorder = Recorder(ReactiveGreedy(interval=4, threshold=0.05, max_moves_fraction=0.2))
    r = simulate(workload, placement, machine, options, dynamic=recorder)
    assert r.partitions_migrated > 0
    assert r.bytes_migrated == recorder.moved_bytes > 0
    assert r.lif[-4:].mean() < static.result.lif[-4:].mean()
    via_sweep = run_one(source, machine, "reactive", 4, seed=0, options=options)
    assert via_sweep.strategy == "reactive" and via_sweep.result.strategy == "reactive"


def test_bad_proposals_are_input_errors() -> None:
    machine = load_machine("ec2-c4.8xlarge", 2)
    workload = synthetic_workload("uniform:parts=6x6,steps=4,cells=2")
    placement = place(workload, machine, "geometric", seed=0)
    with pytest.raises(InputError, match="shape"):
        simulate(workload, placement, machine, dynamic=Scripted(2, {2: np.zeros(5, np.int64)}))
    with pytest.raises(InputError, match="out of range"):
        simulate(workload, placement, machine, dynamic=Scripted(2, {2: np.full(36, 9)}))
    with pytest.raises(InputError, match="interval"):
        ReactiveGreedy(interval=0)
