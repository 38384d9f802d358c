"""Bad input anywhere in the simulator is an InputError that says what was expected."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from grapeshot.model.errors import InputError
from grapeshot.model.machine_file import load_machine
from grapeshot.model.placement import Placement
from grapeshot.model.synthetic import synthetic_workload
from grapeshot.place import place
from grapeshot.sim import (
    Overheads,
    SimOptions,
    WorkloadSource,
    network_model,
    run_sweep,
    simulate,
    strategy_names,
)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"phases": 0}, "--phases"),
        ({"phases": 1.5}, "--phases"),
        ({"sync": "sometimes"}, "--sync.*none, barrier, allreduce"),
        ({"collective": "ring"}, "--collective.*linear, binomial"),
        ({"reduce_bytes": -8}, "reduce-bytes"),
        ({"state_bytes_per_cell": -1}, "state-bytes-per-cell"),
        ({"hop_latency": -1e-9}, "--hop-latency"),
        ({"seconds_per_work": 0.0}, "--seconds-per-work"),
    ],
)
def test_bad_options(kwargs: dict, match: str) -> None:
    with pytest.raises(InputError, match=match):
        SimOptions(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"task": -1.0}, "task overhead"),
        ({"message": math.nan}, "message overhead"),
        ({"task": math.inf}, "task overhead"),
        ({"copy_bandwidth": 0.0}, "copy bandwidth"),
        ({"copy_bandwidth": "fast"}, "copy bandwidth"),
    ],
)
def test_bad_overheads(kwargs: dict, match: str) -> None:
    with pytest.raises(InputError, match=match):
        Overheads(**kwargs)


def test_placement_must_fit_workload_and_machine() -> None:
    machine = load_machine("ec2-c4.8xlarge", 4)
    workload = synthetic_workload("uniform:parts=6x6,steps=2,cells=2")
    with pytest.raises(InputError, match="places 35 partitions; expected 36"):
        simulate(workload, Placement(np.zeros(35, np.int32), 4, "x"), machine)
    with pytest.raises(InputError, match="is for 8 nodes; expected 4"):
        simulate(workload, Placement(np.zeros(36, np.int32), 8, "x"), machine)
    with pytest.raises(InputError, match="core_of"):
        simulate(
            workload,
            Placement(np.zeros(36, np.int32), 4, "x", core_of=np.full(36, 99)),
            machine,
            SimOptions(pin=True),
        )
    with pytest.raises(InputError, match="--timeline-steps"):
        simulate(
            workload, place(workload, machine, "cyclic", seed=0), machine, timeline_steps=(2, 1)
        )


def test_work_units_need_a_calibration() -> None:
    machine = load_machine("ec2-c4.8xlarge", 2)
    base = synthetic_workload("uniform:parts=6x6,steps=2,cells=2")
    work = dataclasses.replace(base, units="work")
    placement = place(base, machine, "cyclic", seed=0)
    with pytest.raises(InputError, match="'work', not seconds; expected --seconds-per-work"):
        simulate(work, placement, machine)
    seconds = simulate(base, placement, machine, SimOptions(overheads=Overheads.none()))
    scaled = simulate(
        work,
        placement,
        machine,
        SimOptions(seconds_per_work=2.0, overheads=Overheads.none()),
    )
    assert scaled.node_work.sum() == pytest.approx(2.0 * seconds.node_work.sum())


def test_unknown_strategy_lists_the_valid_ones() -> None:
    machine = load_machine("ec2-c4.8xlarge", 2)
    with pytest.raises(InputError, match=r"geometric, cyclic, sfc, birdshot, .*reactive"):
        run_sweep(WorkloadSource(spec="uniform:parts=6x6"), machine, ["annealing"], [1])
    assert {"reactive", "refine", "speculative", "birdshot-dynamic"} <= set(strategy_names())


def test_bad_hop_latency_for_the_network() -> None:
    with pytest.raises(InputError, match="hop_latency"):
        network_model(load_machine("lassen", 4), hop_latency=-1.0)
