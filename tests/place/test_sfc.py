"""Hilbert index (checked against a scalar reference) and the space-filling-curve placement."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import ndimage

from grapeshot.model.errors import InputError
from grapeshot.place.hilbert import bits_for, hilbert_index, hilbert_index_one, hilbert_order
from grapeshot.place.quota import quotas
from grapeshot.place.sfc import place_sfc
from tests.place.test_conformance import assert_counts_match_quotas


def reference_hilbert(point: list[int], bits: int) -> int:
    """Skilling's AxestoTranspose for one point, then the transpose read out as one integer."""
    x = list(point)
    n = len(x)
    q = 1 << (bits - 1)
    while q > 1:  # inverse undo
        low = q - 1
        for i in range(n):
            if x[i] & q:
                x[0] ^= low
            else:
                t = (x[0] ^ x[i]) & low
                x[0] ^= t
                x[i] ^= t
        q >>= 1
    for i in range(1, n):  # Gray encode
        x[i] ^= x[i - 1]
    t = 0
    q = 1 << (bits - 1)
    while q > 1:
        if x[n - 1] & q:
            t ^= q - 1
        q >>= 1
    x = [xi ^ t for xi in x]
    index = 0
    for b in range(bits - 1, -1, -1):
        for i in range(n):
            index = (index << 1) | ((x[i] >> b) & 1)
    return index


def cube_points(ndim: int, bits: int) -> np.ndarray:
    """All points of the ``2**bits`` cube in ``ndim`` dimensions, shape ``(ndim, N)``."""
    return np.indices((1 << bits,) * ndim).reshape(ndim, -1)


CUBES = [(2, 1), (2, 2), (2, 3), (2, 5), (2, 7), (3, 1), (3, 2), (3, 3), (3, 4), (3, 5)]


@pytest.mark.parametrize(("ndim", "bits"), [*CUBES, (1, 4), (4, 2)])
def test_index_matches_the_scalar_reference(ndim: int, bits: int) -> None:
    points = cube_points(ndim, bits)
    expected = [reference_hilbert(points[:, k].tolist(), bits) for k in range(points.shape[1])]
    np.testing.assert_array_equal(hilbert_index(points, bits), expected)


@pytest.mark.parametrize(("ndim", "bits"), [(2, 16), (2, 32), (3, 10), (3, 21)])
def test_index_matches_the_reference_at_full_word_width(ndim: int, bits: int) -> None:
    # (2, 32) and (3, 21) fill most of a uint64; random points exercise every bit.
    rng = np.random.default_rng(bits)
    points = rng.integers(0, 1 << bits, size=(ndim, 300), dtype=np.uint64)
    expected = [reference_hilbert([int(v) for v in points[:, k]], bits) for k in range(300)]
    got = hilbert_index(points, bits)
    assert got.dtype == (np.uint32 if ndim * bits <= 32 else np.uint64)
    assert [int(v) for v in got] == expected


@pytest.mark.parametrize(("ndim", "bits"), CUBES)
def test_index_is_a_permutation_of_the_cube(ndim: int, bits: int) -> None:
    index = hilbert_index(cube_points(ndim, bits), bits)
    np.testing.assert_array_equal(np.sort(index), np.arange(1 << (ndim * bits)))


@pytest.mark.parametrize(("ndim", "bits"), CUBES)
def test_consecutive_cells_along_the_curve_are_grid_neighbours(ndim: int, bits: int) -> None:
    points = cube_points(ndim, bits)
    along = points[:, np.argsort(hilbert_index(points, bits))]
    steps = np.abs(np.diff(along, axis=1)).sum(axis=0)
    np.testing.assert_array_equal(steps, 1)
    # The curve starts at the origin.
    np.testing.assert_array_equal(along[:, 0], 0)


def test_one_dimension_is_the_identity() -> None:
    np.testing.assert_array_equal(hilbert_index(np.arange(16)[None, :], 4), np.arange(16))


@pytest.mark.parametrize(
    "parts_shape", [(1, 1), (1, 7), (5, 3), (13, 17), (64, 64), (3, 5, 7), (8, 8, 8), (2, 9, 4)]
)
def test_order_is_the_grid_sorted_by_hilbert_index(parts_shape) -> None:
    order = hilbert_order(parts_shape)
    n_cells = math.prod(parts_shape)
    assert order.dtype == np.int64
    np.testing.assert_array_equal(np.sort(order), np.arange(n_cells))
    coords = np.indices(parts_shape).reshape(len(parts_shape), -1)
    index = hilbert_index(coords, bits_for(parts_shape))
    assert np.all(np.diff(index[order].astype(np.int64)) > 0)


