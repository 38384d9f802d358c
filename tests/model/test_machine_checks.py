"""One check of every machine: sizes within grapeshot's limits, networks big enough for the
nodes, wherever the machine comes from (a constructor, a file, --nodes)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from grapeshot.model.errors import InputError
from grapeshot.model.machine import MAX_CORES, MAX_NODES, Machine, Network, NodeTree
from grapeshot.model.machine_file import load_machine, load_machine_file
from grapeshot.model.presets import PRESETS, preset

ONE_CORE = NodeTree((("core", 1),))


def _torus(dims: tuple[int, int, int], npr: int = 1) -> Network:
    return Network(topology="torus3d", params={"dims": dims, "nodes_per_router": npr})


def _fat(arity: int, levels: int) -> Network:
    return Network(topology="fat-tree", params={"arity": arity, "levels": levels})


@pytest.mark.parametrize(
    ("nodes", "network", "field"),
    [
        (64, _torus((2, 2, 2), 2), "network.torus3d.dims"),  # 16 nodes' worth of routers
        (9, _torus((2, 2, 2)), "network.torus3d.dims"),
        (24, _fat(2, 2), "network.fat_tree.levels"),  # holds 4
        (17, _fat(4, 2), "network.fat_tree.levels"),  # holds 16
        (MAX_NODES + 1, Network(), "nodes"),
        (10**11, Network(), "nodes"),
    ],
)
def test_a_network_too_small_or_a_machine_too_big_is_refused(nodes, network, field) -> None:
    with pytest.raises(InputError) as info:
        Machine("m", nodes, ONE_CORE, network)
    assert info.value.where == field


@pytest.mark.parametrize(
    ("nodes", "network"),
    [(16, _torus((2, 2, 2), 2)), (8, _torus((2, 2, 2))), (4, _fat(2, 2)), (16, _fat(4, 2)),
     (3, _fat(2, 5)), (MAX_NODES, Network())],
)  # fmt: skip
def test_networks_that_hold_their_nodes_are_accepted(nodes, network) -> None:
    assert Machine("m", nodes, ONE_CORE, network).nodes == nodes


def test_too_many_cores_in_all_or_per_node_are_refused_before_anything_is_sized() -> None:
    with pytest.raises(InputError, match=rf"at most {MAX_CORES} cores in all"):
        Machine("m", MAX_NODES, NodeTree((("core", 32),)))
    with pytest.raises(InputError, match=r"^node\.levels: give 1000000000000 cores per node"):
        NodeTree((("socket", 10**6), ("core", 10**6)), core_numbering=(0,))
    with pytest.raises(InputError, match="in all"):
        Machine("m", 2, ONE_CORE, node_cores=(MAX_CORES, 1))


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"dims": [2048, 2048, 2]}, "network.torus3d.dims"),  # more routers than MAX_NODES
        ({"link_weights": [1.0, float("inf"), 1.0]}, "network.torus3d.link_weights"),
        ({"nodes_per_router": 10**30}, "network.torus3d.nodes_per_router"),
    ],
)
def test_torus_parameters_have_bounds(params, field) -> None:
    with pytest.raises(InputError) as info:
        Network(topology="torus3d", params=params)
    assert info.value.where == field


@pytest.mark.parametrize(("key", "value"), [("levels", 65), ("arity", 10**30), ("levels", 0)])
def test_fat_tree_parameters_have_bounds(key: str, value: int) -> None:
    with pytest.raises(InputError, match=rf"network\.fat_tree\.{key}"):
        Network(topology="fat-tree", params={key: value})


def test_with_nodes_names_the_option_and_the_field_that_refuses() -> None:
    small = Machine("small", 8, ONE_CORE, _torus((2, 2, 2)))
    assert small.with_nodes(5).nodes == 5
    with pytest.raises(InputError) as info:
        small.with_nodes(9)
    assert info.value.where == "--nodes"
    assert "small's network.torus3d.dims" in info.value.problem
    with pytest.raises(InputError, match=r"^--nodes: got 100000000000; expected an integer in"):
        preset("plafrim").with_nodes(10**11)
    # dataclasses.replace (what with_nodes uses) runs the same check as the constructor
    with pytest.raises(InputError, match=r"network\.fat_tree\.levels"):
        dataclasses.replace(Machine("f", 4, ONE_CORE, _fat(2, 2)), nodes=5)


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_resizes_within_the_limits(name: str) -> None:
    # Presets size their networks to the nodes, so any legal node count is accepted.
    assert preset(name).with_nodes(4096).nodes == 4096


FILE = """
name = "{name}"
nodes = {nodes}
[node]
levels = [["core", 8]]
[network]
topology = "{topology}"
{section}
"""


def _write(tmp_path: Path, nodes, topology="flat", section="") -> Path:
    path = tmp_path / "m.toml"
    path.write_text(FILE.format(name="m", nodes=nodes, topology=topology, section=section))
    return path


@pytest.mark.parametrize(
    ("nodes", "topology", "section", "where"),
    [
        (100_000_000_000, "flat", "", "nodes"),
        (64, "torus3d", "[network.torus3d]\ndims = [2, 2, 2]\nnodes_per_router = 2", "dims"),
        (24, "fat-tree", "[network.fat_tree]\narity = 2\nlevels = 2", "levels"),
    ],
)
def test_machine_files_are_refused_in_one_line_naming_file_and_field(
    tmp_path, nodes, topology, section, where
) -> None:
    path = _write(tmp_path, nodes, topology, section)
    with pytest.raises(InputError) as info:
        load_machine_file(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and where in info.value.where and "\n" not in message
    if where == "nodes":
        assert "1048576" in message  # the limit is named


def test_resizing_a_file_past_its_network_names_nodes(tmp_path) -> None:
    path = _write(tmp_path, 4, "fat-tree", "[network.fat_tree]\narity = 2\nlevels = 2")
    assert load_machine(str(path)).nodes == 4
    with pytest.raises(InputError, match=r"^--nodes: got 24; m's network\.fat_tree\.levels"):
        load_machine(str(path), 24)


def test_heterogeneous_nodes_describe_their_cores_as_a_range() -> None:
    het = Machine("het", 4, NodeTree((("core", 16),)), node_cores=(16, 16, 32, 64))
    assert het.describe_cores() == "16–64" and not het.uniform
    assert preset("plafrim").describe_cores() == "8" and preset("plafrim").uniform
