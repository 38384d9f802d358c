"""Predicted exchange times on the simulator's network models."""

from __future__ import annotations

import numpy as np
import pytest

from grapeshot.exchange.schedules import ALGORITHMS, make_schedule
from grapeshot.exchange.workloads import nonuniform, regular
from grapeshot.model.machine import Machine, Network, NodeTree
from grapeshot.model.presets import preset
from grapeshot.sim.exchange import (
    _interleaved,
    _port_shares,
    simulate_contention,
    simulate_exchange,
)
from grapeshot.sim.network import network_model


def _flat(n: int, contention: bool = False) -> Machine:
    return Machine(
        "t",
        n,
        NodeTree((("core", 1),)),
        Network("flat", latency=1e-6, bandwidth=1e9, node_contention=contention),
    )


def test_node_contention_interleaves_senders_to_one_receiver() -> None:
    # Table 2 on the cm5 preset: the receiver is busy for d message times (no capacity is
    # lost), and the senders share it, so they all finish near the end, not one apart.
    m = preset("cm5")
    one = 60e-6 + 4096 / 9e6
    recv = []
    for d in (1, 2, 4, 8, 16, 31):
        r = simulate_contention(m, d, 4096)
        recv.append(r["recv"])
        assert r["recv"] == pytest.approx(d * one, rel=2e-3)  # + switch hops
        assert r["max"] == pytest.approx(r["recv"])
        if d <= 16:  # senders 0 .. 15 all reach receiver 31 through the same ports
            assert r["min"] == pytest.approx(r["max"])
    assert np.all(np.diff(recv) > 0)  # contention grows with d
    # d = 31: the three senders in receiver 31's 4-node cluster (28, 29, 30) each get one of
    # the five busy ports of its switch (3 children + 2 parents) and finish after about 5
    # message times (the paper's footnote 1: 2.85 ms, 5.5 message times).
    r = simulate_contention(m, 31, 4096)
    assert r["min"] == pytest.approx(5 * one, rel=2e-3)
    assert r["min"] < r["ave"] < r["max"]


@pytest.mark.parametrize("parents", [1, 2, 4])
def test_port_shares_sum_to_one_and_favour_the_near_senders(parents: int) -> None:
    rng = np.random.default_rng(parents)
    out = np.empty(64)
    for _ in range(200):
        r = int(rng.integers(64))
        snd = rng.choice(np.delete(np.arange(64), r), size=int(rng.integers(1, 40)), replace=False)
        _port_shares(r, snd.astype(np.int64), len(snd), True, 4, 3, parents, out)
        shares = out[: len(snd)]
        assert shares.sum() == pytest.approx(1.0) and np.all(shares > 0)
        near = snd // 4 == r // 4  # same leaf switch as the receiver
        if near.any() and (~near).any():
            # A near sender has a port of its own; the far ones share the parent ports.
            far_total = shares[~near].sum()
            assert far_total == pytest.approx(parents / (near.sum() + parents))
            assert shares[near] == pytest.approx(np.full(near.sum(), 1 / (near.sum() + parents)))
        _port_shares(r, snd.astype(np.int64), len(snd), False, 4, 3, parents, out)
        assert np.allclose(out[: len(snd)], 1 / len(snd))


def test_interleaving_conserves_the_receivers_work() -> None:
    # Any sizes to one receiver: it is never idle while a message is pending, so the last
    # delivery is the sum of the messages' times; each sender is done after its own time.
    rng = np.random.default_rng(1)
    m = preset("cm5")
    net = network_model(m)
    for _ in range(20):
        sizes = rng.integers(1, 50_000, size=int(rng.integers(1, 31)))
        orders = [[(31, int(b))] for b in sizes] + [[] for _ in range(32 - len(sizes))]
        total, _, ends = _interleaved(net, 32, orders)
        work = 60e-6 + sizes / 9e6
        assert total == pytest.approx(work.sum(), rel=1e-3)
        assert np.all(ends >= work * (1 - 1e-9))
    # A whole AC exchange: every receiver is busy at least for its own messages' times.
    p = nonuniform(32, 16, 512, seed=3)
    r = simulate_exchange(p, "ac", m, seed=4)
    need = 60e-6 * (p.com > 0).sum(axis=0) + p.com.sum(axis=0) / 9e6
    assert np.all(r.finish >= need * (1 - 1e-9))


def test_a_permutation_takes_one_message_time_in_every_table_schedule() -> None:
    n = 8
    com = np.zeros((n, n), dtype=np.int64)
    com[np.arange(n), (np.arange(n) + 3) % n] = 10**6
    for alg in ("rsn", "rsnh", "ac"):
        r = simulate_exchange(com, alg, _flat(n, True), seed=1)
        assert r.seconds == pytest.approx(1e-6 + 1e-3)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("machine", ["cm5", "flat", "bluewaters-xe6", "plafrim"])
