"""``grapeshot simulate`` through the real entry point, ``grapeshot.cli.main.main``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from grapeshot.model.synthetic import synthetic_workload
from grapeshot.model.workload_file import save_workload
from tests.cli.helpers import ERROR_PREFIX, Result, run_main

SPEC = "dambreak:parts=16x8,cells=8,steps=4,cell_cost=1e-5"
RUN_KEYS = {
    "strategy",
    "ppc",
    "seed",
    "total_time",
    "step_time_mean",
    "lif_mean",
    "lif_max",
    "hidden_comm_fraction",
    "bytes_sent",
    "bytes_migrated",
}


def invoke(*args: str) -> Result:
    return run_main("simulate", *args)


def test_json_has_the_scripted_interface(tmp_path: Path) -> None:
    result = invoke(
        "--synthetic",
        SPEC,
        "--machine",
        "ec2-c4.8xlarge",
        "--nodes",
        "4",
        "--strategy",
        "geometric,birdshot",
        "--ppc",
        "1,2",
        "--seed",
        "3",
        "--json",
        "--figure",
        str(tmp_path / "figs" / "sim.png"),
    )
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert doc["machine"] == "ec2-c4.8xlarge" and doc["nodes"] == 4
    assert [(r["strategy"], r["ppc"]) for r in doc["runs"]] == [
        ("geometric", 1),
        ("birdshot", 1),
        ("geometric", 2),
        ("birdshot", 2),
    ]
    for run in doc["runs"]:
        assert RUN_KEYS <= set(run)
        assert run["seed"] == 3 and run["total_time"] > 0 and run["bytes_migrated"] == 0
        assert run["parts"] == 4 * 18 * run["ppc"]
    assert (tmp_path / "figs" / "sim.png").stat().st_size > 1000
    assert doc["figures"] == [str(tmp_path / "figs" / "sim.png")]


def test_same_command_same_numbers(tmp_path: Path) -> None:
    args = (
        "--synthetic",
        SPEC,
        "--machine",
        "plafrim",
        "--nodes",
        "4",
        "--ppc",
        "2",
        "--strategy",
        "birdshot",
        "--json",
        "--no-figure",
    )
    first = json.loads(invoke(*args).out)
    second = json.loads(invoke(*args).out)
    assert first == second


def test_table_and_timeline(tmp_path: Path) -> None:
    timeline = tmp_path / "run.json"
    result = invoke(
        "--synthetic",
        SPEC,
        "--machine",
        "ec2-c4.8xlarge",
        "--nodes",
        "3",
        "--strategy",
        "geometric,birdshot",
        "--ppc",
        "1,2",
        "--timeline",
        str(timeline),
        "--timeline-run",
        "birdshot:2",
        "--timeline-steps",
        "1:3",
        "--figure",
        str(tmp_path / "sim.png"),
    )
    assert result.code == 0, result.err
    text = " ".join(result.out.split())
    assert "birdshot" in text and "LIF" in text
    use = re.search(
        r"Use (\w+) at (\d+) per core: .* (?:faster than|as fast as) (\w+) at its best", text
    )
    assert use and use.group(1) != use.group(3), text
    doc = json.loads(timeline.read_text())
    assert doc["otherData"]["strategy"] == "birdshot"
    assert doc["otherData"]["partitions"] == 3 * 18 * 2
    tasks = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert {e["args"]["step"] for e in tasks} == {1, 2}


def test_trace_file_is_coarsened_to_the_ppc(tmp_path: Path) -> None:
    trace = tmp_path / "run.h5"
    save_workload(trace, synthetic_workload("uniform:parts=36x24,steps=3,cells=2"))
    ok = invoke(
        "--trace",
        str(trace),
        "--machine",
        "ec2-c4.8xlarge",
        "--nodes",
        "4",
        "--ppc",
        "1,3",
        "--step-range",
        "1:3",
        "--json",
        "--no-figure",
    )
    assert ok.code == 0, ok.err
    runs = json.loads(ok.out)["runs"]
    assert [r["parts"] for r in runs] == [72, 72, 216, 216]
    assert all(r["steps"] == 2 for r in runs)
    too_many = invoke(
        "--trace",
        str(trace),
        "--machine",
        "ec2-c4.8xlarge",
        "--nodes",
        "4",
        "--ppc",
        "16",
        "--json",
    )
    assert too_many.code == 2 and too_many.out == ""
    assert "needs 1152 partitions but the trace has 864" in too_many.error


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("--machine", "ec2-c4.8xlarge"), "exactly one"),
        (
            ("--synthetic", SPEC, "--machine", "ec2-c4.8xlarge", "--strategy", "bogus"),
            "unknown strategy 'bogus'",
        ),
        (("--synthetic", SPEC, "--machine", "ec2-c4.8xlarge", "--ppc", "0"), "--ppc"),
        (("--synthetic", SPEC, "--machine", "ec2-c4.8xlarge", "--ppc", "two"), "--ppc"),
        (
            ("--synthetic", SPEC, "--machine", "ec2-c4.8xlarge", "--step-range", "3:1"),
            "--step-range",
        ),
        (("--synthetic", SPEC, "--machine", "ec2-c4.8xlarge", "--sync", "often"), "--sync"),
        (
            ("--synthetic", SPEC, "--machine", "ec2-c4.8xlarge", "--collective", "ring"),
            "--collective",
        ),
        (
            ("--synthetic", SPEC, "--machine", "ec2-c4.8xlarge", "--task-overhead", "-1"),
            "task overhead",
        ),
        (("--synthetic", SPEC, "--machine", "nowhere"), "unknown preset"),
        (
            (
                "--synthetic",
                SPEC,
                "--machine",
                "ec2-c4.8xlarge",
                "--timeline",
                "x.json",
                "--timeline-run",
                "birdshot:9",
            ),
            "--timeline-run",
        ),
    ],
)
def test_bad_input_is_an_input_error(args: tuple[str, ...], match: str) -> None:
    result = invoke(*args, "--no-figure")
    assert result.code == 2, result.err
    assert result.err == f"{ERROR_PREFIX}{result.error}\n"  # one line, nothing else
    assert match in result.error


def test_help_teaches_the_model() -> None:
    result = invoke("--help")
    assert result.code == 0
    text = " ".join(result.out.split())
    for phrase in (
        "first in, first out",
        "latency + bytes / bandwidth",
        "node contention",
        "Partitions per core",
        "LIF",
        "hidden",
    ):
        assert phrase in text


def test_synthetic_help_lists_the_kinds() -> None:
    result = invoke("--synthetic", "help", "--machine", "cm5")
    assert result.code == 0 and "dambreak" in result.out


def test_reactive_strategy_runs_from_the_command_line() -> None:
    result = invoke(
        "--synthetic",
        "dambreak:parts=16x8,cells=8,steps=35,cell_cost=1e-5",
        "--machine",
        "ec2-c4.8xlarge",
        "--nodes",
        "4",
        "--strategy",
        "reactive",
        "--ppc",
        "2",
        "--json",
        "--no-figure",
    )
    assert result.code == 0, result.err
    run = json.loads(result.out)["runs"][0]
    assert run["strategy"] == "reactive"
    assert np.isfinite(run["total_time"])
