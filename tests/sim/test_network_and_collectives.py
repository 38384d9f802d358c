"""Topologies (hops, routes, shared links) and global operations (linear vs binomial tree)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from grapeshot.model.errors import InputError
from grapeshot.model.machine import Machine, Network, NodeTree
from grapeshot.model.machine_file import load_machine
from grapeshot.model.placement import Placement
from grapeshot.model.topology import torus_box as torus_dims
from grapeshot.model.workload import HaloGraph, Workload
from grapeshot.sim import Overheads, SimOptions, allreduce, allreduce_time, network_model, simulate


def machine(nodes: int, topology: str = "flat", **params: object) -> Machine:
    net = Network(topology=topology, latency=10e-6, bandwidth=1e9, params=params)
    return Machine("test", nodes, NodeTree((("core", 1),)), net)


def test_fat_tree_hops_and_routes() -> None:
    net = network_model(machine(16, "fat-tree", arity=4))
    assert int(net.net_i[4]) == 2  # levels: 4**2 >= 16
    assert net.hops(0, 0) == 0
    assert net.hops(0, 3) == 0  # same leaf switch
    assert net.hops(0, 4) == 2  # through the level-2 switch
    assert len(net.route(0, 3)) == 0
    route = net.route(1, 13)
    assert len(route) == 2  # up from leaf 0, down to leaf 3
    assert len(set(route)) == 2
    # The same leaf's up-link is shared by every message leaving that leaf.
    assert net.route(0, 5)[0] == net.route(3, 9)[0]
    assert net.latency(0, 4) == pytest.approx(10e-6 + 2 * 100e-9)


def test_fat_tree_parents_taper_the_links_above_each_level() -> None:
    # Four senders of one leaf (nodes 0-3) to four nodes of another leaf (4-7) all cross the
    # leaf's up-link: the fewer parents per switch, the thinner it is and the longer they
    # take. One message alone still runs at its NIC's rate, and traffic inside a leaf uses
    # no up-link at all.
    nbytes = 10_000_000
    cross = [(i, 4 + i) for i in range(4)]
    times = [
        exchange(machine(16, "fat-tree", arity=4, parents=p), cross, nbytes) for p in (4, 2, 1)
    ]
    assert times[0] < times[1] < times[2]
    assert exchange(machine(16, "fat-tree", arity=4), cross, nbytes) == times[0]  # default: 4
    for parents in (1, 2):
        m = machine(16, "fat-tree", arity=4, parents=parents)
        assert exchange(m, [(0, 4)], nbytes) == pytest.approx(nbytes / 1e9, rel=1e-2)
        assert exchange(m, [(0, 1), (2, 3)], nbytes) == pytest.approx(
            exchange(machine(16, "fat-tree", arity=4), [(0, 1), (2, 3)], nbytes)
        )


@pytest.mark.parametrize(
    ("params", "field"), [({"parents": 5, "arity": 4}, "parents"), ({"parents": 0}, "parents")]
)
def test_fat_tree_parents_out_of_range_is_an_input_error(params, field) -> None:
    with pytest.raises(InputError, match=rf"network\.fat_tree\.{field}"):
        machine(16, "fat-tree", **params)


def test_torus_hops_wrap_around_and_routes_are_dimension_ordered() -> None:
    net = network_model(machine(64, "torus3d", dims=[4, 4, 4], nodes_per_router=1))
    coords = lambda x, y, z: (x * 4 + y) * 4 + z  # noqa: E731
    assert net.hops(coords(0, 0, 0), coords(3, 0, 0)) == 1  # the wrap link
    assert net.hops(coords(0, 0, 0), coords(2, 2, 2)) == 6
    assert net.hops(coords(1, 2, 3), coords(1, 2, 3)) == 0
    route = net.route(coords(0, 0, 0), coords(2, 1, 0))
    assert len(route) == 3
    axes = (route % 6) // 2
    assert list(axes) == [0, 0, 1]  # x first, then y
    # Vectorised hops agree with routes.
    a = np.arange(64)
    b = (a * 37 + 11) % 64
    assert all(net.hops(i, j) == len(net.route(i, j)) for i, j in zip(a, b, strict=True))


def test_torus_default_dims_fit_the_routers() -> None:
    for routers in (1, 2, 7, 16, 27, 100, 1000):
        x, y, z = torus_dims(routers)
        assert x * y * z >= routers and x >= y >= z
    assert torus_dims(64) == (4, 4, 4)
    net = network_model(load_machine("bluewaters-xe6"))
    x, y, z = (int(v) for v in net.net_i[5:8])
    assert x * y * z * 2 >= 32


def test_torus_dims_too_small_is_an_input_error() -> None:
    with pytest.raises(InputError, match="dims"):
        network_model(machine(64, "torus3d", dims=[2, 2, 2], nodes_per_router=1))


def exchange(m: Machine, pairs: list[tuple[int, int]], nbytes: int) -> float:
    """Partition i sits on pairs[i][0] and sends once to a partition on pairs[i][1]."""
    k = len(pairs)
    node_of = np.array([a for a, _ in pairs] + [b for _, b in pairs], dtype=np.int32)
    indptr = np.concatenate([np.arange(k + 1), np.full(k, k)]).astype(np.int64)
    halo = HaloGraph(indptr, np.arange(k, 2 * k, dtype=np.int64), np.full(k, nbytes, np.int64))
    w = Workload((2 * k, 1), (2 * k, 1), np.zeros((2, 2 * k)), halo)
    r = simulate(w, Placement(node_of, m.nodes, "x"), m, SimOptions(overheads=Overheads.none()))
    return r.total_time


def test_torus_links_are_shared() -> None:
    m = machine(8, "torus3d", dims=[8, 1, 1], nodes_per_router=1)
    nbytes = 10_000_000
    alone = exchange(m, [(0, 2)], nbytes)
    # Two flows over the same +x link 1 -> 2 share it; two flows on disjoint links do not.
    shared = exchange(m, [(0, 2), (1, 3)], nbytes)
    disjoint = exchange(m, [(0, 2), (4, 6)], nbytes)
    assert disjoint == pytest.approx(alone, rel=1e-9)
    assert shared == pytest.approx(alone + nbytes / 1e9, rel=1e-6)


def test_flat_network_has_no_shared_links() -> None:
    m = machine(8)
    nbytes = 10_000_000
    alone = exchange(m, [(0, 2)], nbytes)
    assert exchange(m, [(0, 2), (1, 3)], nbytes) == pytest.approx(alone, rel=1e-12)


def test_linear_and_binomial_closed_forms_without_overhead() -> None:
    for n in (2, 5, 8, 32, 33):
        net = network_model(machine(n))
        lat, bw, b = 10e-6, 1e9, 64
        hop = lat + b / bw
        assert allreduce_time(net, algorithm="linear", nbytes=b, overhead=0.0) == pytest.approx(
            2 * hop, rel=1e-12
        )
        binomial = allreduce_time(net, algorithm="binomial", nbytes=b, overhead=0.0)
        depth = max(bin(r).count("1") for r in range(n))  # log2(n) for powers of two
        assert binomial == pytest.approx(2 * depth * hop, rel=1e-12)
        if n & (n - 1) == 0:
            assert depth == math.log2(n)


def test_linear_pays_the_root_per_message() -> None:
    n, o = 32, 2e-6
    net = network_model(machine(n))
    lat = 10e-6
    linear = allreduce_time(net, algorithm="linear", nbytes=0, overhead=o)
    assert linear == pytest.approx(2 * lat + 2 * n * o, rel=1e-12)


def test_linear_beats_the_tree_in_a_cloud_and_loses_on_a_fast_fabric() -> None:
    """Birdshot §6.2: with cloud latency a flat exchange beats log2(n) hops each way."""
    cloud = network_model(load_machine("ec2-c4.8xlarge", 32))
    lin = allreduce_time(cloud, algorithm="linear", overhead=2e-6)
    tree = allreduce_time(cloud, algorithm="binomial", overhead=2e-6)
    assert 2.0 < tree / lin < 3.5
    fast = network_model(load_machine("lassen", 32))
    assert allreduce_time(fast, algorithm="linear", overhead=2e-6) > allreduce_time(
        fast, algorithm="binomial", overhead=2e-6
    )


def test_allreduce_waits_for_the_last_arrival() -> None:
    net = network_model(machine(8))
    arrive = np.zeros(8)
    arrive[5] = 1e-3
    for algorithm in ("linear", "binomial"):
        rel = allreduce(arrive, net, algorithm=algorithm, overhead=0.0)
        assert rel.min() >= 1e-3
    with pytest.raises(InputError, match=r"collective|algorithm"):
        allreduce(arrive, net, algorithm="ring")
    with pytest.raises(InputError, match="arrive"):
        allreduce(np.zeros(3), net)


def test_sync_per_step_adds_the_collective_to_every_step() -> None:
    m = machine(8)
    n = 16
    w = Workload(
        (n, 1),
        (n, 1),
        np.full((4, n), 1e-4),
        HaloGraph(np.zeros(n + 1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)),
    )
    pl = Placement(np.repeat(np.arange(8, dtype=np.int32), 2), 8, "block")
    base = simulate(w, pl, m, SimOptions(overheads=Overheads.none()))
    net = network_model(m)
    for algorithm in ("linear", "binomial"):
        opts = SimOptions(overheads=Overheads.none(), sync="allreduce", collective=algorithm)
        r = simulate(w, pl, m, opts)
        cost = allreduce_time(net, algorithm=algorithm, overhead=0.0)
        assert r.total_time == pytest.approx(base.total_time + 4 * cost, rel=1e-9)
        np.testing.assert_allclose(r.makespan, 2e-4 + cost, rtol=1e-9)


@pytest.mark.parametrize("name", ["ec2-c4.8xlarge", "bluewaters-xe6", "plafrim", "lassen", "cm5"])
def test_event_loop_and_network_model_agree_message_by_message(name: str) -> None:
    """The event loop carries its own copy of the transmit statements: replaying its inter-node
    messages, in the order it sent them, through NetworkModel.transmit gives the same times."""
    from grapeshot.model.synthetic import synthetic_workload
    from grapeshot.place import place

    m = load_machine(name, 12)
    workload = synthetic_workload("uniform:parts=16x12,steps=3,cells=6,a=0.01,b=0.5")
    placement = place(workload, m, "birdshot", seed=4)
    r = simulate(workload, placement, m, timeline_steps=(0, 3))
    net = network_model(m)
    state = net.new_state()
    msgs = r.messages
    assert msgs is not None and len(msgs.src) > 100
    node_of = placement.node_of
    replay = np.array(
        [
            net.transmit(state, node_of[s], node_of[d], b, t)
            for s, d, b, t in zip(msgs.src, msgs.dst, msgs.nbytes, msgs.sent, strict=True)
        ]
    )
    assert np.array_equal(replay, msgs.delivered)
