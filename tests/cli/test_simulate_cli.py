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


@pytest.fixture
def trace128(tmp_path: Path) -> Path:
    """A trace file of 16 x 8 = 128 partitions: not a multiple of 4 nodes x 18 cores."""
    path = tmp_path / "t128.h5"
    save_workload(path, synthetic_workload("dambreak:parts=16x8,cells=8,steps=4,cell_cost=1e-5"))
    return path


def test_a_trace_runs_as_it_comes_on_any_machine(trace128: Path, tmp_path: Path) -> None:
    args = ("--trace", str(trace128), "--machine", "ec2-c4.8xlarge", "--nodes", "4")
    result = invoke(*args, "--strategy", "geometric,birdshot", "--json", "--figure",
                    str(tmp_path / "sim.png"))  # fmt: skip
    # Before: "--ppc: needs 72 partitions; the trace's 128 partitions (16x8) merge into no
    # grid of exactly 72 whole blocks", with no --ppc given.
    assert result.code == 0, result.err
    assert result.err == ""  # 128 partitions keep all 72 cores busy: no note
    doc = json.loads(result.out)
    assert doc["total_cores"] == 72 and doc["cores_per_node"] == 18
    assert [r["strategy"] for r in doc["runs"]] == ["geometric", "birdshot"]
    for run in doc["runs"]:
        assert run["parts"] == 128 and run["parts_shape"] == [16, 8]
        assert run["ppc"] == pytest.approx(128 / 72) and run["parts_per_core"] == run["ppc"]
        assert RUN_KEYS <= set(run) and run["total_time"] > 0
    assert (tmp_path / "sim.png").stat().st_size > 1000
    table = invoke(*args, "--strategy", "birdshot", "--no-figure")
    assert table.code == 0, table.err
    row = next(line.split() for line in table.out.splitlines() if line.startswith("birdshot"))
    assert row[1:3] == ["1.78", "128"]
    assert "Use birdshot at 1.78 per core" in " ".join(table.out.split())
    # Resizing happens only when asked, and --ppc 1 cannot merge 16 x 8 into 72 blocks.
    asked = invoke(*args, "--ppc", "1", "--json", "--no-figure")
    assert asked.code == 2 and "needs 72 partitions" in asked.error


def test_a_spec_runs_as_written_unless_ppc_is_given() -> None:
    common = ("--synthetic", SPEC, "--machine", "ec2-c4.8xlarge", "--nodes", "4",
              "--strategy", "birdshot", "--json", "--no-figure")  # fmt: skip
    (given,) = json.loads(invoke(*common).out)["runs"]
    assert given["parts"] == 128 and given["parts_shape"] == [16, 8]
    assert given["ppc"] == pytest.approx(128 / 72)
    (resized,) = json.loads(invoke(*common, "--ppc", "1").out)["runs"]
    assert resized["parts"] == 72 and resized["ppc"] == 1 and resized["parts_per_core"] == 1.0


def test_same_command_same_numbers_as_it_comes(trace128: Path) -> None:
    args = ("--trace", str(trace128), "--machine", "ec2-c4.8xlarge", "--nodes", "3",
            "--strategy", "birdshot,cyclic", "--seed", "4", "--pin", "--json",
            "--no-figure")  # fmt: skip
    first, second = invoke(*args), invoke(*args)
    assert first.code == 0, first.err
    assert json.loads(first.out) == json.loads(second.out)
    assert {r["parts"] for r in json.loads(first.out)["runs"]} == {128}


@pytest.mark.parametrize(
    ("spec", "note"),
    [
        ("dambreak:parts=4x4,steps=2", "16 partitions on 72 cores: 56 cores get none and idle "
         "(0.222 per core)"),
        ("dambreak:parts=2x1,steps=2", "2 partitions on 4 nodes: 2 nodes get none (0.0278 per "
         "core)"),
    ],
)  # fmt: skip
def test_fewer_partitions_than_cores_run_with_a_note(spec: str, note: str) -> None:
    result = invoke("--synthetic", spec, "--machine", "ec2-c4.8xlarge", "--nodes", "4",
                    "--json", "--no-figure")  # fmt: skip
    assert result.code == 0, result.err
    assert result.err.startswith(f"grapeshot simulate: warning: {note}; fewer --nodes")
    assert result.err.count("\n") == 1 and "--ppc K" in result.err
    runs = json.loads(result.out)["runs"]
    assert all(np.isfinite(r["total_time"]) and r["parts_per_core"] < 1 for r in runs)


def test_timeline_run_names_a_run_as_it_comes(trace128: Path, tmp_path: Path) -> None:
    args = ("--trace", str(trace128), "--machine", "ec2-c4.8xlarge", "--nodes", "4",
            "--no-figure", "--timeline", str(tmp_path / "tl.json"))  # fmt: skip
    ok = invoke(*args, "--timeline-run", "birdshot")
    assert ok.code == 0, ok.err
    assert "timeline (birdshot) written" in ok.out
    assert json.loads((tmp_path / "tl.json").read_text())["otherData"]["partitions"] == 128
    bad = invoke(*args, "--timeline-run", "birdshot:1")
    assert bad.code == 2
    assert bad.error == "--timeline-run: got 'birdshot:1'; expected one of geometric, birdshot"


def test_help_says_workloads_run_as_they_come() -> None:
    text = " ".join(invoke("--help").out.split())
    assert "Without --ppc the workload runs as it comes" in text
    assert "only when asked" in text
