"""Space-filling-curve placement: contiguous runs of the Hilbert curve, one per node.

Ordering the partitions along a Hilbert curve keeps partitions that are close on the curve
close in space, so cutting the curve into one run per node gives compact, mostly contiguous
regions (Zoltan's HSFC idea, on a structured grid).

No sort is needed: the curve visits the ``2**d`` sub-cubes of every aligned cube one after
the other, each as one contiguous stretch of the curve. So a depth-first walk of the cube tree,
children in curve order (found from the Hilbert index of one corner of each), meets the grid's
cells in curve order, counting them without touching them; a sub-cube whose cells in the grid
all fall in one node's run of the curve is filled with that node as one box, and only the
sub-cubes that straddle the end of a node's run are opened. The walk opens O(n d bits)
sub-cubes for n nodes and writes each partition once: at 10**8 partitions it is a few
hundredths of the Hilbert-index-and-argsort construction it replaces, with the same result,
bit for bit (:func:`grapeshot.place.hilbert.hilbert_order` is that construction).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from grapeshot.model.errors import InputError
from grapeshot.model.seed import SeedLike, as_generator
from grapeshot.place.hilbert import bits_for, hilbert_index_one
from grapeshot.place.quota import check_static_inputs


@njit(cache=True, nogil=True)
def _walk(node_of: np.ndarray, shape: np.ndarray, bits: int, first: np.ndarray) -> None:
    """Fill ``node_of`` (the grid of ``shape``, C order, flat) by walking the Hilbert curve.

    ``first[k]`` is the rank along the curve of node ``k``'s first partition (``first[n]`` =
    P). A stack holds sub-cubes as (corner on each axis, log2 of the side); children are
    pushed in reverse curve order, so they are popped, and their cells ranked, in curve order.
    """
    ndim = shape.size
    n_child = 1 << ndim
    stack = np.empty((bits * n_child + 1, ndim + 1), dtype=np.int64)
    stack[0, :] = 0
    stack[0, ndim] = bits
    top = 1
    rank = 0  # cells of the grid met so far along the curve
    k = 0  # node owning ``rank``
    strides = np.ones(ndim, dtype=np.int64)
    for a in range(ndim - 2, -1, -1):
        strides[a] = strides[a + 1] * shape[a + 1]
    lo = np.empty(ndim, dtype=np.int64)
    hi = np.empty(ndim, dtype=np.int64)
    corner = np.empty(ndim, dtype=np.int64)
    keys = np.empty(n_child, dtype=np.uint64)
    order = np.empty(n_child, dtype=np.int64)
    while top > 0:
        top -= 1
        level = stack[top, ndim]
        side = np.int64(1) << level
        count = np.int64(1)
        for a in range(ndim):
            lo[a] = stack[top, a]
            hi[a] = min(lo[a] + side, shape[a])
            count *= max(hi[a] - lo[a], 0)
        if count == 0:
            continue
        while first[k + 1] <= rank:
            k += 1
        if rank + count <= first[k + 1]:
            # One node owns every cell of this sub-cube that lies in the grid: a box.
            if ndim == 2:
                for i in range(lo[0], hi[0]):
                    row = i * strides[0]
                    node_of[row + lo[1] : row + hi[1]] = k
            else:
                for i in range(lo[0], hi[0]):
                    for j in range(lo[1], hi[1]):
                        row = i * strides[0] + j * strides[1]
                        node_of[row + lo[2] : row + hi[2]] = k
            rank += count
            continue
        # Open it: children in curve order, by the Hilbert index of a corner of each.
        half = side >> 1
        for c in range(n_child):
            for a in range(ndim):
                corner[a] = lo[a] + (half if (c >> (ndim - 1 - a)) & 1 else 0)
            keys[c] = hilbert_index_one(corner, bits)
            order[c] = c
        for c in range(1, n_child):  # insertion sort of 4 or 8 keys
            o = order[c]
            d = c
            while d > 0 and keys[order[d - 1]] > keys[o]:
                order[d] = order[d - 1]
                d -= 1
            order[d] = o
        for r in range(n_child - 1, -1, -1):
            c = order[r]
            for a in range(ndim):
                stack[top, a] = lo[a] + (half if (c >> (ndim - 1 - a)) & 1 else 0)
            stack[top, ndim] = level - 1
            top += 1


def place_sfc(
    parts_shape: tuple[int, ...], cores: Sequence[int] | np.ndarray, *, seed: SeedLike
) -> np.ndarray:
    """Cut the Hilbert curve through the partition grid into one run per node.

    Partitions are ordered by their Hilbert index on the enclosing power-of-two square or
    cube (the order of :func:`grapeshot.place.hilbert.hilbert_order`); node 0 takes the
    first ``quota[0]`` of them, node 1 the next ``quota[1]``, and so on. The order is walked,
    not sorted (see the module docstring).

    Parameters
    ----------
    parts_shape
        Partitions per axis of the 2D or 3D grid; ``P = prod(parts_shape)``. Partition ids
        flatten the grid in C order.
    cores
        Cores of each node, shape ``(n,)``, integers ``>= 1``.
    seed
        Validated like every strategy's seed, then unused: the curve is deterministic.

    Returns
    -------
    numpy.ndarray
        int32, shape ``(P,)``: the node of each partition; node ``k`` holds exactly
        ``quotas(P, cores)[k]`` partitions, consecutive along the curve.

    Raises
    ------
    InputError
        On an invalid grid, core counts or seed, or a grid whose enclosing cube needs more
        than 64 index bits.
    """
    shape, quota = check_static_inputs(parts_shape, cores)
    as_generator(seed)  # same contract as the random strategies; no randomness is drawn
    bits = bits_for(shape)
    if len(shape) * bits > 64:
        raise InputError("parts_shape", f"got {shape!r}", "at most 2**64 cells in its cube")
    first = np.zeros(quota.size + 1, dtype=np.int64)
    np.cumsum(quota, out=first[1:])
    node_of = np.empty(int(first[-1]), dtype=np.int32)
    _walk(node_of, np.array(shape, dtype=np.int64), bits, first)
    return node_of
