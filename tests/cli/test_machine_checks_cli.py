"""Every command that takes a machine refuses a bad one the same way: one line, status 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import run_main

SPEC = "dambreak:parts=8x8,steps=2"

BAD = {
    # a torus of 8 routers at 2 nodes each, for 64 nodes
    "torus": (
        "nodes = 64\n[node]\nlevels = [['core', 8]]\n[network]\ntopology = 'torus3d'\n"
        "[network.torus3d]\ndims = [2, 2, 2]\nnodes_per_router = 2\n",
        "network.torus3d.dims: [2, 2, 2] has 8 routers",
    ),
    # 2 levels of 2-port switches hold 4 nodes, not 24
    "fat": (
        "nodes = 24\n[node]\nlevels = [['core', 8]]\n[network]\ntopology = 'fat-tree'\n"
        "[network.fat_tree]\narity = 2\nlevels = 2\n",
        "network.fat_tree.levels: 2 levels of arity 2 hold 4 nodes, for 24 nodes",
    ),
    # refused by its size, not by a MemoryError
    "huge": (
        "nodes = 100000000000\n[node]\nlevels = [['core', 16]]\n",
        "nodes: got 100000000000; expected an integer in [1, 1048576]",
    ),
}


@pytest.fixture
def matrix(tmp_path: Path) -> Path:
    path = tmp_path / "a.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real symmetric\n4 4 2\n2 1 10\n4 3 7\n")
    return path


def _commands(machine: str, matrix: Path) -> list[tuple[str, ...]]:
    return [
        ("show", machine),
        ("place", "--synthetic", SPEC, "--machine", machine),
        ("simulate", "--synthetic", SPEC, "--machine", machine, "--no-figure"),
        ("map", "--matrix", str(matrix), "--machine", machine),
        ("map", "--synthetic", SPEC, "--machine", machine, "--strategy", "geometric"),
        ("exchange", "--pattern", "regular:n=8,d=2", "--simulate", machine),
    ]


@pytest.mark.parametrize("case", list(BAD))
def test_every_command_refuses_a_bad_machine_file_in_one_line(
    tmp_path: Path, matrix: Path, case: str
) -> None:
    text, problem = BAD[case]
    machine = tmp_path / f"{case}.toml"
    machine.write_text(f"name = '{case}'\n{text}")
    for args in _commands(str(machine), matrix):
        result = run_main(*args)
        assert result.code == 2, (args, result.err)
        assert result.err.count("\n") == 1 and "Traceback" not in result.err, result.err
        assert result.error.startswith(f"{machine}: {problem}"), (args, result.error)


def test_resizing_past_the_limit_names_nodes() -> None:
    result = run_main("place", "--synthetic", SPEC, "--machine", "cm5", "--nodes", "2000000")
    assert result.code == 2 and result.error.startswith("--nodes: got 2000000; expected")


def test_show_gives_the_range_of_cores_when_nodes_differ(tmp_path: Path) -> None:
    path = tmp_path / "het.toml"
    path.write_text("name = 'het'\nnodes = 4\nnode_cores = [16, 16, 32, 64]\n"
                    "[node]\nlevels = [['core', 16]]\n")  # fmt: skip
    shown = run_main("show", str(path), "--json").json()
    assert shown["cores_per_node"] == "16–64"
    assert shown["node_cores"] == "2 of 16, 1 of 32, 1 of 64" and shown["total_cores"] == 128
    human = run_main("show", str(path), columns=100).out
    line = next(x for x in human.splitlines() if "cores per node" in x)
    assert line.split()[-1] == "16–64"  # not the largest count alone
