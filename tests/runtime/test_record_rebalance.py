"""A run that rebalances inside, its record, and the simulator's prediction of it (issue 41
item 6): the record carries every call of the dynamic strategy (its moves, its seconds and the
re-plan's), the wall time holds them, and the run replayed with a calibration from its own
record makes the same moves and predicts the wall time."""

from __future__ import annotations

import dataclasses
import json

import h5py
import numpy as np
import pytest

from grapeshot.place.dynamic import call_steps, make_dynamic_strategy
from grapeshot.sim.calibrate import calibration_from_record
from grapeshot.sim.replay import replay
from tests.cli.helpers import run_main
from tests.mpi_harness import ROOT, run_mpi

FRONT = f"{ROOT / 'examples' / 'program' / 'front.py'}:make_front"
#: 256 partitions of a small front, greedy-refine every 2 steps: each call moves partitions
#: and re-plans both ranks (tens of ms), so the calls are half the wall time or more.
STEPS, INTERVAL = 30, 2
#: Predicted against measured wall time: the simulator models the steps within a few per cent
#: on quiet cores (docs/simulator.md); shared cores add waits it does not know of.
TOLERANCE = 0.25


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    record = tmp_path_factory.mktemp("rebalance") / "run.h5"
    proc = run_mpi(
        2,
        ["-m", "grapeshot.cli.main", "run", "--app", FRONT, "--cells", "256,128",
         "--parts", "16,16", "--steps", str(STEPS), "--strategy", "greedy-refine",
         "--interval", str(INTERVAL), "--record", str(record), "--json"],
        timeout=300,
    )  # fmt: skip
    return json.loads(proc.stdout.strip().splitlines()[-1]), record


@pytest.mark.mpi
def test_the_record_carries_every_call_and_the_wall_time_holds_them(recorded) -> None:
    summary, record = recorded
    strategy = make_dynamic_strategy("greedy-refine", interval=INTERVAL)
    with h5py.File(record) as f:
        calls = {k: v[()] for k, v in f["run/rebalances"].items()}
        dynamic = json.loads(f["run/rebalances"].attrs["dynamic"])
        first, final = f["run/node_of"][()], f["run/node_of_final"][()]
        rebalance_seconds = f["run/ranks/rebalance_seconds"][()]
    assert calls["step"].tolist() == call_steps(strategy, STEPS)
    assert dynamic == {"name": "greedy-refine", "initial": "geometric", "interval": INTERVAL,
                       "threshold": 0.0}  # fmt: skip
    # Each call's moves, as the run reported them, and the placements they lead through.
    reported = {m["step"]: m for m in summary["migrations"]}
    for i, step in enumerate(calls["step"]):
        before = first if i == 0 else calls["node_of"][i - 1]
        moved = int(np.count_nonzero(calls["node_of"][i] != before))
        assert (
            calls["parts_moved"][i]
            == moved
            == reported.get(step, {"parts_moved": 0})["parts_moved"]
        )
    assert np.array_equal(calls["node_of"][-1], final)
    assert calls["parts_moved"].sum() > 0 and calls["bytes"].sum() == summary["bytes_migrated"]
    # Per rank: the call is part of the time between segments, and the wall time holds them.
    assert (calls["seconds"] >= calls["call_seconds"] - 1e-9).all()
    # Its own part starts when the last rank ended its segment: one rank at least waited for
    # none, the others for that one.
    own = calls["own_seconds"]
    assert own.shape == calls["seconds"].shape and (own <= calls["seconds"] + 1e-9).all()
    assert np.allclose((calls["seconds"] - own).min(axis=1), 0.0, atol=1e-6), calls["seconds"] - own
    assert np.allclose(calls["seconds"].sum(axis=0), rebalance_seconds)
    for busy, between in zip(summary["busy"], summary["rebalance_seconds"], strict=True):
        assert summary["wall_time"] >= busy + between
    # `grapeshot show` counts every move of every call, not the first placement against the
    # last (a partition that moves away and back counts twice).
    shown = run_main("show", str(record), "--json").json()
    assert shown["partitions_migrated"] == int(calls["parts_moved"].sum())
    assert shown["partitions_migrated"] > int(np.count_nonzero(first != final))


@pytest.mark.mpi
def test_replayed_from_its_own_record_it_makes_the_same_moves_and_takes_the_same_time(
    recorded,
) -> None:
    summary, record = recorded
    cal = calibration_from_record(str(record))
    assert cal.rebalance_overhead > 0 and cal.replan_overhead > 0
    assert cal.state_bytes_per_cell == pytest.approx(
        summary["bytes_migrated"] / _moved_cells(record)
    )
    r = replay(str(record), cal)
    with h5py.File(record) as f:
        steps, after, moved = (
            f[f"run/rebalances/{k}"][()] for k in ("step", "node_of", "parts_moved")
        )
    # The strategy decides on the work counts, as on the ranks: the same placements.
    simulated = dict(r.result.placements[1:])
    assert sorted(simulated) == steps[moved > 0].tolist()
    for step, node_of in zip(steps[moved > 0], after[moved > 0], strict=True):
        assert np.array_equal(simulated[step], node_of)
    assert r.result.partitions_migrated == moved.sum()
    assert abs(r.error) <= TOLERANCE, (r.measured, r.predicted)
    # What makes it agree: without the calls' measured costs the prediction falls short.
    bare = replay(
        str(record), dataclasses.replace(cal, rebalance_overhead=0.0, replan_overhead=0.0)
    )
    assert bare.error < -TOLERANCE, (r.measured, bare.predicted)


