"""Closed-form checks: runs whose simulated time can be written down exactly."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from grapeshot.model.machine import Machine, Network, NodeTree
from grapeshot.model.placement import Placement
from grapeshot.model.workload import HaloGraph, Workload, grid_halo
from grapeshot.sim import Overheads, SimOptions, simulate

NONE = SimOptions(overheads=Overheads.none())


def machine(nodes: int, cores: int, **network: object) -> Machine:
    net = Network(**{"latency": 50e-6, "bandwidth": 1.25e9, **network})
    return Machine("test", nodes, NodeTree((("core", cores),)), net)


def halo(n_parts: int, edges: list[tuple[int, int, int]]) -> HaloGraph:
    """A halo graph from (source, destination, bytes) triples."""
    edges = sorted(edges)
    src = np.array([e[0] for e in edges], dtype=np.int64)
    indptr = np.zeros(n_parts + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n_parts), out=indptr[1:])
    return HaloGraph(
        indptr,
        np.array([e[1] for e in edges], dtype=np.int64),
        np.array([e[2] for e in edges], dtype=np.int64),
    )


def line_workload(cost: np.ndarray, edges: list[tuple[int, int, int]]) -> Workload:
    n = cost.shape[1]
    return Workload((n, 1), (n, 1), cost, halo(n, edges))


def test_one_node_runs_total_cost_over_cores() -> None:
    m = machine(1, 4)
    cost = np.full((5, 8), 1e-3)
    w = line_workload(cost, [])
    r = simulate(w, Placement(np.zeros(8, dtype=np.int32), 1, "one"), m, NONE)
    assert r.total_time == pytest.approx(cost.sum() / 4, rel=1e-12)
    assert r.busy_fraction == pytest.approx(1.0)


def test_one_node_with_halo_and_free_copies_still_divides_exactly() -> None:
    m = machine(1, 6)
    w = Workload((24, 24), (6, 4), np.full((4, 24), 2e-3), grid_halo((24, 24), (6, 4)))
    r = simulate(w, Placement(np.zeros(24, dtype=np.int32), 1, "one"), m, NONE)
    assert r.total_time == pytest.approx(w.cost.sum() / 6, rel=1e-12)


@pytest.mark.parametrize("nbytes", [8, 100_000, 10_000_000])
def test_two_node_ping_pong_costs_two_latencies_plus_transfers(nbytes: int) -> None:
    m = machine(2, 1)
    w = line_workload(np.zeros((3, 2)), [(0, 1, nbytes), (1, 0, nbytes)])
    r = simulate(w, Placement(np.array([0, 1], dtype=np.int32), 2, "pp"), m, NONE)
    one_way = m.network.latency + nbytes / m.network.bandwidth
    assert r.total_time == pytest.approx(2 * one_way, rel=1e-12)
    assert r.bytes_sent_total == 2 * 2 * nbytes


def test_ping_pong_across_a_fat_tree_adds_switch_hops() -> None:
    m = machine(4, 1, topology="fat-tree", params={"arity": 2})
    w = line_workload(np.zeros((3, 2)), [(0, 1, 1000), (1, 0, 1000)])
    near = simulate(w, Placement(np.array([0, 1], dtype=np.int32), 4, "near"), m, NONE)
    far = simulate(w, Placement(np.array([0, 3], dtype=np.int32), 4, "far"), m, NONE)
    hop = 100e-9  # the fat tree's default hop latency
    assert far.total_time - near.total_time == pytest.approx(2 * 2 * hop, rel=1e-9)


@pytest.mark.parametrize(("nodes", "cores", "ppc"), [(4, 3, 2), (7, 18, 1), (32, 2, 5)])
def test_balanced_program_without_communication_takes_its_per_node_share(
    nodes: int, cores: int, ppc: int
) -> None:
    m = machine(nodes, cores)
    n = nodes * cores * ppc
    steps = 3
    w = line_workload(np.full((steps, n), 4e-4), [])
    node_of = np.repeat(np.arange(nodes, dtype=np.int32), cores * ppc)
    r = simulate(w, Placement(node_of, nodes, "block"), m, NONE)
    share = w.cost.sum() / nodes / cores
    assert r.total_time == pytest.approx(share, rel=1e-12)
    np.testing.assert_allclose(r.makespan, share / steps, rtol=1e-12)
    assert r.lif_max == pytest.approx(0.0, abs=1e-12)


def test_birdshot_figure_5_two_partitions_per_core_hide_communication() -> None:
    """Two single-core nodes, two steps (Birdshot §6.1, figure 5).

    One partition per core: each node computes step a, waits for its neighbour's data, then
    computes step b. Two per core: while 3-b waits for 1-a's data, node 2 runs 4-a, and so on;
    when a message takes less than half a step, all communication is hidden.
    """
    m = machine(2, 1)
    work = 1e-3  # seconds of computation per node per step
    nbytes = 125_000  # per fine partition: 100 µs at 1.25 GB/s
    one_way = m.network.latency + nbytes / m.network.bandwidth
    assert one_way <= work / 2

    coarse = line_workload(np.full((2, 2), work), [(0, 1, 2 * nbytes), (1, 0, 2 * nbytes)])
    r1 = simulate(coarse, Placement(np.array([0, 1], dtype=np.int32), 2, "1/core"), m, NONE)
    expected_1 = 2 * work + m.network.latency + 2 * nbytes / m.network.bandwidth
    assert r1.total_time == pytest.approx(expected_1, rel=1e-12)
    assert r1.hidden_comm_fraction == pytest.approx(0.0, abs=1e-12)

    # Partitions 1, 2 on node 1 and 3, 4 on node 2 (ids 0..3): 1 <-> 3 and 2 <-> 4 exchange.
    fine = line_workload(
        np.full((2, 4), work / 2), [(0, 2, nbytes), (2, 0, nbytes), (1, 3, nbytes), (3, 1, nbytes)]
    )
    r2 = simulate(fine, Placement(np.array([0, 0, 1, 1], dtype=np.int32), 2, "2/core"), m, NONE)
    assert r2.total_time == pytest.approx(2 * work, rel=1e-12)
    assert r2.hidden_comm_fraction == pytest.approx(1.0, abs=1e-12)
    assert r2.total_time < r1.total_time


def test_a_message_slower_than_half_a_step_shows_through() -> None:
    m = machine(2, 1)
    work = 1e-3
    nbytes = 1_000_000  # 800 µs: longer than half a step
    fine = line_workload(
        np.full((2, 4), work / 2), [(0, 2, nbytes), (2, 0, nbytes), (1, 3, nbytes), (3, 1, nbytes)]
    )
    r = simulate(fine, Placement(np.array([0, 0, 1, 1], dtype=np.int32), 2, "2/core"), m, NONE)
    bw, lat = m.network.bandwidth, m.network.latency
    # 4-b waits for 2-a's message, which queues at node 1's NIC behind 1-a's (sent at work/2,
    # 800 µs long): it leaves at work/2 + nbytes/bw and lands nbytes/bw + latency later.
    ser = nbytes / bw
    assert r.total_time == pytest.approx(work / 2 + 2 * ser + lat + work / 2, rel=1e-12)
    assert 0.0 < r.hidden_comm_fraction < 1.0


def test_overheads_add_to_every_task_and_message() -> None:
    m = machine(2, 1)
    over = Overheads(task=7e-6, message=3e-6, copy_bandwidth=1e9)
    w = line_workload(np.zeros((2, 2)), [(0, 1, 1000), (1, 0, 1000)])
    r = simulate(
        w, Placement(np.array([0, 1], dtype=np.int32), 2, "pp"), m, SimOptions(overheads=over)
    )
    pack = over.message + 1000 / over.copy_bandwidth
    expected = (
        (over.task + pack) + (m.network.latency + 1000 / m.network.bandwidth) + (over.task + pack)
    )
    assert r.total_time == pytest.approx(expected, rel=1e-12)


def test_memory_copies_inside_a_node_cost_the_sender() -> None:
    m = dataclasses.replace(machine(1, 1), network=Network(memcpy_bandwidth=1e8))
    w = line_workload(np.zeros((2, 2)), [(0, 1, 10_000), (1, 0, 10_000)])
    opts = SimOptions(overheads=Overheads(task=0.0, message=1.0))  # message overhead: remote only
    r = simulate(w, Placement(np.zeros(2, dtype=np.int32), 1, "local"), m, opts)
    assert r.total_time == pytest.approx(2 * 10_000 / 1e8, rel=1e-12)
    assert r.bytes_sent_total == 0
