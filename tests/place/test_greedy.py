from __future__ import annotations

import numpy as np
import pytest

from grapeshot.model.errors import InputError
from grapeshot.place.greedy import greedy_rebalance


def test_greedy_balances_heavy_first() -> None:
    loads = np.array([5.0, 1, 1, 1, 1, 1, 0, 0])
    node_of = greedy_rebalance(loads, np.array([1, 1]))
    per_node = np.bincount(node_of, weights=loads, minlength=2)
    assert per_node.tolist() == [5.0, 5.0]
    assert np.array_equal(node_of, greedy_rebalance(loads, np.array([1, 1])))


def test_greedy_within_lpt_bound_and_per_core() -> None:
    rng = np.random.default_rng(0)
    loads = rng.uniform(0, 1, 1000)
    cores = np.array([1, 2, 1, 4])
    node_of = greedy_rebalance(loads, cores)
    per_core = np.bincount(node_of, weights=loads, minlength=4) / cores
    # LPT: the worst node exceeds the ideal by at most the largest single load per core.
    assert per_core.max() - loads.sum() / cores.sum() <= loads.max()
    assert per_core.max() / per_core.mean() < 1.01


def test_greedy_bad_input() -> None:
    with pytest.raises(InputError, match="loads"):
        greedy_rebalance(np.array([-1.0]), np.array([1]))
    with pytest.raises(InputError, match="cores"):
        greedy_rebalance(np.array([1.0]), np.array([0]))
