from __future__ import annotations

import numpy as np
import pytest

from grapeshot.model.errors import InputError
from grapeshot.model.machine import Machine, Network, NodeTree
from grapeshot.model.machine_file import load_machine, load_machine_file
from grapeshot.model.presets import PRESETS, preset


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_builds_and_is_consistent(name: str) -> None:
    m = preset(name)
    assert m.name == name
    assert m.cores().shape == (m.nodes,)
    assert m.total_cores == m.nodes * m.cores_per_node
    assert m.network.bandwidth > 0 and m.network.latency >= 0


def test_preset_figures_from_the_papers() -> None:
    ec2 = preset("ec2-c4.8xlarge")
    assert ec2.cores_per_node == 18 and ec2.network.topology == "flat"
    assert ec2.network.bandwidth == pytest.approx(1.25e9)
    assert 2 * ec2.network.latency == pytest.approx(100e-6)
    plafrim = preset("plafrim")
    assert plafrim.node.physical_cores().tolist() == [0, 2, 4, 6, 1, 3, 5, 7]
    bw = preset("bluewaters-xe6")
    assert bw.cores_per_node == 32 and bw.network.topology == "torus3d"
    assert bw.network.params["nodes_per_router"] == 2
    assert bw.network.params["link_weights"] == (2.0, 1.0, 2.0)
    assert preset("cm5").network.node_contention and preset("cm5").cores_per_node == 1
    assert preset("lassen").cores_per_node == 40
    assert preset("gcp-n1-highmem-8").cores_per_node == 8


def test_unknown_preset_lists_the_valid_ones() -> None:
    with pytest.raises(InputError, match=r"ec2-c4\.8xlarge"):
        load_machine("ec2-c5")


def test_with_nodes_and_heterogeneous_cores() -> None:
    m = load_machine("plafrim", nodes=3)
    assert m.nodes == 3 and m.cores().tolist() == [8, 8, 8]
    het = Machine("het", 3, NodeTree((("core", 4),)), node_cores=(4, 8, 4))
    assert het.cores().tolist() == [4, 8, 4] and het.total_cores == 16
    with pytest.raises(InputError, match="node_cores"):
        Machine("bad", 2, NodeTree((("core", 4),)), node_cores=(4,))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"topology": "hypercube"}, "network.topology"),
        ({"latency": -1.0}, "network.latency"),
        ({"bandwidth": 0.0}, "network.bandwidth"),
        ({"topology": "torus3d", "params": {"dims": [2, 2]}}, "network.torus3d.dims"),
        ({"topology": "flat", "params": {"arity": 4}}, "network.flat.arity"),
    ],
)
def test_network_validation_names_the_field(kwargs: dict, field: str) -> None:
    with pytest.raises(InputError, match=field.replace(".", r"\.")):
        Network(**kwargs)


def test_node_tree_validation() -> None:
    assert NodeTree((("socket", 2), ("core", 9))).cores == 18
    with pytest.raises(InputError, match="core_numbering"):
        NodeTree((("core", 4),), core_numbering=(0, 1, 2, 2))
    with pytest.raises(InputError, match=r"node\.levels\[1\]"):
        NodeTree((("socket", 2), ("core", 0)))


GOOD = """
name = "mine"
nodes = 4

[node]
levels = [["socket", 2], ["core", 4]]
core_numbering = [0, 2, 4, 6, 1, 3, 5, 7]

[network]
topology = "torus3d"
latency = 2e-6
bandwidth = 5e9

[network.torus3d]
dims = [2, 1, 1]
nodes_per_router = 2
link_weights = [2.0, 1.0, 2.0]
"""


def test_machine_file_round_trip(tmp_path) -> None:
    path = tmp_path / "m.toml"
    path.write_text(GOOD)
    m = load_machine(str(path))
    assert m.name == "mine" and m.nodes == 4 and m.cores_per_node == 8
    assert m.network.params["dims"] == (2, 1, 1)
    assert load_machine(str(path), nodes=2).nodes == 2


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        (
            GOOD.replace("latency", "latancy"),
            r"network\.latancy: unknown key \(did you mean .latency.\?\)",
        ),
        (GOOD.replace("nodes = 4", "nodes = 0"), r"nodes: got 0"),
        (GOOD.replace('name = "mine"\n', ""), r"name: missing; expected name = \"my-cluster\""),
        (GOOD.replace("nodes = 4\n", ""), r"nodes: missing; expected nodes = 64 \(the node count"),
        (GOOD.replace('["core", 4]', '["core", -4]'), r"node\.levels\[1\]"),
        (GOOD.replace("bandwidth = 5e9", 'bandwidth = "fast"'), r"network\.bandwidth"),
        (GOOD.replace("[network.torus3d]", "[network.fat_tree]"), r"network\.fat_tree"),
        (GOOD + "\n[node\n", r"invalid TOML.*line"),
    ],
)
def test_malformed_machine_file_errors_name_file_and_field(tmp_path, text, pattern) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(InputError, match=pattern) as info:
        load_machine_file(path)
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_machine_file(tmp_path) -> None:
    with pytest.raises(InputError, match="cannot read"):
        load_machine(str(tmp_path / "nope.toml"))


def test_cores_array_dtype() -> None:
    assert preset("cm5").cores().dtype == np.int64
