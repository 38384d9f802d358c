"""How many partitions each node gets: the one quota rule every static strategy shares.

A node's share of the partitions is proportional to its cores, rounded by the largest-remainder
(Hamilton) method so every count is within one of the exact proportion and the counts add up to
the number of partitions. Strategies differ only in *which* partitions a node gets, never in how
many, so their placements can be compared load for load.

The input checks for the static strategies' common arguments (``parts_shape``, ``cores``) live
here as well, so every strategy rejects the same bad input with the same message.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from grapeshot.model.errors import InputError, check_int
from grapeshot.model.machine import MAX_RANKS

#: Most cores a node may declare to a strategy: with at most ``MAX_RANKS`` nodes (node numbers
#: are int32 in a placement) the total stays below 2**62, so sums never overflow int64. A
#: machine's own limit is lower (:data:`grapeshot.model.machine.MAX_CORES`, in all).
MAX_NODE_CORES = int(np.iinfo(np.int32).max)

#: Axes a partition grid may have: the domains grapeshot decomposes are 2D or 3D.
GRID_NDIMS = (2, 3)


def check_parts_shape(parts_shape: Sequence[int] | np.ndarray) -> tuple[int, ...]:
    """Validate a partition grid shape and return it as a tuple of Python ints.

    Parameters
    ----------
    parts_shape
        Partitions per axis of a 2D or 3D grid, e.g. ``(64, 64)`` or ``(16, 8, 16)``. Every
        entry must be an integer ``>= 1`` (numpy integers are accepted, floats and bools are
        not).

    Returns
    -------
    tuple of int
        The shape, ``len`` 2 or 3.

    Raises
    ------
    InputError
        If the shape is not a sequence of 2 or 3 positive integers, in particular if it has a
        zero extent (an empty grid).
    """
    expected = "a tuple of 2 or 3 positive integers (partitions per axis)"
    if isinstance(parts_shape, np.ndarray):
        if parts_shape.ndim != 1:
            raise InputError("parts_shape", f"got an array of shape {parts_shape.shape}", expected)
        items = list(parts_shape.tolist())
    elif isinstance(parts_shape, tuple | list):
        items = list(parts_shape)
    else:
        raise InputError("parts_shape", f"got {parts_shape!r}", expected)
    if len(items) not in GRID_NDIMS:
        raise InputError("parts_shape", f"got {len(items)} axes in {tuple(items)!r}", expected)
    for extent in items:
        # bool is an int subclass; a shape of (True, 4) is a bug, not a grid.
        if isinstance(extent, bool) or not isinstance(extent, int | np.integer):
            raise InputError("parts_shape", f"got {tuple(items)!r}", expected)
        if extent < 1:
            raise InputError("parts_shape", f"got {tuple(items)!r} (an empty grid)", expected)
    return tuple(int(extent) for extent in items)


def check_cores(cores: Sequence[int] | np.ndarray) -> np.ndarray:
    """Validate per-node core counts and return them as a fresh int64 array.

    Parameters
    ----------
    cores
        Cores of each node, shape ``(n,)``, integers in ``[1, MAX_NODE_CORES]``; ``n >= 1``.

    Returns
    -------
    numpy.ndarray
        int64, shape ``(n,)``; a copy, so the caller's array is never modified.

    Raises
    ------
    InputError
        If there are no nodes, more nodes than an int32 node id can name, a non-integer
        dtype, or a node with fewer than one core or more than ``MAX_NODE_CORES``.
    """
    arr = np.asarray(cores)
    if arr.ndim != 1:
        raise InputError("cores", f"got an array of shape {arr.shape}", "a 1-D array of ints")
    if arr.size == 0:
        raise InputError("cores", "got zero nodes", "at least one node")
    if arr.size > MAX_RANKS:
        raise InputError("cores", f"got {arr.size} nodes", f"at most {MAX_RANKS} nodes")
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise InputError("cores", f"got dtype {arr.dtype}", "integer core counts")
    low = int(arr.min())
    if low < 1:
        node = int(np.argmin(arr))
        raise InputError("cores", f"node {node} has {low} cores", "at least 1 core per node")
    high = int(arr.max())
    if high > MAX_NODE_CORES:
        node = int(np.argmax(arr))
        raise InputError("cores", f"node {node} has {high} cores", f"at most {MAX_NODE_CORES}")
    return arr.astype(np.int64, copy=True)


def quotas(n_items: int, cores: Sequence[int] | np.ndarray) -> np.ndarray:
    """Split ``n_items`` among nodes in proportion to their cores (largest remainder).

    Node ``i`` gets ``floor(n_items * cores[i] / C)`` items, ``C = sum(cores)``; the items left
    over (fewer than ``n``) go one each to the nodes with the largest fractional remainders,
    ties to the lower node index. All arithmetic is exact integer arithmetic.

    Parameters
    ----------
    n_items
        Number of items (partitions) to share out, ``>= 1``.
    cores
        Cores of each node, shape ``(n,)``, integers ``>= 1``.

    Returns
    -------
    numpy.ndarray
        int64, shape ``(n,)``: the quota of each node. It sums to ``n_items`` and every entry
        differs from ``n_items * cores[i] / C`` by less than 1. Nodes may get 0 when there
        are more nodes than items.

    Raises
    ------
    InputError
        If ``n_items`` is not a positive integer or ``cores`` is invalid (see
        :func:`check_cores`).
    """
    n_items = check_int(n_items, "n_items", expected="a positive integer (partitions)")
    c = check_cores(cores)
    total = int(c.sum(dtype=np.int64))  # < 2**62 by check_cores' bounds
    # n_items * cores[i] must not overflow int64; object arrays keep it exact beyond that
    # (only reachable with enormous inputs, but a wrong quota would be silent).
    if n_items * int(c.max()) < 2**62:
        scaled = c * n_items
        base = scaled // total
        remainder = scaled - base * total
    else:
        big = c.astype(object) * n_items
        base = (big // total).astype(np.int64)
        remainder = big % total
    extra = n_items - int(base.sum())
    # Stable sort on the negated remainder: largest remainder first, ties to the lower index.
    # object arrays cannot be negated into a sortable dtype, so rank them by Python's sort.
    if remainder.dtype == object:
        order = np.array(sorted(range(c.size), key=lambda i: (-remainder[i], i)), dtype=np.int64)
    else:
        order = np.argsort(-remainder, kind="stable")
    result = base.astype(np.int64, copy=True)
    result[order[:extra]] += 1
    return result


def check_static_inputs(
    parts_shape: Sequence[int] | np.ndarray, cores: Sequence[int] | np.ndarray
) -> tuple[tuple[int, ...], np.ndarray]:
    """Validate a static strategy's grid and machine, and compute the node quotas.

    Parameters
    ----------
    parts_shape
        Partitions per axis (see :func:`check_parts_shape`).
    cores
        Cores of each node, shape ``(n,)`` (see :func:`check_cores`).

    Returns
    -------
    shape : tuple of int
        The validated grid shape; ``P = prod(shape)`` partitions.
    quota : numpy.ndarray
        int64, shape ``(n,)``: :func:`quotas` ``(P, cores)``.
    """
    shape = check_parts_shape(parts_shape)
    return shape, quotas(math.prod(shape), cores)