@pytest.mark.mpi
def test_simulate_calibrated_from_the_record_predicts_the_run(recorded, tmp_path) -> None:
    summary, record = recorded
    machine = tmp_path / "ranks.toml"
    machine.write_text('name = "ranks"\nnodes = 2\n[node]\nlevels = [["core", 1]]\n')
    shown = run_main(
        "simulate", "--trace", str(record), "--calibrate", str(record), "--machine",
        str(machine), "--strategy", "greedy-refine", "--interval", str(INTERVAL),
        "--phases", "2", "--no-figure", "--json",
    )  # fmt: skip
    assert shown.code == 0, shown.err
    run = shown.json()["runs"][0]
    assert run["migrations"] == sum(m["parts_moved"] for m in summary["migrations"])
    assert abs(run["total_time"] / summary["wall_time"] - 1) <= TOLERANCE


def _moved_cells(record) -> int:
    from grapeshot.model.workload_file import load_workload
    from grapeshot.place.replay import cells_per_part

    cells = cells_per_part(load_workload(record))
    with h5py.File(record) as f:
        before, after = f["run/node_of"][()], f["run/rebalances/node_of"][()]
    placements = np.vstack([before[None, :], after])
    return int((cells[None, :] * (placements[1:] != placements[:-1])).sum())


@pytest.mark.mpi
def test_a_migrate_at_run_is_replayed_with_its_recorded_move(tmp_path) -> None:
    record = tmp_path / "run.h5"
    proc = run_mpi(
        2,
        ["-m", "grapeshot.cli.main", "run", "swe", "--scene", "dambreak", "--cells", "128,32",
         "--parts", "8,4", "--steps", "12", "--migrate-at", "6", "--record", str(record),
         "--json"],
    )  # fmt: skip
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    (migration,) = summary["migrations"]
    r = replay(str(record), calibration_from_record(str(record)))
    with h5py.File(record) as f:
        final = f["run/node_of_final"][()]
        assert "dynamic" not in f["run/rebalances"].attrs  # greedy once: no dynamic strategy
    assert r.result.partitions_migrated == migration["parts_moved"] > 0
    assert [step for step, _ in r.result.placements[1:]] == [6]
    assert np.array_equal(r.result.placements[-1][1], final)


@pytest.mark.mpi
def test_a_lazy_run_on_measured_seconds_is_replayed_with_its_recorded_moves(tmp_path) -> None:
    """``--lazy-moves --loads cpu``: which proposals are made depends on measured seconds,
    so the replay makes the record's moves, at the record's steps; the proposals it did not
    make are counted (the first that moves is made: later ones rarely pay on this small
    front, where a move costs milliseconds and balance gains microseconds)."""
    record = tmp_path / "run.h5"
    proc = run_mpi(
        2,
        ["-m", "grapeshot.cli.main", "run", "--app", FRONT, "--cells", "256,128",
         "--parts", "16,16", "--steps", "20", "--strategy", "greedy-refine", "--interval", "2",
         "--lazy-moves", "--loads", "cpu", "--record", str(record), "--json"],
        timeout=300,
    )  # fmt: skip
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["loads"] == "cpu" and summary["lazy_moves"] is True
    moved = [m for m in summary["migrations"] if m["parts_moved"] > 0]
    assert len(moved) >= 1 and summary["proposals_deferred"] > 0
    with h5py.File(record) as f:
        assert bool(f["run"].attrs["lazy_moves"]) and f["run"].attrs["loads"] == "cpu"
        calls = {k: v[()] for k, v in f["run/rebalances"].items()}
    r = replay(str(record), calibration_from_record(str(record)))
    made = [(int(s), tuple(calls["node_of"][i])) for i, s in enumerate(calls["step"])
            if calls["parts_moved"][i] > 0]  # fmt: skip
    assert [(s, tuple(p)) for s, p in r.result.placements[1:]] == made


@pytest.mark.mpi
def test_a_checkpoint_at_a_call_is_the_checkpoints_cost_not_the_calls(tmp_path) -> None:
    """Checkpoints at calls' steps (4, 8) share their pause with the call; the one at the
    run's end (12) comes after the last segment, in no pause. Each pause's write is taken out
    of that call's row and of the ranks' rebalancing seconds, and nothing else is."""
    record = tmp_path / "run.h5"
    proc = run_mpi(
        2,
        ["-m", "grapeshot.cli.main", "run", "--app", FRONT, "--cells", "256,128",
         "--parts", "16,16", "--steps", "12", "--strategy", "greedy-refine", "--interval", "2",
         "--checkpoint", str(tmp_path / "ck.h5"), "--checkpoint-every", "4",
         "--record", str(record), "--json"],
        timeout=300,
    )  # fmt: skip
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert [c["step"] for c in summary["checkpoints"]] == [4, 8, 12]
    with h5py.File(record) as f:
        calls = {k: v[()] for k, v in f["run/rebalances"].items()}
        rebalance_seconds = f["run/ranks/rebalance_seconds"][()]
    assert calls["step"].tolist() == [2, 4, 6, 8, 10]
    own, seconds = calls["own_seconds"], calls["seconds"]
    assert (own >= 0).all() and (own <= seconds + 1e-9).all()
    # The rows add up to the ranks' rebalancing: the pauses less the writes in them (with
    # every write, or none, taken out of either, they would differ by one at least).
    assert np.allclose(seconds.sum(axis=0), rebalance_seconds, rtol=0, atol=1e-9)
    assert np.allclose(summary["rebalance_seconds"], rebalance_seconds, rtol=0, atol=1e-9)
