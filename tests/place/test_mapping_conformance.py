"""The conformance suite of the mapping strategies (STYLE 11), reusing the placement checks.

Every strategy of :data:`MAPPING_STRATEGIES`, on trees and on workloads: every task on a valid
core, balanced counts per core (hence per node within the quota rule's bound), bit-for-bit
determinism under a seed, the same InputError for bad input; and through
:func:`place_by_mapping`, the placement contract of ``tests/place/test_conformance.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from grapeshot.apps.commbench import commbench_matrix, make_trace
from grapeshot.model.errors import InputError
from grapeshot.model.machine import Machine, NodeTree
from grapeshot.model.presets import preset
from grapeshot.model.synthetic import synthetic_workload
from grapeshot.model.topology import TreeTopology, parse_tleaf
from grapeshot.place.mapping import (
    MAPPING_STRATEGIES,
    RANDOMISED_MAPPINGS,
    get_mapping_strategy,
    map_tasks,
    place_by_mapping,
)
from grapeshot.place.partitioners import available
from grapeshot.place.treematch import mapping_cost
from tests.place.test_conformance import assert_places_every_partition

STRATEGIES = sorted(MAPPING_STRATEGIES)

CASES = {
    "fits": (24, "tleaf 2 4 10 8 1"),
    "exact": (32, "tleaf 2 4 10 8 1"),
    "oversubscribed": (100, "tleaf 2 4 10 8 1"),
    "odd-arities": (50, "tleaf 3 3 100 5 10 2 1"),
    "one-task": (1, "tleaf 1 4 1"),
    "one-core": (9, "tleaf 1 1 1"),
}


def _matrix(n: int) -> sp.csr_array:
    if n < 3:
        return sp.csr_array((n, n))
    m = commbench_matrix(n, seed=n)
    return (m + m.T).tocsr().astype(float)


def _skip_missing(name: str) -> None:
    if name in ("metis", "kahip", "scotch") and not available(name):
        pytest.skip(f"{name}'s package is not installed")


def assert_balanced_on_cores(core_of: np.ndarray, n: int, leaves: int) -> None:
    """Every task on a core of the tree, each core floor or ceil of n / cores tasks."""
    assert core_of.shape == (n,)
    assert core_of.min() >= 0 and core_of.max() < leaves
    counts = np.bincount(core_of, minlength=leaves)
    assert counts.max() - counts.min() <= 1


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("name", STRATEGIES)
def test_every_task_on_a_core_balanced(name: str, case: str) -> None:
    _skip_missing(name)
    n, tleaf = CASES[case]
    tree = parse_tleaf(tleaf)
    core = np.asarray(MAPPING_STRATEGIES[name](_matrix(n), tree, seed=3))
    assert_balanced_on_cores(core, n, tree.leaves)


@pytest.mark.parametrize("name", STRATEGIES)
def test_same_seed_same_mapping_bit_for_bit(name: str) -> None:
    _skip_missing(name)
    tree = parse_tleaf("tleaf 2 4 10 8 1")
    a = _matrix(90)
    first = np.asarray(MAPPING_STRATEGIES[name](a, tree, seed=7))
    again = np.asarray(MAPPING_STRATEGIES[name](a, tree, seed=7))
    assert first.tobytes() == again.tobytes()
    if name not in RANDOMISED_MAPPINGS:
        other = np.asarray(MAPPING_STRATEGIES[name](a, tree, seed=8))
        assert first.tobytes() == other.tobytes()


@pytest.mark.parametrize("name", STRATEGIES)
def test_bad_input_raises_input_error(name: str) -> None:
    _skip_missing(name)
    tree = parse_tleaf("tleaf 1 4 1")
    with pytest.raises(InputError) as info:
        map_tasks(_matrix(20), tree, name, oversub=2)
    assert info.value.where == "--oversub"
    with pytest.raises(InputError):
        map_tasks(-np.ones((4, 4)), tree, name)
    with pytest.raises(InputError) as info:
        map_tasks(_matrix(8), tree, name, seed=-1)
    assert info.value.where == "seed"


@pytest.mark.parametrize("bad", ["TreeMatch", "", None, "greedy"])
def test_unknown_strategy_lists_the_valid_ones(bad) -> None:
    with pytest.raises(InputError) as info:
        get_mapping_strategy(bad)
    assert info.value.where == "--strategy"
    for name in MAPPING_STRATEGIES:
        assert name in info.value.expected


def test_topology_aware_strategies_beat_packed_on_commbench() -> None:
    tree = parse_tleaf("tleaf 3 4 1000 2 100 8 10")
    a = _matrix(256)
    packed = map_tasks(a, tree, "packed")["cost"]["sum_com"]
    for name in ("treematch", "metis", "kahip", "scotch"):
        if name != "treematch" and not available(name):
            continue
        assert map_tasks(a, tree, name, seed=1)["cost"]["sum_com"] < 0.8 * packed


def test_map_tasks_reports_cost_and_time() -> None:
    tree = parse_tleaf("tleaf 2 2 10 4 1")
    out = map_tasks(_matrix(16), tree, "treematch")
    assert set(out) == {"core_of", "seconds", "cost", "strategy", "oversub"}
    assert out["oversub"] == 2 and out["seconds"] >= 0
    assert out["cost"] == mapping_cost(_matrix(16), tree, np.asarray(out["core_of"]))


# --- on workloads and machines ------------------------------------------------------------------

WORKLOADS = {
    "commbench": lambda: make_trace("default", (16, 16), 2, seed=1),
    "stencil": lambda: synthetic_workload("uniform:parts=12x10,steps=2"),
}
MACHINES = {
    "torus": lambda: preset("bluewaters-xe6").with_nodes(4),
    "fat-tree": lambda: preset("plafrim").with_nodes(6),
    "flat": lambda: preset("ec2-c4.8xlarge").with_nodes(3),
    "one-node": lambda: preset("plafrim").with_nodes(1),
}


@pytest.mark.parametrize("machine", sorted(MACHINES))
@pytest.mark.parametrize("workload", sorted(WORKLOADS))
@pytest.mark.parametrize("name", STRATEGIES)
def test_place_by_mapping_meets_the_placement_contract(name, workload, machine) -> None:
    _skip_missing(name)
    wl = WORKLOADS[workload]()
    m = MACHINES[machine]()
    placement = place_by_mapping(wl, m, name, seed=5)
    assert_places_every_partition(placement.node_of, wl.parts_shape, m.nodes)
    counts = np.bincount(placement.node_of, minlength=m.nodes)
    exact = wl.n_parts * m.cores() / m.total_cores
    assert np.all(np.abs(counts - exact) < m.cores_per_node + 1e-9)
    core_counts = np.bincount(
        placement.node_of.astype(np.int64) * m.cores_per_node + placement.core_of,
        minlength=m.total_cores,
    )
    assert core_counts.max() - core_counts.min() <= 1
    again = place_by_mapping(wl, m, name, seed=5)
    assert placement.node_of.tobytes() == again.node_of.tobytes()
    assert placement.core_of.tobytes() == again.core_of.tobytes()


def test_heterogeneous_nodes_are_refused() -> None:
    m = Machine("mixed", 2, NodeTree((("core", 4),)), node_cores=(4, 2))
    wl = WORKLOADS["stencil"]()
    with pytest.raises(InputError, match="node_cores"):
        place_by_mapping(wl, m, "treematch")


def test_tree_of_one_leaf_takes_everything() -> None:
    core = MAPPING_STRATEGIES["treematch"](_matrix(5), TreeTopology((1,), (0.0,)), seed=0)
    assert np.asarray(core).tolist() == [0] * 5
