"""Geometric (RCB) placement: one contiguous region per node, boxes when the cuts are clean."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import ndimage

from grapeshot.model.errors import InputError
from grapeshot.place.geometric import place_geometric
from grapeshot.place.quota import quotas
from tests.place.geometric_cells import place_geometric_cells
from tests.place.test_conformance import assert_counts_match_quotas


def assert_regions_are_connected(node_of: np.ndarray, parts_shape: tuple[int, ...]) -> None:
    """Every node's partitions form one 4-connected (2D) or 6-connected (3D) component."""
    grid = node_of.reshape(parts_shape)
    faces_only = ndimage.generate_binary_structure(len(parts_shape), 1)
    # find_objects on node + 1 gives each node's bounding box, so each label runs on a
    # region-sized window instead of the whole grid.
    for node, window in enumerate(ndimage.find_objects(grid + 1)):
        if window is None:
            continue
        _, n_components = ndimage.label(grid[window] == node, structure=faces_only)
        assert n_components == 1, f"node {node} is split into {n_components} pieces"


def region_boxes(node_of: np.ndarray, parts_shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Bounding-box shape of each node's region, asserting that the region fills it."""
    grid = node_of.reshape(parts_shape)
    shapes = []
    for node, window in enumerate(ndimage.find_objects(grid + 1)):
        assert window is not None, f"node {node} has no partitions"
        box = tuple(s.stop - s.start for s in window)
        assert np.all(grid[window] == node), f"node {node} does not fill its bounding box"
        shapes.append(box)
    return shapes


# Configurations where every node is owed at least 8 partitions (the regime the module
# docstring promises connected regions in): 2D and 3D, equal and heterogeneous cores,
# node counts that do not divide the grid, and shapes that needed the fallback rankings.
CONNECTED_CASES = [
    ((64, 64), [4] * 3),
    ((64, 64), [4] * 5),
    ((64, 64), [4] * 7),
    ((64, 64), [4] * 33),
    ((64, 64), [4] * 100),
    ((64, 64), [1, 2, 3] * 17),
    ((30, 50), [4] * 11),
    ((30, 50), [1, 2, 3, 4, 5] * 5),
    ((200, 150), [32] * 333),
    ((1, 97), [4] * 9),
    ((16, 8, 16), [4] * 3),
    ((16, 8, 16), [4] * 13),
    ((16, 8, 16), [4] * 31),
    ((16, 8, 16), [1, 2, 3] * 21),
    ((12, 13, 14), [4] * 259),
    ((12, 13, 14), [1, 2, 3] * 38 + [1]),
    ((40, 50, 60), [16] * 500),
    ((40, 50, 60), [1, 5, 2, 8] * 100),
]


@pytest.mark.parametrize(
    ("parts_shape", "cores"),
    CONNECTED_CASES,
    ids=[f"{'x'.join(map(str, s))}-n{len(c)}" for s, c in CONNECTED_CASES],
)
def test_every_region_is_one_connected_component(parts_shape, cores) -> None:
    assert quotas(math.prod(parts_shape), cores).min() >= 8  # the promised regime
    node_of = place_geometric(parts_shape, np.array(cores), seed=0)
    assert_counts_match_quotas(node_of, cores)
    assert_regions_are_connected(node_of, parts_shape)


@pytest.mark.parametrize(
    ("parts_shape", "n_nodes", "box"),
    [
        ((64, 64), 1, (64, 64)),
        ((64, 64), 2, (32, 64)),
        ((64, 64), 4, (32, 32)),
        ((64, 64), 16, (16, 16)),
        ((64, 64), 256, (4, 4)),
        ((64, 32), 8, (16, 16)),
        ((16, 8, 16), 2, (8, 8, 16)),
        ((16, 8, 16), 8, (4, 8, 8)),
        ((16, 8, 16), 128, (2, 2, 4)),
        ((32, 32, 32), 64, (8, 8, 8)),
    ],
)
def test_power_of_two_nodes_on_an_evenly_divided_grid_get_equal_boxes(
    parts_shape, n_nodes, box
) -> None:
    node_of = place_geometric(parts_shape, np.full(n_nodes, 8), seed=0)
    shapes = region_boxes(node_of, parts_shape)
    # Every region is a box, and all boxes are alike; the long axes are halved first.
    assert set(shapes) == {box}


def test_two_nodes_split_the_longest_axis_at_the_exact_count() -> None:
    # 6 x 10 over cores 1:2 -> quotas 20, 40; the longest axis is 1 (10 columns), so node 0
    # takes columns 0-2 (18) and the first 2 cells of column 3 in raster order.
    node_of = place_geometric((6, 10), np.array([1, 2]), seed=0).reshape(6, 10)
    expected = np.ones((6, 10), dtype=np.int32)
    expected[:, :3] = 0
    expected[:2, 3] = 0
    np.testing.assert_array_equal(node_of, expected)


def reference_first_cut(parts_shape: tuple[int, ...], k: int) -> np.ndarray:
    """The first bisection by the key (coordinate on the longest axis, flat id), slowly."""
    coords = np.indices(parts_shape).reshape(len(parts_shape), -1)
    axis = max(range(len(parts_shape)), key=lambda a: (parts_shape[a], -a))
    key = sorted(range(coords.shape[1]), key=lambda f: (coords[axis, f], f))
    lower = np.zeros(coords.shape[1], dtype=bool)
    lower[key[:k]] = True
    return lower


@pytest.mark.parametrize(
    ("parts_shape", "cores"),
    [
        ((7, 9), [1, 1]),
        ((9, 7), [3, 2]),
        ((5, 6, 7), [2, 5]),
        ((4, 9, 3), [1, 3]),
        ((8, 8), [5, 3]),
    ],
)
def test_the_cut_of_a_full_box_is_the_coordinate_then_flat_id_key(parts_shape, cores) -> None:
    node_of = place_geometric(parts_shape, np.array(cores), seed=0)
    k = int(quotas(math.prod(parts_shape), cores)[0])
    np.testing.assert_array_equal(node_of == 0, reference_first_cut(parts_shape, k))


def test_a_ragged_cut_does_not_cut_a_cell_off() -> None:
    # The case that a flat-id split of the boundary slab gets wrong: node 0 takes row 0 and
    # two cells of row 1; the rest (10 cells, a ragged box) is then split 5 | 5.
    node_of = place_geometric((4, 4), np.array([1, 1, 1]), seed=0)
    assert_counts_match_quotas(node_of, [1, 1, 1])
    assert_regions_are_connected(node_of, (4, 4))


def test_lower_nodes_get_lower_coordinates_along_the_first_cut() -> None:
    node_of = place_geometric((40, 10), np.full(4, 2), seed=0).reshape(40, 10)
    # Axis 0 is longest: nodes 0-1 take rows 0-19, nodes 2-3 rows 20-39.
    assert set(np.unique(node_of[:20])) == {0, 1}
    assert set(np.unique(node_of[20:])) == {2, 3}


def test_more_nodes_than_partitions_leaves_the_extra_nodes_empty() -> None:
    node_of = place_geometric((2, 3), np.full(10, 4), seed=0)
    np.testing.assert_array_equal(np.sort(node_of), np.arange(6))
    assert_regions_are_connected(node_of, (2, 3))


def test_grids_beyond_int32_cell_indices_are_refused_before_any_allocation() -> None:
    with pytest.raises(InputError) as info:
        place_geometric((2**16, 2**16), np.array([1]), seed=0)
    assert info.value.where == "parts_shape"


def reference_cases(n_cases: int) -> list[tuple[tuple[int, ...], np.ndarray]]:
    """Random 2D and 3D grids and node sets, equal and heterogeneous cores (fixed seed)."""
    rng = np.random.default_rng(25)
    cases = []
    for _ in range(n_cases):
        if rng.random() < 0.5:
            shape = tuple(int(x) for x in rng.integers(1, 60, 2))
        else:
            shape = tuple(int(x) for x in rng.integers(1, 16, 3))
        n_nodes = int(rng.integers(1, max(2, min(math.prod(shape) + 5, 80))))
        if rng.random() < 0.5:
            cores = rng.integers(1, 9, n_nodes)
        else:
            cores = np.full(n_nodes, int(rng.integers(1, 5)))
        cases.append((shape, cores))
    return cases


@pytest.mark.parametrize(
    ("parts_shape", "cores"),
    [
        *reference_cases(300),
        ((300, 200), np.full(777, 4)),
        ((60, 50, 40), np.resize([16, 32, 48, 64], 500)),
        ((1, 997), np.full(13, 2)),
        ((997, 1), np.full(13, 2)),
    ],
)
def test_runs_give_the_placement_of_the_cell_by_cell_reference(parts_shape, cores) -> None:
    # Same decisions, bit for bit, as the version that kept every set's cells (the slow
    # reference in geometric_cells.py): the run representation changes the cost, not the cut.
    expected = place_geometric_cells(parts_shape, cores, seed=0)
    np.testing.assert_array_equal(place_geometric(parts_shape, cores, seed=0), expected)
