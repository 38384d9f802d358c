"""Schedules: every byte once, no node contention per phase, determinism, RS_N's bound."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grapeshot.exchange.payload import chunks
from grapeshot.exchange.schedules import (
    SCHEDULES,
    check_schedule,
    lp_partner,
    make_schedule,
    schedule_rsnh,
)
from grapeshot.exchange.workloads import nonuniform, regular


@st.composite
def coms(draw):
    n = draw(st.integers(1, 12))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    density = draw(st.floats(0, 1))
    big = draw(st.sampled_from([1, 100, 2**40]))
    com = np.where(rng.random((n, n)) < density, rng.integers(1, big + 1, (n, n)), 0)
    np.fill_diagonal(com, 0)
    return com.astype(np.int64)


@settings(max_examples=150, deadline=None)
@given(coms(), st.sampled_from(sorted(SCHEDULES)), st.integers(0, 100))
def test_every_schedule_moves_every_byte_once_without_contention(com, algorithm, seed) -> None:
    sched = make_schedule(com, algorithm, seed=seed)
    check_schedule(sched, com)  # bytes, pieces, one send and one receive per rank per phase
    again = make_schedule(com, algorithm, seed=seed)
    for field in ("phase", "src", "dst", "offset", "nbytes"):
        assert np.array_equal(getattr(sched, field), getattr(again, field))


def test_check_schedule_catches_contention_and_lost_bytes() -> None:
    com = regular(8, 3, 10, seed=1).com
    sched = make_schedule(com, "rsn", seed=1)
    with pytest.raises(AssertionError):
        check_schedule(sched, com * 2)
    bad = type(sched)(
        sched.algorithm,
        sched.n,
        np.zeros_like(sched.phase),
        sched.src,
        sched.dst,
        sched.offset,
        sched.nbytes,
        1,
    )
    with pytest.raises(AssertionError, match="twice in one phase"):
        check_schedule(bad, com)


@pytest.mark.parametrize("n", [2, 5, 8, 32])
def test_lp_has_n_minus_1_steps_and_pairs_are_permutations(n) -> None:
    com = np.ones((n, n), dtype=np.int64) - np.eye(n, dtype=np.int64)
    sched = make_schedule(com, "lp", seed=0)
    assert sched.n_phases == n - 1
    ranks = np.arange(n)
    for k in range(1, n):
        dst, src = lp_partner(ranks, k, n)
        assert sorted(dst) == list(range(n)) and sorted(src) == list(range(n))
        assert np.array_equal(dst[src], ranks) or n & (n - 1) == 0


def test_rsn_phase_counts_beside_the_paper_and_the_bound_over_1000_patterns() -> None:
    paper = {4: 5.54, 16: 18.56, 31: 34.2}
    worst = {}
    for d in (4, 8, 16, 24, 31):
        phases = []
        for s in range(200):
            pattern = regular(32, d, 1, seed=1000 * d + s)
            phases.append(make_schedule(pattern, "rsn", seed=s).n_phases)
        worst[d] = max(phases)
        assert worst[d] <= d + np.log2(d) + 1, (d, worst[d])
        assert min(phases) >= d
        if d in paper:  # the paper's mean over 50 patterns; ours within 10%
            assert abs(np.mean(phases) / paper[d] - 1) < 0.1, (d, np.mean(phases))


def test_rsnh_keeps_sizes_in_a_phase_closer_than_rsn() -> None:
    spread_rsn, spread_rsnh = [], []
    for s in range(10):
        com = nonuniform(32, 16, 64, seed=s).com
        for sched, out in (
            (make_schedule(com, "rsn", seed=s), spread_rsn),
            (schedule_rsnh(com, s), spread_rsnh),
        ):
            for p in range(sched.n_phases):
                b = sched.nbytes[sched.phase == p]
                out.append(b.max() / b.mean())
    assert np.mean(spread_rsnh) < np.mean(spread_rsn)


def test_chunks_never_exceed_the_limit_and_cover_a_message_over_2_gib() -> None:
    size = 5 * 2**31 + 17  # over 2 GiB without allocating it
    pieces = chunks(0, size, 2**31 - 1)
    assert all(0 < n <= 2**31 - 1 for _, n in pieces)
    assert sum(n for _, n in pieces) == size
    assert [a for a, _ in pieces] == list(np.cumsum([0] + [n for _, n in pieces[:-1]]))
    assert chunks(10, 0, 4) == []
    assert chunks(3, 10, 4) == [(3, 4), (7, 4), (11, 2)]
    with pytest.raises(ValueError):
        chunks(0, 10, 0)


@pytest.mark.parametrize("priority", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_rsn_kernel_equals_the_plain_python_reference(seed, priority) -> None:
    from grapeshot.exchange.reference import rsn_reference
    from grapeshot.exchange.schedules import schedule_rsn

    com = nonuniform(40, 7 + seed, 3, seed=seed).com
    sched = schedule_rsn(com, seed, priority=priority)
    assert sched.phase_pairs() == rsn_reference(com, seed, priority=priority)
    check_schedule(sched, com)
