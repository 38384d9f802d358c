"""Birkhoff-Rott sums (numba): all pairs with periodic images, and within a cutoff radius.

    u(x_i) = sum_j sum_o c_j * (omega_j x (x_i - x_j - o)) / (|x_i - x_j - o|^2 + eps)^(3/2)

with ``c_j = W_j dx dy / (-4 pi)`` folded into the source strengths ``s_j = c_j omega_j`` by the
caller. eps is added to r^2 un-squared (Beatnik's desingularisation).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True)
def br_all_pairs(targets, sources, strengths, offsets, eps, out):  # pragma: no cover - numba
    """Add the velocity induced by every source (and image) at every target to ``out``.

    Parameters
    ----------
    targets : float64 (nt, 3)
    sources : float64 (ns, 3)
    strengths : float64 (ns, 3), ``c_j * omega_j``
    offsets : float64 (no, 3), image shifts o (``[[0, 0, 0]]`` for free boundaries)
    eps : float
    out : float64 (nt, 3), accumulated in place
    """
    nt = targets.shape[0]
    ns = sources.shape[0]
    no = offsets.shape[0]
    for i in range(nt):
        ux = 0.0
        uy = 0.0
        uz = 0.0
        tx = targets[i, 0]
        ty = targets[i, 1]
        tz = targets[i, 2]
        for o in range(no):
            ox = tx - offsets[o, 0]
            oy = ty - offsets[o, 1]
            oz = tz - offsets[o, 2]
            for j in range(ns):
                dx = ox - sources[j, 0]
                dy = oy - sources[j, 1]
                dz = oz - sources[j, 2]
                r2 = dx * dx + dy * dy + dz * dz + eps
                inv = 1.0 / (r2 * np.sqrt(r2))
                sx = strengths[j, 0]
                sy = strengths[j, 1]
                sz = strengths[j, 2]
                ux += (sy * dz - sz * dy) * inv
                uy += (sz * dx - sx * dz) * inv
                uz += (sx * dy - sy * dx) * inv
        out[i, 0] += ux
        out[i, 1] += uy
        out[i, 2] += uz


@njit(cache=True, nogil=True)
def build_cells(points, lo, cell, dims):  # pragma: no cover - numba
    """Counting sort of points into a uniform 3-D cell grid.

    ``lo`` (int64, 3) is the grid's low corner on the lattice ``floor(x / cell)`` anchored at
    the origin, so a point's cell does not depend on the grid's extent. Returns
    ``(start, order)``: the points of flat cell c are ``order[start[c]:start[c + 1]]``.
    Points outside the grid are clamped into the boundary cells.
    """
    n = points.shape[0]
    ncell = dims[0] * dims[1] * dims[2]
    flat = np.empty(n, np.int64)
    for p in range(n):
        c = np.empty(3, np.int64)
        for a in range(3):
            k = int(np.floor(points[p, a] / cell)) - lo[a]
            c[a] = min(max(k, 0), dims[a] - 1)
        flat[p] = (c[0] * dims[1] + c[1]) * dims[2] + c[2]
    start = np.zeros(ncell + 1, np.int64)
    for p in range(n):
        start[flat[p] + 1] += 1
    for c in range(ncell):
        start[c + 1] += start[c]
    fill = start[:-1].copy()
    order = np.empty(n, np.int64)
    for p in range(n):
        order[fill[flat[p]]] = p
        fill[flat[p]] += 1
    return start, order


@njit(cache=True, nogil=True, parallel=True)
def br_cutoff(targets, sources, strengths, cutoff, eps, lo, cell, reach, dims, start, order, out):
    """Add the velocity of the sources within ``cutoff`` of each target (hard cutoff) to out.

    The plain scalar loop, kept as the reference of :func:`br_cutoff_cells` (which gives
    the same bits, about 3x faster; tests/apps/zmodel/test_cutoff.py).
    ``sources`` are binned by :func:`build_cells` with cells of size ``cell``, with
    ``reach * cell >= cutoff``; the (2 reach + 1)^3 cells around a target are searched.
    A source at distance 0 (the target itself) adds
    nothing, as in the all-pairs sum.
    """  # pragma: no cover - numba
    c2 = cutoff * cutoff
    # one target per iteration: each sum runs in a fixed order, so threads do not change it
    for i in prange(targets.shape[0]):
        tx = targets[i, 0]
        ty = targets[i, 1]
        tz = targets[i, 2]
        ci = min(max(int(np.floor(tx / cell)) - lo[0], 0), dims[0] - 1)
        cj = min(max(int(np.floor(ty / cell)) - lo[1], 0), dims[1] - 1)
        ck = min(max(int(np.floor(tz / cell)) - lo[2], 0), dims[2] - 1)
        ux = 0.0
        uy = 0.0
        uz = 0.0
        for a in range(max(ci - reach, 0), min(ci + reach + 1, dims[0])):
            for b in range(max(cj - reach, 0), min(cj + reach + 1, dims[1])):
                for c in range(max(ck - reach, 0), min(ck + reach + 1, dims[2])):
                    flat = (a * dims[1] + b) * dims[2] + c
                    for q in range(start[flat], start[flat + 1]):
                        j = order[q]
                        dx = tx - sources[j, 0]
                        dy = ty - sources[j, 1]
                        dz = tz - sources[j, 2]
                        d2 = dx * dx + dy * dy + dz * dz
                        if d2 >= c2:
                            continue
                        r2 = d2 + eps
                        inv = 1.0 / (r2 * np.sqrt(r2))
                        sx = strengths[j, 0]
                        sy = strengths[j, 1]
                        sz = strengths[j, 2]
                        ux += (sy * dz - sz * dy) * inv
                        uy += (sz * dx - sx * dz) * inv
                        uz += (sx * dy - sy * dx) * inv
        out[i, 0] += ux
        out[i, 1] += uy
        out[i, 2] += uz


@njit(cache=True, nogil=True, parallel=True)
def br_cutoff_cells(
    targets, tperm, src, stren, cutoff, eps, lo, cell, dims, start, longest, out
):  # pragma: no cover - numba
    """Add the velocity of the sources within ``cutoff`` of each target (hard cutoff) to out.

    ``src`` / ``stren`` (3, ns) (structure of arrays) are sorted by flat cell (cells of size
    ``cell`` on the lattice ``floor(x / cell) - lo``, :func:`build_cells`); cell f holds
    ``start[f]:start[f+1]``; ``longest`` bounds the sources of one x/y column of cells.
    Per target only the columns whose box comes within the cutoff are visited, and in each
    only the contiguous run of z cells within the cutoff. Each run is done in two passes: the
    kernel of every source (no reduction: the compiler vectorises the square roots and
    divisions, each still correctly rounded), then the sum of those within the cutoff in
    order. So a target sums its sources in (cell, source) order, and only those at distance
    < cutoff, whatever else is binned: bit-for-bit independent of which extra sources a rank
    holds. ``tperm`` is the order to visit the targets (by cell, for cache reuse).
    """
    c2 = cutoff * cutoff
    grow = c2 * (1.0 + 1e-9)  # visit borderline cells; the d2 < c2 test decides
    reach = int(np.ceil(cutoff / cell)) + 1
    nt = tperm.shape[0]
    nchunk = 64
    for chunk in prange((nt + nchunk - 1) // nchunk):
        kx = np.empty(longest)
        ky = np.empty(longest)
        kz = np.empty(longest)
        for ii in range(chunk * nchunk, min((chunk + 1) * nchunk, nt)):
            i = tperm[ii]
            tx = targets[i, 0]
            ty = targets[i, 1]
            tz = targets[i, 2]
            ci = int(np.floor(tx / cell)) - lo[0]
            cj = int(np.floor(ty / cell)) - lo[1]
            ux = 0.0
            uy = 0.0
            uz = 0.0
            for a in range(max(ci - reach, 0), min(ci + reach + 1, dims[0])):
                x0 = (lo[0] + a) * cell
                ex = max(x0 - tx, tx - (x0 + cell), 0.0)
                ex2 = ex * ex
                if ex2 >= grow:
                    continue
                for b in range(max(cj - reach, 0), min(cj + reach + 1, dims[1])):
                    y0 = (lo[1] + b) * cell
                    ey = max(y0 - ty, ty - (y0 + cell), 0.0)
                    exy2 = ex2 + ey * ey
                    if exy2 >= grow:
                        continue
                    rz = np.sqrt(grow - exy2) + cell * 1e-9
                    k0 = max(int(np.floor((tz - rz) / cell)) - lo[2], 0)
                    k1 = min(int(np.floor((tz + rz) / cell)) - lo[2], dims[2] - 1)
                    if k0 > k1:
                        continue
                    base = (a * dims[1] + b) * dims[2]
                    q0 = start[base + k0]
                    n = start[base + k1 + 1] - q0
                    # views of the run: indices from 0, so no negative-index fix-ups
                    px = src[0, q0 : q0 + n]
                    py = src[1, q0 : q0 + n]
                    pz = src[2, q0 : q0 + n]
                    wx = stren[0, q0 : q0 + n]
                    wy = stren[1, q0 : q0 + n]
                    wz = stren[2, q0 : q0 + n]
                    for q in range(n):  # pass 1: kernels, vectorised
                        dx = tx - px[q]
                        dy = ty - py[q]
                        dz = tz - pz[q]
                        d2 = dx * dx + dy * dy + dz * dz
                        r2 = d2 + eps
                        # outside the cutoff: x 0.0, whose addition changes no sum's bits (a
                        # -0.0 partial sum only ever becomes the same next value or +0.0,
                        # and out starts at +0.0)
                        inv = 1.0 / (r2 * np.sqrt(r2)) if d2 < c2 else 0.0
                        sx = wx[q]
                        sy = wy[q]
                        sz = wz[q]
                        kx[q] = (sy * dz - sz * dy) * inv
                        ky[q] = (sz * dx - sx * dz) * inv
                        kz[q] = (sx * dy - sy * dx) * inv
                    for q in range(n):  # pass 2: the sum, in order, without branches
                        ux += kx[q]
                        uy += ky[q]
                        uz += kz[q]
            out[i, 0] += ux
            out[i, 1] += uy
            out[i, 2] += uz


def image_offsets(periodic: bool, length: float) -> np.ndarray:
    """Periodic: the 9 shifts (a L, b L, 0), a, b in {-1, 0, 1}; free: only 0. Shape (no, 3)."""
    if not periodic:
        return np.zeros((1, 3))
    a = np.array([-1.0, 0.0, 1.0]) * length
    ox, oy = np.meshgrid(a, a, indexing="ij")
    return np.stack((ox.ravel(), oy.ravel(), np.zeros(9)), axis=1)
