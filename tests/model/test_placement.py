from __future__ import annotations

import json

import numpy as np
import pytest

from grapeshot.model.atomic import write_text_atomic
from grapeshot.model.errors import InputError
from grapeshot.model.machine import Machine, NodeTree
from grapeshot.model.placement import (
    Placement,
    load_imbalance,
    load_placement,
    placement_metrics,
    save_placement,
)
from grapeshot.model.workload import Workload, grid_halo


def _workload() -> Workload:
    cost = np.array([[4.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    return Workload((4, 4), (2, 2), cost, grid_halo((4, 4), (2, 2), corners=False))


def test_lif_by_hand() -> None:
    w = _workload()
    p = Placement(np.array([0, 0, 1, 1]), nodes=2, strategy="hand")
    mt = placement_metrics(p, w)
    assert mt.node_load.tolist() == [[4.0, 0.0], [2.0, 2.0]]
    assert mt.lif.tolist() == [1.0, 0.0]
    assert mt.lif_mean == 0.5 and mt.lif_max == 1.0
    # Faces only: partition 0-1 and 2-3 are on the same node; 0-2 and 1-3 are cut, both ways,
    # 2 cells x 1 ghost x 8 bytes each.
    assert mt.bytes_cut == 4 * 16
    assert mt.bytes_total == 8 * 16
    assert mt.neighbour_nodes.tolist() == [1, 1]


def test_neighbour_nodes_count_distinct_nodes_messaged() -> None:
    rng = np.random.default_rng(5)
    shape, nodes = (12, 10), 7
    w = Workload((24, 20), shape, np.ones((1, 120)), grid_halo((24, 20), shape, corners=True))
    node_of = rng.integers(0, nodes, 120)
    mt = placement_metrics(Placement(node_of, nodes=nodes, strategy="hand"), w)
    seen: list[set[int]] = [set() for _ in range(nodes)]
    for s, d in zip(w.halo.sources().tolist(), w.halo.indices.tolist(), strict=True):
        if node_of[s] != node_of[d]:
            seen[node_of[s]].add(int(node_of[d]))
    assert mt.neighbour_nodes.tolist() == [len(x) for x in seen]


def test_lif_per_core_on_unequal_nodes() -> None:
    load = np.array([[2.0, 4.0]])
    assert load_imbalance(load).tolist() == [pytest.approx(1 / 3)]
    assert load_imbalance(load, np.array([1.0, 2.0])).tolist() == [0.0]
    assert load_imbalance(np.zeros((1, 3))).tolist() == [0.0]


def test_metrics_check_sizes() -> None:
    w = _workload()
    with pytest.raises(InputError, match="places 3 partitions"):
        placement_metrics(Placement(np.array([0, 0, 1]), 2, "x"), w)
    m = Machine("m", 3, NodeTree((("core", 2),)))
    with pytest.raises(InputError, match="is for 2 nodes"):
        placement_metrics(Placement(np.array([0, 0, 1, 1]), 2, "x"), w, m)
    with pytest.raises(InputError, match="out of range"):
        Placement(np.array([0, 2]), 2, "x")


def test_placement_file_round_trip(tmp_path, reader) -> None:
    p = Placement(np.array([1, 0, 1]), nodes=2, strategy="birdshot", seed=7)
    path = tmp_path / "p.json"
    save_placement(path, p, metrics={"lif_mean": 0.1})
    data = json.loads(path.read_text())
    assert data["metrics"] == {"lif_mean": 0.1}
    back = load_placement(path)
    assert back.node_of.tolist() == [1, 0, 1] and back.seed == 7 and back.strategy == "birdshot"


def test_bad_placement_file(tmp_path, reader) -> None:
    path = tmp_path / "p.json"
    path.write_text('{"format": "grapeshot-placement",\n "nodes": 2,\n')
    with pytest.raises(InputError, match=r"p\.json line 3: invalid JSON"):
        load_placement(path)
    # Broken after a list the compiled reader takes: json.loads's line, in the whole file.
    path.write_text('{"format": "grapeshot-placement", "node_of": [\n0,\n1\n],\n "nodes": 2,\n')
    with pytest.raises(InputError, match=r"p\.json line 6: invalid JSON"):
        load_placement(path)
    write_text_atomic(path, json.dumps({"format": "grapeshot-placement", "nodes": 2}))
    with pytest.raises(InputError, match="node_of: missing"):
        load_placement(path)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("node_of", [0, 1.7, 1], "node_of[1]: is 1.7; expected a node number"),
        ("node_of", [0, True], "node_of[1]: is true; expected a node number"),
        ("node_of", [0, 10**30], f"node_of[1]: is {10**30}; expected a node number"),
        ("node_of", 5, "node_of: is 5; expected a list of node numbers"),
        ("core_of", [0.5, 1, 2], "core_of[0]: is 0.5; expected a core number"),
        ("core_of", [0, "1", 2], 'core_of[1]: is "1"; expected a core number'),
    ],
)
def test_a_json_placement_takes_integers_only(tmp_path, key, value, message, reader) -> None:
    """Not numpy's casts: 1.7 and true would both have been read as node 1."""
    doc = {"format": "grapeshot-placement", "nodes": 2, "strategy": "x", "node_of": [0, 1, 1]}
    path = tmp_path / "p.json"
    path.write_text(json.dumps({**doc, key: value}))
    with pytest.raises(InputError) as err:
        load_placement(path)
    assert str(err.value) == f"{path}: {message}"
