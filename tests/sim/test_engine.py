"""The numba engine against the pure-Python reference, determinism, and accounting invariants."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from grapeshot.model.machine_file import load_machine
from grapeshot.model.placement import Placement, placement_metrics
from grapeshot.model.synthetic import synthetic_workload
from grapeshot.place import place
from grapeshot.sim import Overheads, SimOptions, simulate
from grapeshot.sim.reference import reference_run

OPTIONS = [
    SimOptions(),
    SimOptions(pin=True, phases=2),
    SimOptions(sync="allreduce"),
    SimOptions(sync="barrier", collective="binomial", phases=3),
    SimOptions(overheads=Overheads(task=0.0, message=1e-5, copy_bandwidth=2e9)),
]


@pytest.fixture(scope="module")
def small() -> tuple:
    machine = load_machine("ec2-c4.8xlarge", 5)
    workload = synthetic_workload("dambreak:parts=12x10,steps=4,cells=4,cell_cost=1e-5,floor=1e-5")
    return machine, workload


@pytest.mark.parametrize("options", OPTIONS, ids=range(len(OPTIONS)))
@pytest.mark.parametrize("strategy", ["birdshot", "geometric", "cyclic"])
@pytest.mark.parametrize("contention", [False, True])
def test_engine_matches_the_pure_python_reference_bit_for_bit(
    small: tuple, options: SimOptions, strategy: str, contention: bool
) -> None:
    machine, workload = small
    if contention:
        machine = dataclasses.replace(
            machine, network=dataclasses.replace(machine.network, node_contention=True)
        )
    placement = place(workload, machine, strategy, seed=3)
    r = simulate(workload, placement, machine, options, timeline_steps=(0, workload.n_steps))
    ref = reference_run(workload, placement, machine, options)
    assert r.tasks is not None
    assert np.array_equal(r.tasks.start, ref.task_start)
    assert np.array_equal(r.tasks.end, ref.task_end)
    assert np.array_equal(r.bytes_sent, ref.bytes_sent)
    assert np.array_equal(r.bytes_recv, ref.bytes_recv)
    assert r.comm_time == float(ref.comm_time.sum())
    assert r.hidden_comm_time == float(ref.hidden_time.sum())
    assert r.n_messages == ref.n_messages
    expected_end = np.maximum.accumulate(np.maximum(ref.step_task_end, ref.step_release))
    assert np.array_equal(r.step_end, expected_end)


def test_reference_on_a_larger_random_program(small: tuple) -> None:
    machine = load_machine("ec2-c4.8xlarge", 6)
    workload = synthetic_workload("uniform:parts=24x18,steps=3,a=0.05,b=3,cells=3")
    placement = place(workload, machine, "birdshot", seed=11)
    r = simulate(workload, placement, machine, timeline_steps=(0, 3))
    ref = reference_run(workload, placement, machine)
    assert np.array_equal(r.tasks.end, ref.task_end)


def test_same_inputs_same_times_bit_for_bit() -> None:
    machine = load_machine("bluewaters-xe6", 8)
    workload = synthetic_workload("binary:parts=32x16,steps=6,busy=0.3,cells=4")
    opts = SimOptions(sync="allreduce", phases=2)
    runs = [
        simulate(
            workload,
            place(workload, machine, "birdshot", seed=5),
            machine,
            opts,
            timeline_steps=(0, 6),
        )
        for _ in range(2)
    ]
    a, b = runs
    for name in (
        "step_end",
        "makespan",
        "node_busy",
        "node_idle",
        "node_work",
        "bytes_sent",
        "lif",
    ):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert np.array_equal(a.tasks.start, b.tasks.start)
    assert a.hidden_comm_time == b.hidden_comm_time
    other = simulate(workload, place(workload, machine, "birdshot", seed=6), machine, opts)
    assert other.total_time != a.total_time


@pytest.mark.parametrize("machine_name", ["ec2-c4.8xlarge", "bluewaters-xe6", "plafrim", "cm5"])
def test_accounting_invariants(machine_name: str) -> None:
    machine = load_machine(machine_name, 6)
    workload = synthetic_workload("dambreak:parts=16x12,steps=5,cells=4,cell_cost=2e-5")
    placement = place(workload, machine, "birdshot", seed=2)
    r = simulate(workload, placement, machine, timeline_steps=(0, 5))
    cores = machine.cores()
    # Windows tile the run; busy + idle fill every window on every node.
    assert r.makespan.sum() == pytest.approx(r.total_time, rel=1e-12)
    np.testing.assert_allclose(r.node_busy + r.node_idle, cores * r.makespan[:, None], rtol=1e-9)
    durations = r.tasks.end - r.tasks.start
    assert r.node_busy.sum() == pytest.approx(durations.sum(), rel=1e-9)
    assert r.node_work.sum() == pytest.approx(durations.sum(), rel=1e-9)
    # Every halo byte crossing nodes is sent once and received once, every step but the last.
    cut = placement_metrics(placement, workload, machine).bytes_cut
    assert r.bytes_sent.sum() == pytest.approx(cut * (workload.n_steps - 1))
    assert r.bytes_recv.sum() == pytest.approx(r.bytes_sent.sum())
    assert r.n_messages == workload.halo.n_messages * (workload.n_steps - 1)
    assert r.n_tasks == workload.n_parts * workload.n_steps
    assert 0.0 <= r.hidden_comm_fraction <= 1.0
    # Tasks never overlap on a core.
    order = np.lexsort((r.tasks.start, r.tasks.core, r.tasks.node))
    same = (np.diff(r.tasks.node[order]) == 0) & (np.diff(r.tasks.core[order]) == 0)
    gaps = r.tasks.start[order][1:] - r.tasks.end[order][:-1]
    assert np.all(gaps[same] >= -1e-15)


def test_dynamic_dispatch_beats_pinned_cores_on_uneven_partitions() -> None:
    machine = load_machine("ec2-c4.8xlarge", 2)
    workload = synthetic_workload("uniform:parts=24x12,steps=4,a=1,b=20,cells=4")
    placement = place(workload, machine, "birdshot", seed=4)
    dynamic = simulate(workload, placement, machine)
    pinned = simulate(workload, placement, machine, SimOptions(pin=True))
    assert dynamic.total_time < pinned.total_time
    # With one partition per core there is nothing to dispatch: the two agree.
    one = synthetic_workload("uniform:parts=6x6,steps=3,a=1,b=20,cells=4")
    p1 = place(one, machine, "geometric", seed=0)
    assert (
        simulate(one, p1, machine).total_time
        == simulate(one, p1, machine, SimOptions(pin=True)).total_time
    )


def test_pinned_placement_core_of_is_honoured() -> None:
    machine = load_machine("ec2-c4.8xlarge", 1)
    workload = synthetic_workload("uniform:parts=6x6,steps=2,a=1,b=1,cells=2")
    all_on_core_0 = Placement(np.zeros(36, np.int32), 1, "x", core_of=np.zeros(36, np.int32))
    r = simulate(workload, all_on_core_0, machine, SimOptions(pin=True), timeline_steps=(0, 2))
    assert set(r.tasks.core.tolist()) == {0}


@pytest.mark.parametrize("dynamic", [False, True])
def test_a_run_stopped_for_progress_reports_is_the_same_run(monkeypatch, dynamic: bool) -> None:
    """The kernel stopped every few events (to report progress on a long run) and started
    again runs the same events in the same order: every number and record is the same."""
    from grapeshot.sim import ReactiveGreedy, engine

    machine = load_machine("bluewaters-xe6", 8)
    workload = synthetic_workload("dambreak:parts=16x12,steps=6,cells=4")
    placement = place(workload, machine, "birdshot", seed=2)
    opts = SimOptions(sync="allreduce", phases=2)

    def run(progress=None):
        strategy = ReactiveGreedy(interval=2) if dynamic else None
        return simulate(
            workload, placement, machine, opts, dynamic=strategy, timeline_steps=(0, 6),
            progress=progress,
        )  # fmt: skip

    whole = run()
    shares: list[float] = []
    monkeypatch.setattr(engine, "POPS_PER_CALL", 5)
    stopped = run(shares.append)
    for name in ("step_end", "node_busy", "node_idle", "node_work", "bytes_sent", "lif"):
        assert np.array_equal(getattr(whole, name), getattr(stopped, name)), name
    for name in ("start", "end", "core", "node"):
        assert np.array_equal(getattr(whole.tasks, name), getattr(stopped.tasks, name)), name
    assert np.array_equal(whole.messages.delivered, stopped.messages.delivered)
    assert (whole.n_messages, whole.comm_time, whole.hidden_comm_time) == (
        stopped.n_messages, stopped.comm_time, stopped.hidden_comm_time
    )  # fmt: skip
    assert whole.placements[-1][0] == stopped.placements[-1][0]
    # Reported often, never backwards, and to the end.
    assert len(shares) > 100 and shares == sorted(shares) and shares[-1] == 1.0
    assert 0 < shares[0] < 0.1
