"""Every algorithm delivers every byte exactly once: many random patterns, one process.

The ranks are threads over :mod:`tests.exchange.fake_comm` (the one test where issue 11
allows a fake communicator); the same code runs on real MPI in ``test_mpi_exchange.py``.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from grapeshot.exchange.mpi_exchange import ExchangePlan
from grapeshot.exchange.payload import make_sends, verify_received
from grapeshot.exchange.schedules import ALGORITHMS
from tests.exchange.fake_comm import FakeBusyBits, FakeWorld


@st.composite
def patterns(draw):
    n = draw(st.integers(1, 6))
    density = draw(st.floats(0.0, 1.0))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    big = draw(st.sampled_from([1, 50, 700]))
    com = np.where(rng.random((n, n)) < density, rng.integers(1, big + 1, (n, n)), 0)
    np.fill_diagonal(com, 0)
    return com.astype(np.int64), draw(st.sampled_from([97, 1 << 30])), seed


def _exchange(com, algorithm, max_chunk, seed):
    world = FakeWorld(com.shape[0])

    def body(comm):
        rank = comm.Get_rank()
        bits = FakeBusyBits(world, rank) if algorithm == "drsn" else None
        plan = ExchangePlan(
            com[rank],
            comm=comm,
            algorithm=algorithm,
            seed=seed,
            max_chunk=max_chunk,
            busy_bits=bits,
        )
        stats = []
        for run in range(2):  # plan once, run twice
            stats.append(verify_received(com, rank, plan.run(make_sends(com, rank, run)), run))
        plan.free()
        return stats

    return world.run(body)


@settings(max_examples=100, deadline=None)
@given(patterns())
def test_every_algorithm_delivers_every_byte_once(case) -> None:
    com, max_chunk, seed = case
    for algorithm in ALGORITHMS:
        stats = _exchange(com, algorithm, max_chunk, seed % 1000)
        for run in range(2):
            assert sum(s[run]["pairs"] for s in stats) == np.count_nonzero(com), algorithm
            assert sum(s[run]["bytes"] for s in stats) == com.sum(), algorithm


def test_a_wrong_byte_is_caught() -> None:
    com = np.array([[0, 10], [5, 0]], dtype=np.int64)
    got = {0: make_sends(com, 0)[1].copy()}
    verify_received(com, 1, got)
    got[0][3] ^= 1
    try:
        verify_received(com, 1, got)
    except AssertionError as exc:
        assert "checksum" in str(exc)
    else:
        raise AssertionError("a flipped byte passed the checksum")
