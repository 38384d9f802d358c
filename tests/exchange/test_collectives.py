from __future__ import annotations

import json

import numpy as np
import pytest

from grapeshot.exchange.collectives import binomial_children, binomial_parent
from grapeshot.model.program import Reduction
from tests.mpi_harness import run_mpi


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, 13, 64])
def test_binomial_tree_spans_every_rank_once(size) -> None:
    seen = []
    for rank in range(size):
        for child in binomial_children(rank, size):
            assert binomial_parent(child) == rank
            seen.append(child)
    assert sorted(seen) == list(range(1, size))
    # Walk the tree from the root with binomial_children: each rank's depth is its number of
    # set bits, so no rank is more than ceil(log2(size)) hops below the root.
    depth = {0: 0}
    frontier = [0]
    while frontier:
        rank = frontier.pop()
        for child in binomial_children(rank, size):
            depth[child] = depth[rank] + 1
            frontier.append(child)
    assert sorted(depth) == list(range(size))
    assert all(depth[r] == bin(r).count("1") for r in range(size))
    assert max(depth.values()) <= int(np.ceil(np.log2(size)))


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", [2, 4])
def test_every_algorithm_gives_the_serial_bits(ranks) -> None:
    proc = run_mpi(ranks, ["-m", "tests.exchange.mpi_collectives"], work=10)
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    values = np.random.default_rng(7).uniform(-1, 1, 37) * 10.0 ** np.arange(-18, 19)
    expected = [Reduction("x", op).combine(values.tolist()) for op in ("sum", "min", "max")]
    assert data["same_on_all_ranks"]
    for algorithm, result in data["results"].items():
        assert result == expected, algorithm