@pytest.mark.parametrize(
    ("coords", "bits"),
    [
        (np.array([[0, 4]]), 2),  # coordinate beyond the cube
        (np.array([[0, -1], [0, 0]]), 3),  # negative
        (np.array([[0.0, 1.0]]), 2),  # not integers
        (np.array([0, 1]), 2),  # not (ndim, N)
        (np.zeros((2, 3), dtype=int), 0),  # no bits
        (np.zeros((3, 3), dtype=int), 22),  # 66 index bits
        (np.zeros((2, 3), dtype=int), 2.0),  # non-integer bits
    ],
)
def test_bad_index_input_raises_input_error(coords, bits) -> None:
    with pytest.raises(InputError):
        hilbert_index(coords, bits)


# --- the placement -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("parts_shape", "cores"),
    [
        ((64, 64), [4] * 16),
        ((13, 17), [1, 2, 3, 4]),
        ((16, 8, 16), [8] * 10),
        ((5, 7, 9), [3, 1, 4, 1, 5, 9, 2, 6]),
        ((3, 3), [1] * 12),
    ],
)
def test_each_node_gets_one_run_of_the_curve_in_node_order(parts_shape, cores) -> None:
    node_of = place_sfc(parts_shape, np.array(cores), seed=0)
    assert_counts_match_quotas(node_of, cores)
    along = node_of[hilbert_order(parts_shape)]
    q = quotas(math.prod(parts_shape), cores)
    np.testing.assert_array_equal(along, np.repeat(np.arange(len(cores)), q))


@pytest.mark.parametrize(
    ("parts_shape", "n_nodes", "box"),
    [((64, 64), 16, (16, 16)), ((64, 64), 64, (8, 8)), ((16, 16, 16), 64, (4, 4, 4))],
)
def test_aligned_runs_on_a_power_of_two_grid_are_sub_cubes(parts_shape, n_nodes, box) -> None:
    # A Hilbert curve visits each aligned sub-square (sub-cube) in one run, so 4**j nodes on a
    # 2**k square (8**j on a cube) each get one aligned sub-square.
    grid = place_sfc(parts_shape, np.full(n_nodes, 4), seed=0).reshape(parts_shape)
    for node, window in enumerate(ndimage.find_objects(grid + 1)):
        assert tuple(s.stop - s.start for s in window) == box
        assert np.all(grid[window] == node)


@pytest.mark.parametrize(
    ("parts_shape", "cores"),
    [
        ((16, 16), [1] * 7),
        ((13, 17), [1, 2, 3]),
        ((1, 50), [2] * 9),
        ((50, 1), [2] * 9),
        ((37, 64), [16, 32, 48, 64] * 9),
        ((5, 6, 7), [8] * 9),
        ((9, 1, 17), [1, 3, 2, 5]),
        ((16, 16, 16), [3] * 100),
        ((3, 4), [2] * 20),
        ((129, 65), [1] * 1000),
    ],
)
def test_walk_is_the_sorted_curve_cut_into_quota_runs(parts_shape, cores) -> None:
    # The walk of the cube tree against the construction it replaced: argsort of every cell's
    # Hilbert index, then node k on the next quota[k] cells.
    q = quotas(math.prod(parts_shape), cores)
    order = hilbert_order(parts_shape)
    expected = np.empty(order.size, dtype=np.int32)
    expected[order] = np.repeat(np.arange(len(cores), dtype=np.int32), q)
    np.testing.assert_array_equal(place_sfc(parts_shape, np.array(cores), seed=0), expected)


@pytest.mark.parametrize(("ndim", "bits"), [(2, 1), (2, 5), (2, 32), (3, 1), (3, 4), (3, 21)])
def test_index_of_one_point_matches_the_vectorised_index(ndim, bits) -> None:
    rng = np.random.default_rng(bits)
    points = rng.integers(0, 1 << bits, size=(ndim, 200), dtype=np.uint64)
    expected = hilbert_index(points, bits)
    got = [hilbert_index_one(points[:, k], bits) for k in range(points.shape[1])]
    assert [int(v) for v in got] == [int(v) for v in expected]
