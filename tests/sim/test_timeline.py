"""Chrome-trace timelines: valid JSON with the event fields Perfetto needs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from grapeshot.model.errors import InputError
from grapeshot.model.machine_file import load_machine
from grapeshot.model.synthetic import synthetic_workload
from grapeshot.place import place
from grapeshot.sim import chrome_trace, simulate, write_timeline


@pytest.fixture(scope="module")
def run():
    machine = load_machine("ec2-c4.8xlarge", 3)
    workload = synthetic_workload("dambreak:parts=12x9,steps=6,cells=4,cell_cost=1e-5")
    return simulate(
        workload, place(workload, machine, "birdshot", seed=1), machine, timeline_steps=(1, 3)
    )


def test_timeline_json_loads_and_has_chrome_trace_fields(run, tmp_path: Path) -> None:
    path = write_timeline(tmp_path / "out" / "run.json", run)
    doc = json.loads(path.read_text())
    events = doc["traceEvents"]
    tasks = [e for e in events if e["ph"] == "X"]
    assert len(tasks) == 2 * run.n_parts
    for e in tasks:
        for key in ("ph", "ts", "dur", "pid", "tid", "name"):
            assert key in e
        assert e["dur"] >= 0 and 0 <= e["pid"] < 3 and 0 <= e["tid"] < 18
        assert e["args"]["step"] in (1, 2)
    assert min(e["ts"] for e in tasks) == pytest.approx(run.tasks.start.min() * 1e6)
    begins = [e for e in events if e["ph"] == "b"]
    ends = [e for e in events if e["ph"] == "e"]
    assert len(begins) == len(ends) == len(run.messages.src) > 0
    assert all("pid" in e and "tid" in e and "ts" in e for e in begins + ends)
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {"core 0", "core 17", "network in"} <= names
    assert doc["otherData"]["steps"] == [1, 3]
    assert not list(path.parent.glob(".*tmp"))  # written atomically, no temporary left


def test_tasks_in_the_timeline_match_the_run(run) -> None:
    doc = chrome_trace(run)
    tasks = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    total = sum(e["dur"] for e in tasks) * 1e-6
    assert total == pytest.approx(run.node_work[1:3].sum(), rel=1e-9)
    per_node = np.bincount([e["pid"] for e in tasks], minlength=3)
    assert per_node.sum() == 2 * run.n_parts


def test_message_cap_counts_what_it_drops(run) -> None:
    doc = chrome_trace(run, max_messages=3)
    assert sum(e["ph"] == "b" for e in doc["traceEvents"]) == 3
    assert doc["otherData"]["messages_dropped"] == len(run.messages.src) - 3


def test_a_run_without_a_window_has_no_timeline() -> None:
    machine = load_machine("ec2-c4.8xlarge", 2)
    workload = synthetic_workload("uniform:parts=6x6,steps=2,cells=2")
    r = simulate(workload, place(workload, machine, "cyclic", seed=0), machine)
    with pytest.raises(InputError, match="timeline"):
        chrome_trace(r)
