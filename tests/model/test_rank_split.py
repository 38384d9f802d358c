"""``split_over_ranks``: each node's partitions spread over its MPI ranks (``place --ranks``).

The compiled split is checked bit for bit against a plain reference of the rule its docstring
states (recursive coordinate bisection inside each node, counts within one), and for the
properties a user of the file relies on: every partition on one of its node's ranks, in
block order, the counts balanced, the same split every time, and neighbours kept together.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grapeshot.model.errors import InputError
from grapeshot.model.machine_file import load_machine
from grapeshot.model.placement import Placement, placement_metrics, split_over_ranks
from grapeshot.model.synthetic import synthetic_workload
from grapeshot.place import place
from tests.fuzz import fuzz


def reference_split(node_of: np.ndarray, ranks_per_node, grid: tuple[int, ...]) -> np.ndarray:
    """The split as ``grid_rows.split_ranks`` describes it, one partition at a time."""
    shape3 = (*grid, 1, 1)[:3]
    coords = np.stack(np.unravel_index(np.arange(len(node_of)), shape3), axis=1)
    first = np.concatenate([[0], np.cumsum(ranks_per_node)])
    rank_of = np.full(len(node_of), -1)
    for k, ranks in enumerate(ranks_per_node):
        members = np.flatnonzero(node_of == k).tolist()
        _bisect(members, 0, int(ranks), len(members), int(ranks), first[k], coords, rank_of)
    return rank_of


def _bisect(group, a, c, n, ranks, first, coords, rank_of) -> None:
    """Ranks ``[a, c)`` of a node of ``n`` partitions and ``ranks`` ranks get ``group``."""
    if c - a == 1:
        rank_of[group] = first + a
        return
    if not group:
        return
    m = a + (c - a) // 2
    need = (m * n) // ranks - (a * n) // ranks
    extent = coords[group].max(axis=0) - coords[group].min(axis=0)
    axis = int(np.argmax(extent))  # the first of the longest: the lowest axis
    by_axis = sorted(group, key=lambda q: (coords[q, axis], q))
    _bisect(sorted(by_axis[:need]), a, m, n, ranks, first, coords, rank_of)
    _bisect(sorted(by_axis[need:]), m, c, n, ranks, first, coords, rank_of)


def _placement(node_of, nodes: int) -> Placement:
    return Placement(np.asarray(node_of), nodes=nodes, strategy="test", seed=3)


def test_a_node_box_splits_into_square_boxes() -> None:
    # 16x16 on one node, 4 ranks: four 8x8 quadrants, in block order along axis 0 first.
    ranked = split_over_ranks(_placement(np.zeros(256, dtype=int), 1), [4], (16, 16))
    want = np.block([[np.zeros((8, 8)), np.ones((8, 8))], [np.full((8, 8), 2), np.full((8, 8), 3)]])
    assert np.array_equal(ranked.node_of.reshape(16, 16), want)
    assert ranked.per_rank and ranked.nodes == 4 and ranked.grid == (16, 16)
    assert (ranked.strategy, ranked.seed) == ("test", 3)


GRIDS = st.sampled_from([(7,), (1, 9), (5, 4), (6, 6), (3, 1, 5), (2, 3, 4), (4, 4, 2)])


@fuzz(0.5)
@given(GRIDS, st.integers(1, 5), st.data())
def test_the_split_is_the_reference_fuzz(grid, nodes, data) -> None:
    n = math.prod(grid)
    node_of = np.array(data.draw(st.lists(st.integers(0, nodes - 1), min_size=n, max_size=n)))
    ranks = data.draw(st.lists(st.integers(1, 7), min_size=nodes, max_size=nodes))
    ranked = split_over_ranks(_placement(node_of, nodes), ranks, grid)
    assert np.array_equal(ranked.node_of, reference_split(node_of, ranks, grid))
    _assert_splits_each_node(ranked, node_of, ranks)


def _assert_splits_each_node(ranked: Placement, node_of: np.ndarray, ranks) -> None:
    """Every partition on one of its node's ranks (block order), counts within one."""
    first = np.concatenate([[0], np.cumsum(ranks)])
    rank_of = ranked.node_of
    assert ranked.nodes == first[-1] and rank_of.min() >= 0 and rank_of.max() < first[-1]
    assert np.all((rank_of >= first[node_of]) & (rank_of < first[node_of + 1]))
    counts = np.bincount(rank_of, minlength=first[-1])
    for k in range(len(ranks)):
        mine = counts[first[k] : first[k + 1]]
        assert mine.sum() == np.count_nonzero(node_of == k)
        assert mine.max() - mine.min() <= 1


