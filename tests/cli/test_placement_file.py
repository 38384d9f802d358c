"""``--placement FILE`` for ``simulate`` and ``run``: what ``place --out`` writes is read back;
a per-rank file (``place --ranks``) is shown, run on its ranks, and its header checked."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.cli.helpers import run_main
from tests.fuzz import example_file, fuzz
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


# Per-rank files (place --ranks): shown, run, and their headers checked.

RANKS_SPEC = "dambreak:parts=4x4,steps=2"


def _per_rank_file(folder: Path, name: str = "r.part", ranks: str = "2") -> Path:
    out = folder / name
    placed = run_main("place", "--synthetic", RANKS_SPEC, "--machine", "plafrim",
                      "--nodes", "1", "--strategy", "geometric", "--ranks", ranks,
                      "--out", str(out))  # fmt: skip
    assert placed.code == 0, placed.err
    return out


@pytest.mark.parametrize("suffix", ["part", "csv", "json"])
def test_show_tells_a_per_rank_file(tmp_path: Path, suffix: str) -> None:
    out = _per_rank_file(tmp_path, f"r.{suffix}", ranks="3")
    facts = run_main("show", str(out), "--json").json()
    assert facts["kind"] == "placement" and ("nodes" not in facts or suffix == "json")
    assert (facts["ranks"], facts["grid"], facts["parts"]) == (3, [4, 4], 16)
    assert (facts["parts_per_rank_min"], facts["parts_per_rank_max"]) == (5, 6)
    human = run_main("show", str(out))
    assert "a per-rank placement of grapeshot place --ranks --out: partition → MPI rank" in (
        " ".join(human.out.split())
    )


def test_show_refuses_a_header_that_disagrees_in_one_line(tmp_path: Path) -> None:
    out = _per_rank_file(tmp_path)
    lines = out.read_text().splitlines()
    out.write_text("\n".join([lines[0].replace("16 partitions", "17 partitions"), *lines[1:]]))
    result = run_main("show", str(out))
    assert result.code == 2 and result.err.count("\n") == 1, result.err
    assert result.error.startswith(f"{out}: line 1: says parts 4x4 (16 partitions) and 17")


#: First lines of a per-rank file, near-valid and not.
HEADERS = st.builds(
    "# grapeshot placement: parts {}, {} partition{}, {} rank{}".format,
    st.sampled_from(["4x4", "16", "2x2x4", "4x4x1x1", "0x4", "4x", "", "٤x4"]),
    st.sampled_from(["16", "15", "", "-16", "9" * 19]),
    st.sampled_from(["s", ""]),
    st.sampled_from(["1", "2", "3", "0", "", "2147483648"]),
    st.sampled_from(["s", "", "s junk"]),
) | st.text(alphabet="# grapeshotplacement:x0123456789,\t\r", max_size=60).map("#".__add__)


@fuzz(0.15)
@given(HEADERS, st.sampled_from([".part", ".csv"]), st.integers(0, 2))
def test_show_of_any_header_fuzz(header: str, suffix: str, ranks: int) -> None:
    """A per-rank file with any first line: shown, or one line naming the file and a line,
    exit 2, no traceback."""
    rows = [f"{p},{(p * 7) % (ranks + 1)}" for p in range(16)]
    body = (
        ("partition,rank\n" + "\n".join(rows))
        if suffix == ".csv"
        else "\n".join(r.split(",")[1] for r in rows)
    )
    path = example_file(header + "\n" + body + "\n", suffix)
    result = run_main("show", str(path), "--json")
    assert result.code in (0, 2) and "Traceback" not in result.err, result.err
    if result.code == 2:
        assert result.err.count("\n") == 1 and result.error.startswith(f"{path}: line "), result.err
    else:
        assert result.json()["parts"] == 16 and result.json()["ranks"] >= 1


@pytest.mark.mpi
def test_run_takes_a_per_rank_file(tmp_path: Path) -> None:
    out, record = _per_rank_file(tmp_path), tmp_path / "run.h5"
    args = ["-m", "grapeshot.cli.main", "run", "swe", "--parts", "4,4", "--steps", "2",
            "--placement", str(out)]  # fmt: skip
    proc = run_mpi(2, [*args, "--record", str(record), "--json"])
    assert json.loads(proc.stdout.strip().splitlines()[-1])["ranks"] == 2
    with h5py.File(record) as f:
        node_of = f["run/node_of"][()]
    # Each rank ran the partitions the file gives it (its header line aside).
    assert np.array_equal(node_of, np.array(out.read_text().splitlines()[1:], dtype=int))
    assert sorted(np.bincount(node_of).tolist()) == [8, 8]
    # The file is for 2 ranks: refused on 3, in one line.
    wrong = run_mpi(3, args, check=False)
    lines = wrong.stderr.strip().splitlines()
    assert wrong.returncode == 2 and len(lines) == 1, wrong.stderr
    assert "is for 2 ranks; expected 3, the ranks of this run (mpiexec -n 2)" in lines[0]


def test_simulate_refuses_a_per_rank_placement(tmp_path: Path) -> None:
    """Its ranks are not the machine's nodes: one line, not a run on 'ranks' nodes."""
    part = tmp_path / "p.part"
    placed = run_main(
        "place", "--grid", "8x8", "--machine", "ec2-c4.8xlarge", "--nodes", "2",
        "--strategy", "geometric", "--ranks", "4", "--out", str(part),
    )  # fmt: skip
    assert placed.code == 0, placed.err
    result = run_main(
        "simulate", "--placement", str(part), "--synthetic", "binary:parts=8x8,steps=2",
        "--machine", "ec2-c4.8xlarge", "--no-figure",
    )  # fmt: skip
    assert result.code == 2 and "MPI ranks" in result.err, result.err
    assert result.err.count("\n") == 1, result.err
