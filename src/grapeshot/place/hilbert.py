"""Hilbert-curve index of grid points, vectorised over all points (Skilling's algorithm).

J. Skilling, "Programming the Hilbert curve", AIP Conf. Proc. 707, 381 (2004), turns a point's
coordinates into the *transpose* of its Hilbert index with one pass over the bits, using only
XORs and swaps of low-order bits. Each step is the same for every point bar a per-point
condition, so here every step acts on whole coordinate arrays with the condition turned into a
bit mask: the Python loops run over bits and axes (at most 64 iterations), never over points.

Conventions: ``coords[0]`` is the first (slowest, C-order) axis of the grid; the curve starts at
the origin, and consecutive indices are grid neighbours (Manhattan distance 1) on the
``2**bits``-cube.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from grapeshot.model.errors import InputError, check_int


def _uint_for(n_bits: int) -> type[np.unsignedinteger]:
    """Smallest of uint32/uint64 holding ``n_bits`` bits (narrower words halve the traffic)."""
    return np.uint32 if n_bits <= 32 else np.uint64


def bits_for(shape: tuple[int, ...]) -> int:
    """Bits per axis of the smallest power-of-two cube enclosing a grid of ``shape``.

    Parameters
    ----------
    shape
        Extent of each axis, all ``>= 1``.

    Returns
    -------
    int
        ``max(1, ceil(log2(max(shape))))``.
    """
    return max(1, (max(shape) - 1).bit_length())


def hilbert_index(coords: np.ndarray, bits: int) -> np.ndarray:
    """Hilbert index of each point of a ``2**bits`` cube in ``ndim`` dimensions.

    Parameters
    ----------
    coords
        Integer coordinates, shape ``(ndim, N)``, each in ``[0, 2**bits)``; ``ndim >= 1``.
    bits
        Bits per coordinate, ``>= 1``, with ``ndim * bits <= 64``.

    Returns
    -------
    numpy.ndarray
        Unsigned integers (uint32 if ``ndim * bits <= 32``, else uint64), shape ``(N,)``: the
        position of each point along the curve, in ``[0, 2**(ndim * bits))``. Over all points
        of the cube it is a permutation of that range.

    Raises
    ------
    InputError
        If ``coords`` is not a 2-D integer array of in-range coordinates or ``bits`` is out of
        range.
    """
    coords = np.asarray(coords)
    if coords.ndim != 2 or coords.shape[0] < 1:
        raise InputError("coords", f"got an array of shape {coords.shape}", "shape (ndim, N)")
    if coords.dtype == np.bool_ or not np.issubdtype(coords.dtype, np.integer):
        raise InputError("coords", f"got dtype {coords.dtype}", "integer coordinates")
    ndim, n_points = coords.shape
    bits = check_int(bits, "bits")
    if ndim * bits > 64:
        raise InputError("bits", f"got {bits} bits x {ndim} axes", "at most 64 index bits")
    if n_points and (int(coords.min()) < 0 or int(coords.max()) >= 1 << bits):
        raise InputError("coords", f"values outside [0, 2**{bits})", f"coordinates < {1 << bits}")

    word = _uint_for(bits)
    x = coords.astype(word, copy=True)  # x[i] becomes the i-th word of the transposed index
    t = np.empty(n_points, dtype=word)
    hi = np.empty(n_points, dtype=word)

    # Inverse undo: from the top bit down, for each axis either invert the low bits of x[0]
    # (axis bit set) or exchange the low bits of x[0] and x[i] (axis bit clear).
    q = 1 << (bits - 1)
    shift = bits - 1
    while q > 1:
        low = word(q - 1)
        for i in range(ndim):
            # hi = all ones where bit q of x[i] is set, 0 elsewhere (two's-complement trick).
            np.right_shift(x[i], word(shift), out=hi)
            np.bitwise_and(hi, word(1), out=hi)
            np.negative(hi, out=hi)
            # Invert: x[0] ^= low where set.
            np.bitwise_and(hi, low, out=t)
            np.bitwise_xor(x[0], t, out=x[0])
            if i == 0:
                continue  # exchanging x[0] with itself is a no-op
            # Exchange where clear: t = (x[0] ^ x[i]) & low & ~hi.
            np.bitwise_xor(x[0], x[i], out=t)
            np.bitwise_and(t, low, out=t)
            np.invert(hi, out=hi)
            np.bitwise_and(t, hi, out=t)
            np.bitwise_xor(x[0], t, out=x[0])
            np.bitwise_xor(x[i], t, out=x[i])
        q >>= 1
        shift -= 1

    # Gray encode.
    for i in range(1, ndim):
        np.bitwise_xor(x[i], x[i - 1], out=x[i])
    t.fill(0)
    q = 1 << (bits - 1)
    shift = bits - 1
    while q > 1:
        # t ^= (q - 1) where bit q of x[ndim-1] is set.
        np.right_shift(x[ndim - 1], word(shift), out=hi)
        np.bitwise_and(hi, word(1), out=hi)
        np.negative(hi, out=hi)
        np.bitwise_and(hi, word(q - 1), out=hi)
        np.bitwise_xor(t, hi, out=t)
        q >>= 1
        shift -= 1
    for i in range(ndim):
        np.bitwise_xor(x[i], t, out=x[i])

    # Interleave the transpose into one integer: bit b of x[i] lands at b * ndim + (ndim-1-i),
    # so x[0] carries the most significant bit of each ndim-bit group.
    out_word = _uint_for(ndim * bits)
    index = np.zeros(n_points, dtype=out_word)
    bit = np.empty(n_points, dtype=out_word)
    for b in range(bits):
        for i in range(ndim):
            np.right_shift(x[i], word(b), out=hi)
            np.bitwise_and(hi, word(1), out=hi)
            bit[...] = hi
            np.left_shift(bit, out_word(b * ndim + (ndim - 1 - i)), out=bit)
            np.bitwise_or(index, bit, out=index)
    return index


def hilbert_order(shape: tuple[int, ...]) -> np.ndarray:
    """Flat (C-order) ids of a grid's cells, sorted along the Hilbert curve.

    A grid whose extents are not equal powers of two is embedded in the enclosing
    ``2**bits`` cube; its cells keep their order along that cube's curve (consecutive cells
    are then usually, but not always, neighbours).

    Parameters
    ----------
    shape
        Extent of each axis, all ``>= 1``, ``len(shape) * bits_for(shape) <= 64``.

    Returns
    -------
    numpy.ndarray
        int64, shape ``(prod(shape),)``: ``order[k]`` is the flat id of the ``k``-th cell along
        the curve.
    """
    bits = bits_for(shape)
    if len(shape) * bits > 64:
        raise InputError("parts_shape", f"got {shape!r}", "at most 2**64 cells in its cube")
    coord_word = np.uint32 if bits <= 32 else np.uint64
    n_cells = int(np.prod(shape, dtype=np.int64))
    coords = np.indices(shape, dtype=coord_word).reshape(len(shape), n_cells)
    # Indices of distinct cells are distinct, so any sort gives the same (deterministic) order.
    return np.argsort(hilbert_index(coords, bits)).astype(np.int64, copy=False)


@njit(cache=True, nogil=True)
def hilbert_index_one(point: np.ndarray, bits: int) -> np.uint64:
    """:func:`hilbert_index` of one point, for numba code (no checks: the caller's job).

    ``point`` is ``(ndim,)`` integer coordinates in ``[0, 2**bits)``, ``ndim * bits <= 64``.
    The same steps as :func:`hilbert_index`, one point at a time.
    """
    ndim = point.size
    x = np.empty(ndim, dtype=np.uint64)
    for i in range(ndim):
        x[i] = np.uint64(point[i])
    one = np.uint64(1)
    q = one << np.uint64(bits - 1)
    while q > one:
        low = q - one
        for i in range(ndim):
            if x[i] & q:
                x[0] ^= low
            elif i > 0:
                t = (x[0] ^ x[i]) & low
                x[0] ^= t
                x[i] ^= t
        q >>= one
    for i in range(1, ndim):
        x[i] ^= x[i - 1]
    t = np.uint64(0)
    q = one << np.uint64(bits - 1)
    while q > one:
        if x[ndim - 1] & q:
            t ^= q - one
        q >>= one
    index = np.uint64(0)
    for b in range(bits - 1, -1, -1):
        for i in range(ndim):
            index = (index << one) | (((x[i] ^ t) >> np.uint64(b)) & one)
    return index
