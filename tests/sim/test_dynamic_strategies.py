"""Every dynamic strategy in the simulator: by name, with options, stated migrations, shadows."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from grapeshot.model.errors import InputError
from grapeshot.model.machine_file import load_machine
from grapeshot.model.synthetic import synthetic_workload
from grapeshot.place.dynamic import DYNAMIC_STRATEGIES
from grapeshot.sim import SimOptions, WorkloadSource
from grapeshot.sim.engine import _segment_bounds
from grapeshot.sim.shadow import coarse_shadow
from grapeshot.sim.sweep import dynamic_strategy, run_one
from tests.cli.helpers import run_cli

SPEC = "dambreak:parts=16x16,cells=4,steps=24,cell_bytes=40,ghost=1,cell_cost=2e-5"


@pytest.fixture(scope="module")
def flip():
    from grapeshot.apps.flip import make_trace

    return make_trace("sphere-drop", (4, 2, 4), 12, cells=16)


@pytest.mark.parametrize("name", sorted(set(DYNAMIC_STRATEGIES) - {"speculative"}))
def test_every_strategy_runs_and_states_its_migrations(name: str) -> None:
    machine = load_machine("ec2-c4.8xlarge", 4)
    overrides = {"score_steps": 4} if name == "birdshot-best-of-k" else {"interval": 4}
    run = run_one(WorkloadSource(spec=SPEC), machine, name, 2, seed=1, options=SimOptions(),
                  dynamic_options=overrides)  # fmt: skip
    s = run.summary()
    assert s["migrations"] == run.result.partitions_migrated
    assert s["migrated_bytes"] == s["bytes_migrated"] == run.result.bytes_migrated
    again = run_one(WorkloadSource(spec=SPEC), machine, name, 2, seed=1, options=SimOptions(),
                    dynamic_options=overrides)  # fmt: skip
    assert again.summary() == s  # deterministic for a seed


def test_best_of_k_is_called_once() -> None:
    strategy = DYNAMIC_STRATEGIES["birdshot-best-of-k"](score_steps=3)
    assert _segment_bounds(20, strategy.interval, strategy) == [(0, 3), (3, 20)]
    assert _segment_bounds(2, strategy.interval, strategy) == [(0, 2)]


def test_comm_and_machine_reach_the_strategy() -> None:
    seen = {}

    class Spy:
        name, initial, interval = "spy", "geometric", 5

        def rebalance(self, *, step, loads, node_of, cores, state_bytes, comm=None, machine=None):
            seen.update(comm=comm, machine=machine)

    from grapeshot.place import place
    from grapeshot.sim import simulate

    machine = load_machine("ec2-c4.8xlarge", 4)
    workload = synthetic_workload(SPEC)
    simulate(workload, place(workload, machine, "geometric", seed=0), machine, dynamic=Spy())
    comm = seen["comm"]
    assert comm.shape == (256, 256) and (abs(comm - comm.T)).max() == 0
    assert comm.sum() == 2 * workload.halo.nbytes.sum()
    assert seen["machine"] is machine


def test_speculative_never_reads_the_fine_trace(flip) -> None:
    """The forecast comes from the coarse shadow: scrambling the trace's costs changes nothing."""
    machine = load_machine("gcp-n1-highmem-8", 2)
    a = dynamic_strategy("speculative", flip, machine, 0, {"interval": 4, "window": 4})
    scrambled = dataclasses.replace(
        flip, cost=np.random.default_rng(0).permutation(flip.cost.ravel()).reshape(flip.cost.shape)
    )
    b = dynamic_strategy("speculative", scrambled, machine, 0, {"interval": 4, "window": 4})
    np.testing.assert_array_equal(a.first, b.first)
    np.testing.assert_array_equal(a.predictor(4, 4), b.predictor(4, 4))
    shadow = coarse_shadow(flip, 4)
    assert shadow.counts.shape[1] == flip.n_parts and shadow.fine_times.size == flip.n_steps + 4
    assert np.all(np.diff(shadow.fine_times) > 0)


def test_speculative_refuses_a_trace_without_a_shadow() -> None:
    machine = load_machine("ec2-c4.8xlarge", 4)
    with pytest.raises(InputError, match="coarse shadow"):
        run_one(WorkloadSource(spec=SPEC), machine, "speculative", 2, seed=0,
                options=SimOptions())  # fmt: skip


def test_simulate_json_keeps_its_keys_and_adds_migrations(capsys) -> None:
    res = run_cli(capsys, "simulate", "--synthetic", SPEC, "--machine", "ec2-c4.8xlarge",
                  "--nodes", "4", "--strategy", "geometric,refine,birdshot-dynamic",
                  "--interval", "4", "--threshold", "0.05", "--ppc", "2", "--json",
                  "--no-figure")  # fmt: skip
    assert res.code == 0, res.err
    runs = res.json()["runs"]
    # parts_per_core: the real partitions per core, added with workloads run as they come.
    keys = {"strategy", "ppc", "parts_per_core", "seed", "total_time", "step_time_mean",
            "lif_mean", "lif_max", "hidden_comm_fraction", "bytes_sent", "bytes_migrated",
            "parts", "parts_shape", "steps", "busy_fraction", "events", "migrations",
            "migrated_bytes"}  # fmt: skip
    assert all(set(r) == keys for r in runs)
    assert runs[0]["migrations"] == 0 and runs[1]["migrations"] > 0
    json.dumps(runs)


def test_simulate_refuses_an_option_no_strategy_takes(capsys) -> None:
    res = run_cli(capsys, "simulate", "--synthetic", SPEC, "--machine", "ec2-c4.8xlarge",
                  "--nodes", "4", "--strategy", "geometric,refine", "--window", "5",
                  "--no-figure")  # fmt: skip
    assert res.code == 2 and "--window" in res.err and len(res.err.strip().splitlines()) == 1
