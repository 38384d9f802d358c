"""The event kernel's parts on their own: its records, the message path, the collective's sort."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from grapeshot.model.machine import Machine, Network, NodeTree
from grapeshot.model.machine_file import load_machine
from grapeshot.place import place
from grapeshot.sim import SimOptions, WorkloadSource, network_model
from grapeshot.sim.collectives import (
    _stable_argsort,
    collective_release,
    collective_release_into,
)
from grapeshot.sim.kernel import run_segment
from grapeshot.sim.kernel_state import (
    P_DEP,
    P_IN_DEG,
    P_IN_EXTRA,
    P_NODE,
    P_OUT_EXTRA,
    P_OUT_HI,
    P_OUT_LO,
    P_QUEUE,
    P_READY,
    net_record,
    new_clocks,
    segment_plan,
)
from grapeshot.sim.network import _transmit
from grapeshot.sim.program import build_layout, build_program
from grapeshot.sim.transfer import transmit


def machine(nodes: int, topology: str, **params: object) -> Machine:
    net = Network(topology=topology, latency=10e-6, bandwidth=1e9, params=params)
    return Machine("test", nodes, NodeTree((("core", 1),)), net)


def test_the_kernel_takes_five_records_and_a_budget() -> None:
    params = inspect.signature(run_segment.py_func).parameters
    assert list(params) == ["net", "plan", "qs", "clk", "out", "pops"]


@pytest.mark.parametrize(
    "m",
    [
        machine(64, "torus3d", dims=[4, 4, 4], nodes_per_router=1),
        machine(60, "torus3d", dims=[4, 4, 2], nodes_per_router=2, link_weights=[1, 2, 1.5]),
        machine(64, "fat-tree", arity=4, parents=2),
        machine(16, "flat"),
    ],
    ids=["torus", "torus-npr2", "fat-tree-tapered", "flat"],
)
def test_the_kernels_message_path_is_transmit_bit_for_bit(m: Machine) -> None:
    model = network_model(m)
    a_state, b_state = model.new_state(), model.new_state()
    net = net_record(model, b_state)
    rng = np.random.default_rng(7)
    t = 0.0
    for _ in range(400):
        src, dst = rng.choice(m.nodes, size=2, replace=False)
        nbytes = float(rng.integers(1, 1 << 20))
        t += float(rng.exponential(1e-5))
        want = _transmit(
            model.net_i, model.net_f, a_state.send_free, a_state.recv_free,
            a_state.link_free, src, dst, nbytes, t,
        )  # fmt: skip
        assert transmit(net, src, dst, nbytes, t) == want
    assert np.array_equal(a_state.link_free, b_state.link_free)
    assert np.array_equal(a_state.recv_free, b_state.recv_free)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 16, 33, 100])
def test_stable_argsort_is_numpys_mergesort(n: int) -> None:
    rng = np.random.default_rng(n)
    keys = rng.integers(0, 5, size=n).astype(np.float64)  # many ties
    order = np.empty(max(n, 1), dtype=np.int64)
    _stable_argsort(keys, n, order, np.empty_like(order))
    assert np.array_equal(order[:n], np.argsort(keys, kind="mergesort"))


@pytest.mark.parametrize("algorithm", [0, 1])
def test_collective_reads_no_scratch_it_did_not_write(algorithm: int) -> None:
    model = network_model(machine(27, "torus3d", dims=[3, 3, 3]))
    arrive = np.round(np.random.default_rng(1).random(27), 2) * 1e-3  # ties in arrival
    want, got = np.empty(27), np.empty(27)
    collective_release(arrive, algorithm, 0, 8.0, 1e-6, model.net_i, model.net_f, want)
    collective_release_into(
        arrive, algorithm, 0, 8.0, 1e-6, model.net_i, model.net_f, got,
        np.full((2, 27), np.nan), np.full((2, 27), -(1 << 40), dtype=np.int64),
    )  # fmt: skip
    assert np.array_equal(want, got)


@pytest.mark.parametrize("pin", [False, True])
def test_each_partition_record_is_one_cache_line_holding_its_layout(pin: bool) -> None:
    m = load_machine("bluewaters-xe6", 4)
    options = SimOptions(pin=pin, sync="allreduce")
    workload = WorkloadSource(spec="dambreak:parts=16x16,steps=3").as_given()
    program = build_program(workload, options)
    node_of = place(workload, m, "birdshot", seed=1).node_of
    layout = build_layout(program, m, node_of, options)
    plan = segment_plan(program, layout, options, (0, 3), None, 0.0)
    clk = new_clocks(plan, program, layout, layout.fc_init.shape[0], m.cores().astype(float))
    assert clk.part.ctypes.data % 64 == 0 and clk.part.strides == (64, 8)
    assert clk.heap.ctypes.data % 64 == 0
    ints = clk.part_i
    assert np.array_equal(ints[:, P_NODE], layout.node_of)
    assert np.array_equal(ints[:, P_QUEUE], layout.queue_of)
    assert np.array_equal(ints[:, P_OUT_LO], program.out_ptr[:-1])
    assert np.array_equal(ints[:, P_OUT_HI], program.out_ptr[1:])
    assert np.array_equal(ints[:, P_IN_DEG], program.in_deg)
    assert np.array_equal(clk.part[:, P_IN_EXTRA], layout.in_extra)
    assert np.array_equal(clk.part[:, P_OUT_EXTRA], layout.out_extra)
    # The run's first tasks wait for nothing; the second phase's for its partition, its
    # halo and (a global operation) its node's release.
    assert not ints[:, P_DEP].any()
    assert np.array_equal(ints[:, P_DEP + 1], program.in_deg + 2)
    assert not clk.part[:, P_READY : P_READY + 2].any()
