"""``--placement FILE`` for ``simulate`` and ``run``: what ``place --out`` writes is read back."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest

from tests.cli.helpers import run_main
from tests.mpi_harness import run_mpi

SPEC = "dambreak:parts=24x24,steps=6"


@pytest.fixture(scope="module")
def placement(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("placement") / "p.json"
    result = run_main(
        "place",
        "--synthetic",
        SPEC,
        "--machine",
        "plafrim",
        "--nodes",
        "4",
        "--strategy",
        "birdshot",
        "--seed",
        "5",
        "--out",
        str(out),
    )
    assert result.code == 0, result.err
    return out


def test_simulate_runs_the_file_as_the_strategy_would(placement: Path) -> None:
    common = (
        "simulate",
        "--synthetic",
        SPEC,
        "--machine",
        "plafrim",
        "--seed",
        "5",
        "--no-figure",
        "--json",
    )
    from_file = run_main(*common, "--placement", str(placement))
    assert from_file.code == 0, from_file.err
    (run,) = from_file.json()["runs"]
    assert run["strategy"] == "placement" and run["parts"] == 576
    assert from_file.json()["nodes"] == 4  # the file's nodes are the default --nodes
    again = run_main(*common, "--nodes", "4", "--strategy", "birdshot", "--ppc", "18")
    (same,) = again.json()["runs"]
    assert run["step_time_mean"] == same["step_time_mean"] and run["lif_mean"] == same["lif_mean"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ("--synthetic", "dambreak:parts=16x24,steps=6"),
            "places 576 partitions; expected 384, the partitions of --synthetic",
        ),
        (("--synthetic", SPEC, "--nodes", "8"), "is for 4 nodes; expected 8, the machine's"),
        (("--synthetic", SPEC, "--strategy", "sfc"), "given with --strategy sfc"),
        (("--synthetic", SPEC, "--ppc", "2"), "given with --ppc 2"),
    ],
)
def test_simulate_refuses_a_placement_that_does_not_fit(
    placement: Path, extra: tuple[str, ...], message: str
) -> None:
    result = run_main("simulate", "--machine", "plafrim", "--placement", str(placement), *extra)
    assert result.code == 2 and result.err.count("\n") == 1, result.err
    assert message in result.error and "--placement" in result.error


def test_a_file_that_is_not_a_placement(tmp_path: Path) -> None:
    bad = tmp_path / "p.json"
    bad.write_text(json.dumps({"format": "grapeshot-placement", "nodes": 2}))
    result = run_main(
        "simulate", "--synthetic", SPEC, "--machine", "plafrim", "--placement", str(bad)
    )
    assert result.code == 2 and f"{bad}: node_of: missing" in result.error


@pytest.mark.mpi
def test_run_uses_the_placement_on_two_ranks(tmp_path: Path) -> None:
    out, record = tmp_path / "p.json", tmp_path / "run.h5"
    placed = run_main(
        "place",
        "--synthetic",
        "dambreak:parts=4x4,steps=2",
        "--machine",
        "plafrim",
        "--nodes",
        "2",
        "--strategy",
        "cyclic",
        "--out",
        str(out),
    )
    assert placed.code == 0, placed.err
    proc = run_mpi(
        2,
        [
            "-m",
            "grapeshot.cli.main",
            "run",
            "swe",
            "--parts",
            "4,4",
            "--steps",
            "2",
            "--placement",
            str(out),
            "--record",
            str(record),
            "--json",
        ],
    )
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["strategy"] == f"placement {out}"
    with h5py.File(record) as f:
        node_of = f["run/node_of"][()]
    assert np.array_equal(node_of, json.loads(out.read_text())["node_of"])
    # Three ranks for a two-node placement: one line from rank 0, exit 2.
    wrong = run_mpi(
        3,
        [
            "-m",
            "grapeshot.cli.main",
            "run",
            "swe",
            "--parts",
            "4,4",
            "--steps",
            "2",
            "--placement",
            str(out),
        ],
        check=False,
    )
    lines = wrong.stderr.strip().splitlines()
    assert wrong.returncode == 2 and len(lines) == 1, wrong.stderr
    assert "is for 2 nodes; expected 3, the ranks of this run" in lines[0]


def test_run_refuses_a_placement_of_other_partitions(placement: Path) -> None:
    result = run_main("run", "swe", "--parts", "4,4", "--steps", "2", "--placement", str(placement))
    assert result.code == 2 and "places 576 partitions; expected 16" in result.error