def test_every_algorithm_is_deterministic_and_above_the_receive_bound(algorithm, machine) -> None:
    p = nonuniform(16, 5, 4096, seed=2)
    m = _flat(16) if machine == "flat" else preset(machine).with_nodes(16)
    a = simulate_exchange(p, algorithm, m, seed=3)
    b = simulate_exchange(p, algorithm, m, seed=3)
    assert a.seconds == b.seconds
    bound = max(p.com.sum(axis=0).max(), p.com.sum(axis=1).max()) / m.network.bandwidth
    assert a.seconds >= bound * (1 - 1e-9)
    assert a.seconds < 50 * bound + 1e-3


def test_cm5_orderings_of_table_4() -> None:
    m = preset("cm5")
    ratio = []
    for d in (4, 16, 31):
        t = {}
        for alg in ("ac", "lp", "rsn"):
            t[alg] = np.mean(
                [
                    simulate_exchange(regular(32, d, 4096, seed=s), alg, m, seed=s).seconds
                    for s in range(3)
                ]
            )
        assert t["rsn"] < t["ac"]  # RS_N beats AC at every d
        assert (t["lp"] < 1.1 * t["rsn"]) == (d == 31)  # LP competitive only at d = 31
        ratio.append(t["ac"] / t["rsn"])
    assert ratio[0] < ratio[1] < ratio[2]  # AC suffers more from contention as d grows


def test_a_reused_schedule_gives_the_same_time() -> None:
    p = regular(32, 8, 1024, seed=0)
    sched = make_schedule(p, "rsn", seed=5)
    m = preset("cm5")
    assert (
        simulate_exchange(p, "rsn", m, schedule=sched).seconds
        == simulate_exchange(p, "rsn", m, seed=5).seconds
    )


def test_per_message_overhead_one_message_pays_it_at_both_ends() -> None:
    com = np.zeros((2, 2), dtype=np.int64)
    com[0, 1] = 1000
    machine = _flat(2)
    net = network_model(machine)
    o = 3e-6
    for alg in ("ac", "lp", "rsn", "alltoallv", "neighbor"):
        # posted (o) at the sender, completed (o) at the receiver
        bare = simulate_exchange(com, alg, net).seconds
        got = simulate_exchange(com, alg, net, overhead=o).seconds
        assert got == pytest.approx(bare + 2 * o), alg


def test_collectives_pack_and_unpack_their_buffers() -> None:
    # One 1 MB message: Alltoallv and the neighbour collective copy it into the packed send
    # buffer and out of the packed receive buffer, 2 x 1 ms at 1 GB/s; AC sends it in place.
    com = np.zeros((2, 2), dtype=np.int64)
    com[0, 1] = 1_000_000
    slow_copy = Machine(
        "t",
        2,
        NodeTree((("core", 1),)),
        Network("flat", latency=1e-6, bandwidth=1e9, memcpy_bandwidth=1e9),
    )
    ac = simulate_exchange(com, "ac", slow_copy).seconds
    for alg in ("alltoallv", "neighbor"):
        assert simulate_exchange(com, alg, slow_copy).seconds == pytest.approx(ac + 2e-3)


def test_nbx_pays_the_acknowledgement_and_the_barrier_as_messages() -> None:
    # After AC's messages: the last Issend's acknowledgement and log2(16) = 4 barrier rounds,
    # each one latency and o at both ends.
    pattern = regular(16, 3, 256, seed=2)
    machine = _flat(16)
    for o in (0.0, 2e-6):
        ac = simulate_exchange(pattern, "ac", machine, seed=1, overhead=o).seconds
        nbx = simulate_exchange(pattern, "nbx", machine, seed=1, overhead=o).seconds
        assert nbx == pytest.approx(ac + 5 * (1e-6 + 2 * o))


@pytest.mark.parametrize("alg", ALGORITHMS)
def test_per_message_overhead_only_adds_time_and_grows_with_messages(alg: str) -> None:
    machine = _flat(16)
    few, many = (regular(16, d, 256, seed=2) for d in (2, 12))
    for pattern in (few, many):
        times = [
            simulate_exchange(pattern, alg, machine, seed=1, overhead=o).seconds
            for o in (0.0, 1e-6, 5e-6)
        ]
        assert times[0] <= times[1] <= times[2], alg
    # 6x the messages a rank: at least 3x the CPU time they add (NBX's acknowledgement and
    # barrier, 1 + log2(16) messages, are the same for both)
    fixed = 5 * 2 * 5e-6 if alg == "nbx" else 0.0
    extra = [
        simulate_exchange(p, alg, machine, seed=1, overhead=5e-6).seconds
        - simulate_exchange(p, alg, machine, seed=1).seconds
        - fixed
        for p in (few, many)
    ]
    assert extra[1] >= 3 * extra[0] > 0, alg


def test_per_message_overhead_is_checked() -> None:
    with pytest.raises(ValueError, match="overhead"):
        simulate_exchange(regular(4, 1, 8, seed=0), "ac", _flat(4), overhead=-1e-6)
