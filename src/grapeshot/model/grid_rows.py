"""Compiled loops over a partition grid in C order: the halo rows behind
:func:`grapeshot.model.workload.grid_halo` on grids without wrap, and the split of each node's
partitions over its MPI ranks behind :func:`grapeshot.model.placement.split_over_ranks`.

Apart from the workload and placement modules so that commands which only read workloads or
placements (``trace import --help``, ``show``) do not load numba.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: Groups a node's bisection keeps pending at once: one per level (ranks < 2**31) and one.
_STACK = 64


@njit(cache=True)
def grid_rows(shape3, e0, e1, e2, ndim, ghost, cell_bytes, corners, indptr, indices, nbytes, fill):
    """Count (``fill=False``: ``indptr``) or write (``indices``, ``nbytes``) each partition's
    halo messages: to every neighbour at an offset in ``{-1, 0, 1}^ndim`` (faces only without
    ``corners``), ``ghost`` layers of the shared face, edge or corner, in cells of the sender."""
    nx, ny, nz = shape3[0], shape3[1], shape3[2]
    k = 0
    for i in range(nx):
        for j in range(ny):
            for m in range(nz):
                p = (i * ny + j) * nz + m
                indptr[p] = k
                for dx in range(-1, 2):
                    for dy in range(-1, 2):
                        for dz in range(-1, 2):
                            if ndim == 2 and dz != 0:
                                continue
                            nonzero = (dx != 0) + (dy != 0) + (dz != 0)
                            if nonzero == 0 or (not corners and nonzero > 1):
                                continue
                            a, b, c = i + dx, j + dy, m + dz
                            if a < 0 or a >= nx or b < 0 or b >= ny or c < 0 or c >= nz:
                                continue
                            if fill:
                                cells = min(ghost, e0[i]) if dx != 0 else e0[i]
                                cells *= min(ghost, e1[j]) if dy != 0 else e1[j]
                                if ndim == 3:
                                    cells *= min(ghost, e2[m]) if dz != 0 else e2[m]
                                indices[k] = (a * ny + b) * nz + c
                                nbytes[k] = cells * cell_bytes
                            k += 1
    indptr[nx * ny * nz] = k


@njit(cache=True, nogil=True)
def split_ranks(node_of, shape3, first_rank, word):
    """Split each node's partitions over its ranks by recursive coordinate bisection.

    Node ``k``'s ``n`` partitions go to its ``R`` ranks, rank ``i`` (counted from the node's
    first) getting ``b(i + 1) - b(i)`` of them, ``b(i) = floor(i * n / R)``: counts within
    one of each other. A group of partitions and ranks ``[a, c)`` (first the node's all) is
    cut into ranks ``[a, m)`` and ``[m, c)``, ``m = a + (c - a) // 2``, along the axis on which
    the group's bounding box is longest (the lowest such axis on ties): the first
    ``b(m) - b(a)`` of the group ordered by its coordinate on that axis, ties in partition
    order, go to the first half. So a node's box of partitions becomes near-square boxes,
    one a rank; a node's scattered partitions become compact groups of them.

    Parameters
    ----------
    node_of
        int32 ``(P,)``: the node of each partition, partitions in C order of a grid of
        shape ``shape3`` (a 1-D or 2-D grid padded with sizes 1).
    shape3
        int64 ``(3,)``: the grid.
    first_rank
        int64 ``(nodes + 1,)``: node ``k``'s ranks are ``first_rank[k]`` to
        ``first_rank[k + 1] - 1``, at least one.
    word
        An empty array whose dtype holds a partition's packed coordinates: int32 where
        they fit in 31 bits (half the memory of int64: 400 MB less at 10^8 partitions).

    Returns
    -------
    rank_of
        int32 ``(P,)``: the rank of each partition.
    """
    n = node_of.size
    nodes = first_rank.size - 1
    ny, nz = shape3[1], shape3[2]
    # A partition's coordinates packed in one int64, axis 0 highest: no division to read
    # them (divisions took most of the time), and the packed values order as partitions do.
    b1, b2 = _bits(ny), _bits(nz)
    s0, m1, m2 = b1 + b2, (1 << b1) - 1, (1 << b2) - 1
    start = np.zeros(nodes + 1, dtype=np.int64)
    for p in range(n):
        start[node_of[p] + 1] += 1
    most = 0
    for k in range(nodes):
        most = max(most, start[k + 1])
        start[k + 1] += start[k]
    # Each node's partitions in partition order: a counting sort. Both arrays allocated
    # here: numpy's ask for huge pages, whose first touch made this 10-40 % slower.
    packed = np.empty(n, dtype=word.dtype)
    rank_of = np.empty(n, dtype=np.int32)
    fill = start[:nodes].copy()
    x, y, z = 0, 0, 0
    for p in range(n):
        k = node_of[p]
        packed[fill[k]] = (x << s0) | (y << b2) | z  # fits: the caller chose the word
        fill[k] += 1
        z += 1
        if z == nz:
            z = 0
            y += 1
            if y == ny:
                y = 0
                x += 1
    scratch = np.empty(most, dtype=word.dtype)
    keys = np.empty(most, dtype=np.int64)
    hist = np.zeros(max(ny, nz) + 1, dtype=np.int64)  # cuts on axis 0 need none
    stack = np.empty((_STACK, 4), dtype=np.int64)
    for k in range(nodes):
        base, size = start[k], start[k + 1] - start[k]
        first, ranks = first_rank[k], first_rank[k + 1] - first_rank[k]
        stack[0, 0], stack[0, 1], stack[0, 2], stack[0, 3] = base, base + size, 0, ranks
        top = 1
        while top > 0:
            top -= 1
            lo, hi, a, c = stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3]
            if c - a == 1:
                for i in range(lo, hi):
                    v = packed[i]
                    rank_of[((v >> s0) * ny + ((v >> b2) & m1)) * nz + (v & m2)] = first + a
                continue
            if hi == lo:
                continue
            m = a + (c - a) // 2
            cut = base + (m * size) // ranks
            need, g = cut - lo, hi - lo
            if 0 < need < g:
                _bisect(packed, lo, hi, need, s0, b2, m1, m2, scratch, keys, hist)
            stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3] = cut, hi, m, c
            stack[top + 1, 0], stack[top + 1, 1] = lo, cut
            stack[top + 1, 2], stack[top + 1, 3] = a, m
            top += 2
    return rank_of


@njit(cache=True, nogil=True)
def packed_bits(shape3):
    """Bits of a partition's packed coordinates on a grid of shape ``shape3``."""
    return _bits(shape3[0]) + _bits(shape3[1]) + _bits(shape3[2])


@njit(cache=True, nogil=True)
def _bits(size):
    """Bits that hold the coordinates ``0 .. size - 1`` (at least one)."""
    bits = 1
    while (1 << bits) < size:
        bits += 1
    return bits


@njit(cache=True, nogil=True)
def _bisect(packed, lo, hi, need, s0, b2, m1, m2, scratch, keys, hist):
    """Reorder ``packed[lo:hi]`` (partitions in partition order) so that its first ``need``
    are the first ``need`` by their coordinate on the axis where the group is longest, ties
    in partition order; both parts stay in partition order (:func:`split_ranks`)."""
    lo0, hi0, lo1, hi1, lo2, hi2 = packed[lo] >> s0, packed[hi - 1] >> s0, m1, 0, m2, 0
    for i in range(lo, hi):
        v = packed[i]
        y, z = (v >> b2) & m1, v & m2
        lo1, hi1 = min(lo1, y), max(hi1, y)
        lo2, hi2 = min(lo2, z), max(hi2, z)
    e0, e1, e2 = hi0 - lo0, hi1 - lo1, hi2 - lo2
    if e0 >= e1 and e0 >= e2:
        return  # in partition order, the group is ordered on axis 0 already
    shift, mask, low = (b2, m1, lo1) if e1 >= e2 else (0, m2, lo2)
    span = max(e1, e2) + 1
    g = hi - lo
    kth = 0
    # The coordinate t of the cut: all of the group below it go first, then the first
    # `rest` at it. By a histogram when the span is short, else by selection.
    if span <= 64 * g:
        for i in range(lo, hi):
            hist[((packed[i] >> shift) & mask) - low] += 1
        below, t = 0, 0
        while below + hist[t] < need:
            below += hist[t]
            t += 1
        hist[:span] = 0
        t += low
        rest = need - below
    else:
        for i in range(g):
            keys[i] = ((packed[lo + i] >> shift) & mask) * g + i  # distinct: ties in order
        kth = np.partition(keys[:g], need - 1)[need - 1]
        t, rest = kth // g, -1
    left, right = 0, need
    for i in range(lo, hi):
        v = packed[i]
        coord = (v >> shift) & mask
        if coord < t or (coord == t and (rest > 0 if rest >= 0 else keys[i - lo] <= kth)):
            scratch[left] = v
            left += 1
            if coord == t and rest > 0:
                rest -= 1
        else:
            scratch[right] = v
            right += 1
    packed[lo:hi] = scratch[:g]
