"""Cyclic placement: ``i mod n`` on equal nodes, a proportional interleave otherwise."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from grapeshot.place.cyclic import place_cyclic
from grapeshot.place.quota import quotas
from tests.place.test_conformance import assert_counts_match_quotas


@pytest.mark.parametrize(
    ("parts_shape", "n_nodes"),
    [((8, 8), 4), ((8, 8), 5), ((13, 17), 7), ((4, 5, 6), 11), ((3, 3), 20), ((6, 6), 1)],
)
def test_equal_nodes_get_partition_i_mod_n(parts_shape, n_nodes) -> None:
    node_of = place_cyclic(parts_shape, np.full(n_nodes, 16), seed=0)
    n_parts = math.prod(parts_shape)
    np.testing.assert_array_equal(node_of, np.arange(n_parts) % n_nodes)
    assert_counts_match_quotas(node_of, np.full(n_nodes, 16))


def reference_interleave(n_items: int, cores: list[int]) -> list[int]:
    """Slots ordered by the exact fraction ``(j + 1/2) / quota``, ties to the lower node."""
    q = quotas(n_items, cores).tolist()
    slots = [(Fraction(2 * j + 1, 2 * q[k]), k) for k in range(len(q)) for j in range(q[k])]
    return [k for _, k in sorted(slots)]


@pytest.mark.parametrize(
    ("parts_shape", "cores"),
    [
        ((2, 3), [1, 2]),
        ((8, 8), [1, 2, 4, 1]),
        ((13, 17), [3, 1, 2]),
        ((5, 6, 7), [1, 1, 2, 3, 5, 8]),
        ((2, 2), [1, 2, 3, 4, 5, 6]),  # more nodes than partitions
    ],
)
def test_heterogeneous_interleave_matches_the_exact_reference(parts_shape, cores) -> None:
    node_of = place_cyclic(parts_shape, np.array(cores), seed=0)
    expected = reference_interleave(math.prod(parts_shape), cores)
    np.testing.assert_array_equal(node_of, expected)
    assert_counts_match_quotas(node_of, cores)


def test_a_node_with_twice_the_cores_comes_up_twice_as_often() -> None:
    # quotas 2 and 4: node 0 at 1/4, 3/4; node 1 at 1/8, 3/8, 5/8, 7/8.
    np.testing.assert_array_equal(
        place_cyclic((2, 3), np.array([1, 2]), seed=0), [1, 0, 1, 1, 0, 1]
    )


@pytest.mark.parametrize("cores", [[1, 2, 4, 1], [5, 3], [1, 1, 1, 7, 2], [2, 3, 5, 7, 11, 13]])
def test_every_prefix_holds_each_node_in_proportion(cores) -> None:
    # The interleave spreads each node over the whole id range: in the first t partitions a node
    # holds t * quota / P of them up to one plus half a round of the other nodes.
    node_of = place_cyclic((30, 41), np.array(cores), seed=0)
    n_parts = node_of.size
    q = quotas(n_parts, cores)
    t = np.arange(1, n_parts + 1)
    for node, quota in enumerate(q):
        held = np.cumsum(node_of == node)
        bound = 1 + len(cores) * quota / n_parts
        assert np.max(np.abs(held - t * quota / n_parts)) <= bound
