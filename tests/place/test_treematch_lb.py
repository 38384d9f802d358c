"""TreeMatchLB: smoothing, network layout, node level, refinement; in the simulator; on MPI."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from grapeshot.apps.commbench import commbench_matrix, make_trace
from grapeshot.model.errors import InputError
from grapeshot.model.presets import preset
from grapeshot.model.topology import network_graph, node_topology
from grapeshot.place import place
from grapeshot.place.dynamic import DynamicStrategy
from grapeshot.place.treematch import symmetric_affinity
from grapeshot.place.treematch_lb import (
    TreeMatchLB,
    relabel_by_overlap,
    smooth_loads,
    treematch_lb,
)
from grapeshot.sim import SimOptions, simulate
from tests.mpi_harness import run_mpi
from tests.place.mpi_treematch_lb import digest


def _case(nodes: int, per_core: int = 8, seed: int = 0, machine: str = "bluewaters-xe6"):
    m = preset(machine).with_nodes(nodes)
    p = nodes * m.cores_per_node * per_core
    a = commbench_matrix(p, seed=seed)
    comm = (a + a.T).tocsr().astype(float)
    loads = np.random.default_rng(seed).uniform(50, 100, size=p)
    start = np.arange(p) * nodes // p
    return m, comm, loads, start


def node_imbalance(loads, node_of, cores) -> float:
    per = np.bincount(node_of, weights=loads, minlength=len(cores)) / cores
    return float((per.max() - per.min()) / per.mean())


def test_smoothing_brings_node_loads_within_alpha_and_keeps_counts() -> None:
    rng = np.random.default_rng(4)
    loads = rng.uniform(50, 100, size=64 * 128)
    node_of = np.arange(len(loads)) % 128
    cores = np.full(128, 32)
    assert node_imbalance(loads, node_of, cores) > 0.05  # theorem 1, row 1: it is needed
    new, swaps, moves = smooth_loads(loads, node_of, cores, alpha=0.05)
    assert node_imbalance(loads, new, cores) <= 0.05
    assert swaps > 0 and moves == 0
    np.testing.assert_array_equal(np.bincount(new), np.bincount(node_of))


def test_smoothing_does_nothing_when_balanced() -> None:
    loads = np.ones(40)
    node_of = np.arange(40) % 4
    new, swaps, moves = smooth_loads(loads, node_of, np.full(4, 2))
    assert swaps == moves == 0 and np.array_equal(new, node_of)


def test_relabel_keeps_unchanged_groups_in_place() -> None:
    current = np.repeat(np.arange(4), 5)
    group = np.repeat([2, 0, 3, 1], 5)
    assert np.array_equal(relabel_by_overlap(group, current, 4), current)


@pytest.mark.parametrize("partitioner", ["treematch", "metis", "keep"])
def test_treematch_lb_balances_and_cuts_hop_bytes(partitioner: str) -> None:
    m, comm, loads, start = _case(16, per_core=4)
    result = treematch_lb(loads, comm, start, m, partitioner=partitioner)
    cores = m.cores()
    assert node_imbalance(loads, result.node_of, cores) <= 0.05 + 1e-12
    assert result.core_of.min() >= 0 and result.core_of.max() < m.cores_per_node
    # Per node, the cores' loads within (1 + eps) of the node's mean, or no move was possible.
    tree = node_topology(m.node)
    for v in range(m.nodes):
        mine = result.node_of == v
        per_core = np.bincount(result.core_of[mine], weights=loads[mine], minlength=32)
        assert per_core.max() <= 1.05 * per_core.mean() + loads.max()
    assert tree.leaves == 32
    w = symmetric_affinity(comm).tocoo()
    dist = network_graph(m).distance_matrix()

    def hop_bytes(node_of):
        return float((w.data * dist[node_of[w.row], node_of[w.col]]).sum())

    if partitioner == "keep":
        assert hop_bytes(result.node_of) <= hop_bytes(start)
    else:
        assert hop_bytes(result.node_of) < 0.7 * hop_bytes(start)


def test_deterministic() -> None:
    m, comm, loads, start = _case(8, per_core=4, seed=2)
    a = treematch_lb(loads, comm, start, m)
    b = treematch_lb(loads, comm, start, m)
    assert a.node_of.tobytes() == b.node_of.tobytes()
    assert a.core_of.tobytes() == b.core_of.tobytes()


def test_one_node_is_treematch_on_its_cores() -> None:
    m, comm, loads, start = _case(1, per_core=3, machine="plafrim")
    result = treematch_lb(np.ones_like(loads), comm, start, m)
    assert (result.node_of == 0).all()
    assert np.bincount(result.core_of, minlength=8).tolist() == [3] * 8


@pytest.mark.parametrize(
    ("kwargs", "where"),
    [({"alpha": 1.5}, "alpha/eps"), ({"partitioner": "magic"}, "partitioner")],
)
def test_bad_parameters(kwargs, where) -> None:
    m, comm, loads, start = _case(2, per_core=1)
    with pytest.raises(InputError) as info:
        treematch_lb(loads, comm, start, m, **kwargs)
    assert info.value.where == where


def test_bad_inputs() -> None:
    m, comm, loads, start = _case(2, per_core=1)
    with pytest.raises(InputError, match="comm"):
        treematch_lb(loads[:-1], comm, start[:-1], m)
    with pytest.raises(InputError, match="node_of"):
        treematch_lb(loads, comm, start + 5, m)
    with pytest.raises(InputError, match="loads"):
        treematch_lb(-loads, comm, start, m)


def test_dynamic_strategy_in_the_simulator_beats_no_balancing() -> None:
    strategy = TreeMatchLB(interval=3)
    assert isinstance(strategy, DynamicStrategy)
    machine = preset("bluewaters-xe6").with_nodes(4)
    wl = make_trace("default", (64, 64), 6, seed=1)
    placement = place(wl, machine, strategy.initial, seed=0)
    options = SimOptions(sync="barrier")
    none = simulate(wl, placement, machine, options)
    tmlb = simulate(wl, placement, machine, options, dynamic=strategy)
    assert tmlb.total_time < 0.9 * none.total_time


def test_dynamic_strategy_without_comm_only_smooths() -> None:
    strategy = TreeMatchLB()
    loads = np.array([[4.0, 1.0, 1.0, 1.0]])
    new = strategy.rebalance(
        step=1,
        loads=loads,
        node_of=np.array([0, 0, 1, 1]),
        cores=np.array([1, 1]),
        state_bytes=np.zeros(4, dtype=np.int64),
    )
    # No swap helps (4 + 1 against 1 + 1); moving a light chare does: 4 | 1 + 1 + 1.
    assert new is not None and new.tolist() == [0, 1, 1, 1]
    with pytest.raises(InputError):
        TreeMatchLB(interval=0)


@pytest.mark.mpi
@pytest.mark.parametrize(("nodes", "per_core"), [(8, 4), (1, 2)])  # (1, 2): a rank with no node
def test_node_level_over_two_ranks_equals_serial(nodes: int, per_core: int) -> None:
    serial = digest(nodes, per_core, mpi=False)
    proc = run_mpi(2, ["-m", "tests.place.mpi_treematch_lb", str(nodes), str(per_core)], work=15)
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["ranks"] == 2 and got["all_same"]
    assert got["stats"] == serial["stats"]  # refinement moves counted over both ranks
    assert got["digest"] == serial["digest"]


def test_sparse_input_types_accepted() -> None:
    m, comm, loads, start = _case(2, per_core=2)
    a = treematch_lb(loads, sp.coo_matrix(comm), start, m)
    b = treematch_lb(loads, comm.toarray(), start, m)
    assert np.array_equal(a.node_of, b.node_of)


def test_keeps_a_geometric_stencil_placement_that_cuts_less() -> None:
    from tests.place.test_treematch import stencil2d

    m = preset("bluewaters-xe6").with_nodes(4)
    comm = stencil2d(64, 64)
    start = (np.arange(64)[:, None] // 16 * np.ones(64, dtype=int)[None, :]).ravel()
    loads = np.ones(64 * 64)
    result = treematch_lb(loads, comm, start, m)
    assert result.stats["kept_groups"]
    assert result.stats["migrated"] == 0
