"""Predicted exchange times on the simulator's network models."""

from __future__ import annotations

import numpy as np
import pytest

from grapeshot.exchange.schedules import ALGORITHMS, make_schedule
from grapeshot.exchange.workloads import nonuniform, regular
from grapeshot.model.machine import Machine, Network, NodeTree
from grapeshot.model.presets import preset
from grapeshot.sim.exchange import simulate_contention, simulate_exchange


def _flat(n: int, contention: bool = False) -> Machine:
    return Machine(
        "t",
        n,
        NodeTree((("core", 1),)),
        Network("flat", latency=1e-6, bandwidth=1e9, node_contention=contention),
    )


def test_node_contention_serialises_senders_to_one_receiver() -> None:
    m = preset("cm5")
    one = 60e-6 + 4096 / 9e6
    for d in (1, 4, 31):
        r = simulate_contention(m, d, 4096)
        assert r["recv"] == pytest.approx(d * one, rel=2e-3)  # + switch hops
        assert r["min"] == pytest.approx(one, rel=2e-3) and r["max"] == pytest.approx(r["recv"])


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
    for d in (4, 31):
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


def test_a_reused_schedule_gives_the_same_time() -> None:
    p = regular(32, 8, 1024, seed=0)
    sched = make_schedule(p, "rsn", seed=5)
    m = preset("cm5")
    assert (
        simulate_exchange(p, "rsn", m, schedule=sched).seconds
        == simulate_exchange(p, "rsn", m, seed=5).seconds
    )