@pytest.mark.parametrize("strategy", ["geometric", "cyclic", "sfc", "birdshot"])
def test_every_strategy_splits_the_same_way_twice(strategy: str) -> None:
    m = load_machine("plafrim", 3)
    placed = place(synthetic_workload("dambreak:parts=20x14,steps=1"), m, strategy, seed=2)
    ranks = [5, 4, 7]
    one = split_over_ranks(placed, ranks, (20, 14))
    two = split_over_ranks(placed, np.array(ranks), (20, 14))
    assert np.array_equal(one.node_of, two.node_of)
    _assert_splits_each_node(one, placed.node_of, ranks)


@pytest.mark.parametrize(("strategy", "most"), [("geometric", 0.5), ("sfc", 0.6)])
def test_neighbours_stay_together(strategy: str, most: float) -> None:
    """Against the plain split (each node's partitions cut into runs in partition order),
    the bisection cuts far fewer halo bytes between ranks where a node holds a region."""
    wl = synthetic_workload("dambreak:parts=48x48,steps=1")
    placed = place(wl, load_machine("plafrim", 4), strategy, seed=1)
    k = 16
    bisected = placement_metrics(split_over_ranks(placed, [k] * 4, (48, 48)), wl).bytes_cut
    node_of = placed.node_of
    order = np.argsort(node_of, kind="stable")
    counts = np.bincount(node_of)
    place_in_node = np.empty_like(order)
    place_in_node[order] = np.arange(len(order)) - np.repeat(np.cumsum(counts) - counts, counts)
    runs = node_of * k + place_in_node * k // counts[node_of]
    plain = placement_metrics(Placement(runs, nodes=4 * k, strategy="runs"), wl).bytes_cut
    assert bisected <= most * plain, (bisected, plain)


def test_a_rank_a_node_is_the_node() -> None:
    node_of = np.array([2, 0, 1, 1, 0, 2])
    ranked = split_over_ranks(_placement(node_of, 3), [1, 1, 1], (2, 3))
    assert np.array_equal(ranked.node_of, node_of) and ranked.per_rank


@pytest.mark.parametrize(
    ("ranks", "grid", "message"),
    [
        ([2, 2], (3, 3), "grid: is 3x3, 9 partitions; expected 1 to 3 positive partition "
                         "counts whose product is 6"),
        ([2, 2], (2, 3, 1, 1), "grid: is [2, 3, 1, 1]"),
        ([2, 2], (6, 0), "grid: is [6, 0]"),
        ([2], (2, 3), "ranks_per_node: has shape (1,); expected (2,) integers"),
        ([2, 0], (2, 3), "ranks_per_node[1]: is 0; expected at least 1 rank a node"),
        ([2.0, 1.0], (2, 3), "ranks_per_node: has shape (2,)"),
        ([2**31, 1], (2, 3), "ranks_per_node: sums to 2147483649; expected at most"),
    ],
)  # fmt: skip
def test_refusals(ranks, grid, message: str) -> None:
    with pytest.raises(InputError) as err:
        split_over_ranks(_placement([0, 1, 0, 1, 0, 1], 2), ranks, grid)
    assert str(err.value).startswith(message), str(err.value)


def test_a_per_rank_placement_is_not_split_again() -> None:
    ranked = split_over_ranks(_placement([0, 1, 0, 1], 2), [2, 2], (2, 2))
    with pytest.raises(InputError, match="placement: is per-rank already"):
        split_over_ranks(ranked, [1, 1, 1, 1], (2, 2))


def test_the_packed_word_does_not_change_the_split() -> None:
    """int32 packed coordinates where they fit (every grid here), int64 past 31 bits: the
    same split either way."""
    from grapeshot.model.grid_rows import split_ranks

    rng = np.random.default_rng(5)
    for shape in ((37,), (9, 11), (5, 6, 7)):
        n = math.prod(shape)
        node_of = rng.integers(0, 3, n).astype(np.int32)
        first = np.array([0, 4, 5, 11])
        shape3 = np.array([*shape, 1, 1][:3], dtype=np.int64)
        words = [np.empty(0, dtype=dtype) for dtype in (np.int32, np.int64)]
        narrow, wide = (split_ranks(node_of, shape3, first, word) for word in words)
        assert np.array_equal(narrow, wide)
        assert np.array_equal(narrow, reference_split(node_of, [4, 1, 6], shape))
