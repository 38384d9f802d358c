"""Run records (HDF5, also a trace), timelines, and the simulator's calibration from them."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from grapeshot.model.errors import InputError
from grapeshot.model.synthetic import synthetic_workload
from grapeshot.model.workload_file import load_workload, save_workload
from grapeshot.sim.calibrate import calibration_from_record
from tests.mpi_harness import run_mpi

pytestmark = pytest.mark.mpi


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


def test_timeline_is_chrome_trace(recorded) -> None:
    _, _, timeline = recorded
    data = json.loads(timeline.read_text())
    events = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert len(events) == 3 * 32 * 12
    for key in ("name", "ts", "dur", "pid", "tid", "args"):
        assert key in events[0]
    assert {e["name"] for e in events} == {"rate", "stage1", "stage2"}


def test_calibration_from_the_record(recorded) -> None:
    _, record, _ = recorded
    cal = calibration_from_record(str(record))
    assert cal.latency >= 0 and cal.bandwidth > 0
    assert cal.task_overhead >= 0 and cal.task_scale > 0
    assert np.isfinite([cal.message_rms, cal.task_rms]).all()


def test_calibration_needs_a_run_record(tmp_path) -> None:
    path = tmp_path / "w.h5"
    save_workload(path, synthetic_workload("binary:parts=4x4,steps=2"))
    with pytest.raises(InputError, match="dataset 'work': missing"):
        calibration_from_record(str(path))
