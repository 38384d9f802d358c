"""Run records (HDF5, also a trace), timelines, and the simulator's calibration from them."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from grapeshot.model.errors import InputError
from grapeshot.model.machine_file import load_machine
from grapeshot.model.synthetic import synthetic_workload
from grapeshot.model.workload_file import load_workload, save_workload
from grapeshot.sim.calibrate import calibration_from_record
from grapeshot.sim.replay import replay
from tests.mpi_harness import run_mpi


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    d = tmp_path_factory.mktemp("run")
    record, timeline = d / "run.h5", d / "t.json"
    proc = run_mpi(
        2,
        [
            "-m",
            "grapeshot.cli.main",
            "run",
            "swe",
            "--scene",
            "dambreak",
            "--cells",
            "128,32",
            "--parts",
            "8,4",
            "--steps",
            "12",
            "--threads",
            "1",
            "--record",
            str(record),
            "--timeline",
            str(timeline),
            "--json",
        ],
    )
    return json.loads(proc.stdout.strip().splitlines()[-1]), record, timeline


@pytest.mark.mpi
def test_record_is_a_trace_and_a_run_record(recorded) -> None:
    summary, record, _ = recorded
    w = load_workload(record)
    assert w.cost.shape == (12, 32) and w.work.shape == (12, 32) and w.app == "swe"
    assert (w.cost >= 0).all()
    with h5py.File(record) as f:
        tasks = f["run/tasks"]
        # 3 phases x 32 partitions x 12 steps, each on a rank and a thread.
        assert len(tasks["part"]) == 3 * 32 * 12
        assert set(np.unique(tasks["rank"][()])) == {0, 1}
        assert np.all(tasks["end"][()] >= tasks["start"][()])
        busy = f["run/ranks/busy"][()]
        assert np.allclose(busy, summary["busy"])
        assert len(f["run/messages/bytes"]) == summary["messages"]
        assert f["run"].attrs["fields_digest"] == summary["fields_digest"]


@pytest.mark.mpi
def test_timeline_is_chrome_trace(recorded) -> None:
    _, _, timeline = recorded
    data = json.loads(timeline.read_text())
    events = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert len(events) == 3 * 32 * 12
    for key in ("name", "ts", "dur", "pid", "tid", "args"):
        assert key in events[0]
    assert {e["name"] for e in events} == {"rate", "stage1", "stage2"}


@pytest.mark.mpi
def test_calibration_from_the_record(recorded) -> None:
    summary, record, _ = recorded
    with h5py.File(record) as f:
        # The ping-pong after the run: 8 B to 2 MiB, times growing with the size.
        sizes, seconds = f["run/network/bytes"][()], f["run/network/seconds"][()]
        assert sizes.tolist() == [8.0**k for k in range(1, 8)] and (seconds > 0).all()
        copied = f["run/ranks/copied_bytes"][()]
        assert (copied > 0).all()
        assert np.allclose(f["run/ranks/halo_seconds"][()], summary["halo_seconds"])
    cal = calibration_from_record(str(record))
    assert cal.latency >= 0 and cal.bandwidth > 0
    assert cal.task_overhead >= 0 and cal.task_scale > 0
    assert cal.copy_bandwidth > 0 and cal.serial_overhead >= 0
    assert np.isfinite([cal.message_rms, cal.task_rms]).all()
    # Runtime overheads spread over the simulated phases; measured costs add no task fit.
    machine = load_machine("plafrim", 2)
    _, two = cal.apply(machine, phases=2)
    assert two.task == pytest.approx((cal.task_overhead + cal.serial_overhead) / 2)
    _, measured = cal.apply(machine, phases=2, measured_costs=True)
    assert measured.task == pytest.approx(cal.serial_overhead / 2)
    assert measured.copy_bandwidth == cal.copy_bandwidth


@pytest.mark.mpi
def test_replay_simulates_the_recorded_run(recorded) -> None:
    summary, record, _ = recorded
    r = replay(str(record), calibration_from_record(str(record)))
    assert r.measured == pytest.approx(summary["wall_time"])
    assert r.result.makespan.shape == (12,)
    # Tasks cost what the record measured, plus overheads: no rank can finish its tasks
    # sooner than their recorded cost adds up to.
    w = load_workload(record)
    with h5py.File(record) as f:
        node_of = f["run/node_of"][()]
    per_rank = np.bincount(node_of, weights=w.cost.sum(axis=0), minlength=2)
    assert r.predicted >= per_rank.max() * (1 - 1e-9)


@pytest.mark.mpi
def test_simulate_calibrated_from_the_record(recorded, tmp_path) -> None:
    _, record, _ = recorded
    proc = run_mpi(
        1,
        [
            "-m", "grapeshot.cli.main", "simulate", "--trace", str(record), "--machine",
            "plafrim", "--nodes", "2", "--strategy", "geometric,birdshot", "--ppc", "1",
            "--phases", "2", "--calibrate", str(record), "--no-figure", "--json",
        ],
    )  # fmt: skip
    runs = json.loads(proc.stdout)["runs"]
    assert {r["strategy"] for r in runs} == {"geometric", "birdshot"}
    assert all(r["total_time"] > 0 for r in runs)
    assert "calibrated from" in proc.stderr


def test_calibration_needs_a_run_record(tmp_path) -> None:
    path = tmp_path / "w.h5"
    save_workload(path, synthetic_workload("binary:parts=4x4,steps=2"))
    with pytest.raises(InputError, match="dataset 'work': missing"):
        calibration_from_record(str(path))


@pytest.mark.mpi
def test_show_says_it_is_a_run_record(recorded) -> None:
    from tests.cli.helpers import run_main

    summary, record, timeline = recorded
    shown = run_main("show", str(record), "--json").json()
    assert shown["kind"] == "run record" and shown["ranks"] == 2
    assert shown["tasks"] == 3 * 32 * 12 and shown["parts"] == 32 and shown["steps"] == 12
    assert shown["fields_digest"] == summary["fields_digest"]
    assert run_main("show", str(timeline), "--json").json()["tasks"] == 3 * 32 * 12
