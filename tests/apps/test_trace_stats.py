"""Trace statistics on workloads whose answers are known by construction."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from grapeshot.apps.trace_stats import busiest_weights, trace_stats
from grapeshot.model.errors import InputError
from grapeshot.model.workload import Workload, grid_halo


def workload(cost: np.ndarray, parts=(10, 10), work: np.ndarray | None = None) -> Workload:
    return Workload(
        domain_shape=tuple(4 * p for p in parts),
        parts_shape=parts,
        cost=cost,
        halo=grid_halo(tuple(4 * p for p in parts), parts),
        work=work,
    )


def test_even_load() -> None:
    s = trace_stats(workload(np.ones((8, 100))))
    assert s.n_top == 10 and s.quarter == 2
    assert s.top_share == pytest.approx(0.1) and s.top_share_per_step == pytest.approx(0.1)
    assert s.idle_fraction == 0.0 and s.idle_all_steps == 0.0
    assert s.imbalance == 0.0
    # Every partition ties: membership is shared out evenly, so the overlap is chance (10%).
    assert s.overlap == pytest.approx(0.1)


def test_hot_spot_that_stays() -> None:
    cost = np.zeros((12, 100))
    cost[:, 40:50] = 5.0
    cost[:, 50:60] = 1.0
    s = trace_stats(workload(cost))
    assert s.top_share == pytest.approx(50 / 60)
    assert s.overlap == 1.0
    assert s.idle_fraction == pytest.approx(0.8) and s.idle_all_steps == pytest.approx(0.8)
    assert s.imbalance == pytest.approx(5 / 0.6 - 1)


def test_load_that_moves() -> None:
    # A band of ten busy partitions marching across the grid, one partition a step.
    steps = 80
    cost = np.zeros((steps, 100))
    for t in range(steps):
        cost[t, t : t + 10] = 1.0
    s = trace_stats(workload(cost, work=(cost > 0).astype(np.int64)))
    assert s.overlap == 0.0
    assert s.top_share_per_step == 1.0 and s.top_share < 0.2  # concentrated, but it moves
    assert s.counts_work
    assert s.idle_fraction == pytest.approx(0.9)
    assert s.idle_all_steps == pytest.approx(0.11)  # partitions 89..99 are never reached


def test_idleness_follows_work_counts_when_present() -> None:
    cost = np.full((4, 100), 1e-6)  # measured seconds are never exactly 0
    work = np.zeros((4, 100), dtype=np.int64)
    work[:, :25] = 7
    s = trace_stats(workload(cost, work=work))
    assert s.idle_fraction == pytest.approx(0.75)
    assert trace_stats(workload(cost)).idle_fraction == 0.0


def test_busiest_weights() -> None:
    load = np.array([5.0, 3.0, 3.0, 3.0, 0.0, 1.0])
    w = busiest_weights(load, 2)
    assert w.tolist() == pytest.approx([1.0, 1 / 3, 1 / 3, 1 / 3, 0.0, 0.0])
    assert w.sum() == pytest.approx(2.0)
    # Fewer busy partitions than places: only the busy ones are in.
    assert busiest_weights(np.array([0.0, 2.0, 0.0]), 2).tolist() == [0.0, 1.0, 0.0]


def test_no_cost_at_all() -> None:
    s = trace_stats(workload(np.zeros((5, 100))))
    assert math.isnan(s.top_share) and math.isnan(s.overlap)
    assert math.isnan(s.top_share_per_step)
    d = s.as_dict()
    assert d["overlap"] is None and d["top_share"] is None
    json.dumps(d)  # plain JSON, no NaN


def test_short_traces_use_one_step_quarters() -> None:
    cost = np.zeros((2, 100))
    cost[0, :10] = 1.0
    cost[1, 50:60] = 1.0
    s = trace_stats(workload(cost))
    assert s.quarter == 1 and s.overlap == 0.0
    assert trace_stats(workload(cost[:1])).overlap == 1.0


@pytest.mark.parametrize("top", [0.0, -0.1, 1.5, "most"])
def test_bad_top(top) -> None:
    with pytest.raises(InputError, match="top"):
        trace_stats(workload(np.ones((4, 100))), top=top)


def test_other_top_fraction() -> None:
    cost = np.tile(np.arange(100, dtype=float), (4, 1))
    s = trace_stats(workload(cost), top=0.25)
    assert s.n_top == 25
    assert s.top_share == pytest.approx(np.arange(75, 100).sum() / np.arange(100).sum())
    assert s.overlap == 1.0
