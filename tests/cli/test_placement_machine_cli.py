"""``simulate --placement FILE --machine M``: a machine file's node count is the user's word.

A placement naming a node the machine file does not have is refused in one line (issue 40
item 5: node 13 of a 12-node file once ran on "14 × lab" with exit 0); ``--nodes`` still
resizes on request. A preset's node count is its paper's example size, so a preset takes the
placement's count when ``--nodes`` is not given.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.helpers import run_main

SPEC = "binary:parts=8x8,steps=2"
PARTS = 64


@pytest.fixture
def lab(tmp_path: Path) -> Path:
    path = tmp_path / "lab.toml"
    path.write_text('name = "lab"\nnodes = 12\n[node]\nlevels = [["core", 4]]\n')
    return path


def _csv(path: Path, nodes: dict[int, int], default_nodes: int) -> Path:
    """A placement CSV of the SPEC's partitions, ``i % default_nodes`` but where ``nodes``
    says otherwise (partition → node)."""
    rows = [f"{i},{nodes.get(i, i % default_nodes)}" for i in range(PARTS)]
    path.write_text("partition,node\n" + "\n".join(rows) + "\n")
    return path


def _simulate(machine: Path | str, placement: Path, *extra: str):
    return run_main(
        "simulate", "--synthetic", SPEC, "--machine", str(machine), "--placement",
        str(placement), "--no-figure", "--json", *extra,
    )  # fmt: skip


def test_a_node_the_machine_file_lacks_is_refused_in_one_line(tmp_path: Path, lab: Path) -> None:
    placement = _csv(tmp_path / "p.csv", {5: 13}, 12)
    result = _simulate(lab, placement)
    assert result.code == 2, result.out
    assert result.err.count("\n") == 1 and "Traceback" not in result.err, result.err
    assert result.error == (
        f"--placement {placement}: puts partition 5 on node 13; expected nodes 0 to 11: "
        f"{lab} has 12 nodes (--nodes 14 resizes it)"
    )


def test_nodes_given_resizes_the_machine_file(tmp_path: Path, lab: Path) -> None:
    placement = _csv(tmp_path / "p.csv", {5: 13}, 12)
    result = _simulate(lab, placement, "--nodes", "14")
    assert result.code == 0, result.err
    assert result.json()["nodes"] == 14 and result.json()["machine"] == "lab"
    too_few = _simulate(lab, placement, "--nodes", "13")
    assert too_few.code == 2
    assert too_few.error.endswith("expected nodes 0 to 12: the machine has 13 nodes (--nodes)")


def test_a_placement_on_some_nodes_runs_on_all_the_files_nodes(tmp_path: Path, lab: Path) -> None:
    # A .csv holds no node count: nodes 0..9 named of 12 leave two idle, not a 10-node lab.
    placement = _csv(tmp_path / "p.csv", {}, 10)
    result = _simulate(lab, placement)
    assert result.code == 0, result.err
    assert result.json()["nodes"] == 12


def test_a_json_placement_for_other_nodes_is_refused(tmp_path: Path, lab: Path) -> None:
    # A JSON placement says its node count: 14 nodes where the file has 12.
    out = tmp_path / "p.json"
    made = run_main("place", "--synthetic", SPEC, "--machine", str(lab), "--nodes", "14",
                    "--strategy", "cyclic", "--out", str(out))  # fmt: skip
    assert made.code == 0, made.err
    assert max(json.loads(out.read_text())["node_of"]) == 13
    result = _simulate(lab, out)
    assert result.code == 2 and "node 13" in result.error and f"{lab} has 12 nodes" in result.error
    # Nodes 0..9 of a 10-node JSON placement all exist in the file, but it was made for 10.
    made = run_main("place", "--synthetic", SPEC, "--machine", str(lab), "--nodes", "10",
                    "--strategy", "cyclic", "--out", str(out))  # fmt: skip
    assert made.code == 0, made.err
    result = _simulate(lab, out)
    assert result.code == 2
    assert result.error.endswith(f"is for 10 nodes; expected 12, the machine's ({lab})")
    assert _simulate(lab, out, "--nodes", "10").code == 0


def test_a_preset_takes_the_placements_node_count(tmp_path: Path) -> None:
    # A preset's 32 nodes are its paper's example size, not the user's description.
    placement = _csv(tmp_path / "p.csv", {5: 13}, 12)
    result = _simulate("cm5", placement)
    assert result.code == 0, result.err
    assert result.json()["nodes"] == 14


@pytest.mark.parametrize("machine", ["cm5", "lab"])
def test_a_node_past_the_limit_is_named_not_a_nodes_option(
    tmp_path: Path, lab: Path, machine: str
) -> None:
    # No --nodes was given: the refusal names the placement's node, for a preset as for a file.
    placement = _csv(tmp_path / "p.csv", {5: 2_000_000}, 12)
    result = _simulate(lab if machine == "lab" else machine, placement)
    assert result.code == 2 and result.err.count("\n") == 1, result.err
    assert result.error.startswith(f"--placement {placement}: puts partition 5 on node 2000000")
    assert result.error.endswith("(grapeshot models at most 1048576)")
