"""Numba kernels of the SPH mini-app (:mod:`grapeshot.apps.sph`).

Everything here is ``@njit(cache=True, nogil=True)``, so the runtime's threads can run several
partitions at once. The kernels are dimension-agnostic: the neighbourhood arrays carry three
position components, the third being zero in 2-D, so one compiled version serves both.

Particle records
----------------
An owned particle is one row of a float64 record array of ``NC = 3 + 3*d`` columns::

    id | x (d) | v (d) | a (d) | rho | p

A ghost particle (a copy of a neighbour's particle) is a row of ``GC = 2 + 2*d`` columns::

    id | x (d) | v (d) | rho

Determinism
-----------
:func:`build_neighbourhood` sorts a partition's owned, ghost and wall-mirror particles by
(cell of the padded local grid, particle id). The padded grid is in C order, so this is also
the order of (global cell, id). :func:`density_pass` and :func:`force_pass` visit, for every
owned particle, the ``3**d`` surrounding cells in C order and each cell's particles in id
order: a particle's sums see the same terms in the same order whatever the partitioning, so
results are bitwise identical for 1 or 64 partitions.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: Status codes returned by :func:`build_neighbourhood`.
BUILD_OK = 0
BUILD_OUTSIDE = 1  # a particle's cell lies outside the padded local grid


@njit(cache=True, nogil=True)
def record_columns(d: int) -> tuple[int, int, int, int, int, int]:
    """Column offsets ``(X, V, A, RHO, P, NC)`` of an owned record in ``d`` dimensions."""
    x = 1
    v = 1 + d
    a = 1 + 2 * d
    rho = 1 + 3 * d
    p = 2 + 3 * d
    return x, v, a, rho, p, 3 + 3 * d


@njit(cache=True, nogil=True)
def cell_of(x: float, h: float, n: int) -> int:
    """Global cell index of coordinate ``x`` (m) on an axis of ``n`` cells of size ``h`` (m).

    Clamped to ``[0, n)`` so that a particle a rounding error short of the far wall (where
    ``x / h`` rounds up to ``n``) is still inside the domain. Every partition uses this one
    function, so owner, neighbours and mirrors agree on every particle's cell.
    """
    c = int(np.floor(x / h))
    if c < 0:
        return 0
    if c >= n:
        return n - 1
    return c


@njit(cache=True, nogil=True)
def global_cells(rec: np.ndarray, d: int, h: float, dom: np.ndarray) -> np.ndarray:
    """Global cell coordinates, int64 ``(n, d)``, of records whose positions start at column 1."""
    n = rec.shape[0]
    out = np.empty((n, d), dtype=np.int64)
    for i in range(n):
        for a in range(d):
            out[i, a] = cell_of(rec[i, 1 + a], h, dom[a])
    return out


@njit(cache=True, nogil=True)
def pack_layers(
    rec: np.ndarray,
    d: int,
    h: float,
    dom: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    offsets: np.ndarray,
    columns: np.ndarray,
    id_span: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The owned particles in the one-cell layer of the box facing each offset, packed.

    On an axis with offset ``-1`` the layer is the box's first cell, with ``+1`` its last
    cell, with ``0`` the whole box. A layer's particles come sorted by (global cell, id), an
    order that does not depend on the order of ``rec``: the density and the force exchanges,
    which pack the same particles from differently ordered blocks, list them identically.
    One pass finds every particle's cell for all the layers (a partition packs up to
    ``3**d - 1``); particles with a non-finite coordinate are left out (their owner reports
    them).

    Parameters
    ----------
    offsets
        int64 ``(k, d)``: one offset per row.
    columns
        int64 ``(w,)``: the columns of ``rec`` to pack, in this order.
    id_span
        An int above every particle id (ids are integers ``>= 0``); ``prod(dom) * id_span``
        must stay below ``2**63`` (the program checks it), so (cell, id) sorts as one key.

    Returns
    -------
    packed : float64 ``(ptr[-1] * w,)``
        Layer ``j``'s particles, ``w`` values each, are ``packed[ptr[j] * w:ptr[j + 1] * w]``.
    ptr : int64 ``(k + 1,)``
    """
    n = rec.shape[0]
    # Per particle: bit 2a set if it is in the box's first cell on axis a, bit 2a + 1 if in
    # its last; -1 if a coordinate is not finite.
    faces = np.empty(n, dtype=np.int64)
    keys = np.empty(n, dtype=np.int64)
    for i in range(n):
        f = 0
        key = 0
        for a in range(d):
            if not np.isfinite(rec[i, 1 + a]):
                f = -1
                break
            c = cell_of(rec[i, 1 + a], h, dom[a])
            if c == lo[a]:
                f |= 1 << (2 * a)
            if c == hi[a] - 1:
                f |= 1 << (2 * a + 1)
            key = key * dom[a] + c
        faces[i] = f
        if f >= 0:
            keys[i] = key * id_span + np.int64(rec[i, 0])
    k = offsets.shape[0]
    w = columns.shape[0]
    ptr = np.zeros(k + 1, dtype=np.int64)
    packed = np.empty(n * k * w)
    rows = np.empty(n, dtype=np.int64)
    order_keys = np.empty(n, dtype=np.int64)
    for j in range(k):
        need = 0
        for a in range(d):
            if offsets[j, a] < 0:
                need |= 1 << (2 * a)
            elif offsets[j, a] > 0:
                need |= 1 << (2 * a + 1)
        m = 0
        for i in range(n):
            if faces[i] >= 0 and faces[i] & need == need:
                rows[m] = i
                order_keys[m] = keys[i]
                m += 1
        at = ptr[j] * w
        for q, o in enumerate(np.argsort(order_keys[:m])):
            r = rows[o]
            for c in range(w):
                packed[at + q * w + c] = rec[r, columns[c]]
        ptr[j + 1] = ptr[j] + m
    return packed[: ptr[k] * w], ptr


@njit(cache=True, nogil=True)
def build_neighbourhood(
    own: np.ndarray,
    ghost: np.ndarray,
    d: int,
    h: float,
    dom: np.ndarray,
    lengths: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
):
    """Sort owned + ghost + mirror particles into the padded cell grid of one partition.

    Parameters
    ----------
    own
        float64 ``(n, NC)``: owned records (see the module docstring).
    ghost
        float64 ``(m, GC)``: ghost records, all in the one-cell ring around the box.
    d
        Dimension, 2 or 3.
    h
        Cell size = kernel support radius, m.
    dom, lengths
        Domain cells per axis (int64 ``(d,)``) and domain extent per axis (m, ``(d,)``).
    lo, hi
        The box's first and one-past-last global cell per axis, int64 ``(d,)``.

    Returns
    -------
    status
        :data:`BUILD_OK`, or :data:`BUILD_OUTSIDE` if some particle is not in the padded grid
        (the other outputs are then empty).
    x
        float64 ``(3, M)``: positions (m) sorted by (cell, id), one row per component (the
        candidate search streams each component); the third row is zero in 2-D.
    v
        float64 ``(M, 3)``: velocities (m/s), sorted likewise, third column zero in 2-D.
    src
        int64 ``(M,)``: the base entry each sorted particle copies its density from. Base
        entries are the owned particles *in their new order* (see ``owned_perm``) followed by
        the ghosts in input order; a mirror points at the particle it reflects.
    cell
        int64 ``(M,)``: padded local cell (C-order flat index) of each sorted particle.
    cell_start
        int64 ``(C + 1,)``: particles of padded local cell ``c`` are ``cell_start[c]`` to
        ``cell_start[c + 1]`` of the sorted arrays (CSR).
    targets
        int64 ``(n,)``: sorted position of each owned particle, in (cell, id) order.
    owned_perm
        int64 ``(n,)``: the permutation that sorts ``own`` by (cell, id).
    pshape
        int64 ``(d,)``: the padded grid's shape, ``hi - lo + 2``.

    Notes
    -----
    Walls are modelled by mirror particles: every particle (owned or ghost) in the first or
    last cell layer of the domain on an axis where the box touches that wall is reflected
    across the wall into the ring cell beyond it, with the normal velocity reversed (a
    free-slip wall). Walls are processed axis by axis and mirrors are mirrored again, which
    fills the corner cells. A mirror's cell is assigned explicitly (``-1`` or ``n``) rather
    than recomputed from its reflected position.
    """
    n = own.shape[0]
    m = ghost.shape[0]
    base = n + m
    # Entries: originals first (owned, then ghosts); mirrors are appended per axis.
    gc = np.empty((base, d), dtype=np.int64)
    side = np.zeros((base, d), dtype=np.int8)
    src = np.empty(base, dtype=np.int64)
    for e in range(base):
        src[e] = e
        for a in range(d):
            xa = own[e, 1 + a] if e < n else ghost[e - n, 1 + a]
            gc[e, a] = cell_of(xa, h, dom[a])
    cur = base
    for a in range(d):
        low = lo[a] == 0
        high = hi[a] == dom[a]
        if not (low or high):
            continue
        extra = 0
        for e in range(cur):
            if low and gc[e, a] == 0:
                extra += 1
            if high and gc[e, a] == dom[a] - 1:
                extra += 1
        if extra == 0:
            continue
        gc2 = np.empty((cur + extra, d), dtype=np.int64)
        side2 = np.zeros((cur + extra, d), dtype=np.int8)
        src2 = np.empty(cur + extra, dtype=np.int64)
        gc2[:cur] = gc[:cur]
        side2[:cur] = side[:cur]
        src2[:cur] = src[:cur]
        k = cur
        for e in range(cur):
            if low and gc[e, a] == 0:
                gc2[k] = gc[e]
                side2[k] = side[e]
                src2[k] = src[e]
                gc2[k, a] = -1
                side2[k, a] = -1
                k += 1
            if high and gc[e, a] == dom[a] - 1:
                gc2[k] = gc[e]
                side2[k] = side[e]
                src2[k] = src[e]
                gc2[k, a] = dom[a]
                side2[k, a] = 1
                k += 1
        gc, side, src, cur = gc2, side2, src2, cur + extra
    total = cur

    # Local flat cell index in the padded grid (C order).
    pshape = np.empty(d, dtype=np.int64)
    for a in range(d):
        pshape[a] = hi[a] - lo[a] + 2
    ncell = 1
    for a in range(d):
        ncell *= pshape[a]
    cell = np.empty(total, dtype=np.int64)
    for e in range(total):
        c = 0
        for a in range(d):
            la = gc[e, a] - lo[a] + 1
            if la < 0 or la >= pshape[a]:
                empty_f = np.empty((0, 3))
                empty_i = np.empty(0, dtype=np.int64)
                return (
                    BUILD_OUTSIDE,
                    empty_f,
                    empty_f,
                    empty_i,
                    empty_i,
                    empty_i,
                    empty_i,
                    empty_i,
                    pshape,
                )
            c = c * pshape[a] + la
        cell[e] = c

    ids = np.empty(total, dtype=np.float64)
    for e in range(total):
        s = src[e]
        ids[e] = own[s, 0] if s < n else ghost[s - n, 0]

    # Stable counting sort by cell, then insertion sort by id inside each cell (cells hold
    # a few dozen particles at most, so this is linear in practice).
    cell_start = np.zeros(ncell + 1, dtype=np.int64)
    for e in range(total):
        cell_start[cell[e] + 1] += 1
    for c in range(ncell):
        cell_start[c + 1] += cell_start[c]
    fill = cell_start[:-1].copy()
    order = np.empty(total, dtype=np.int64)
    for e in range(total):
        c = cell[e]
        order[fill[c]] = e
        fill[c] += 1
    for c in range(ncell):
        for k in range(cell_start[c] + 1, cell_start[c + 1]):
            e = order[k]
            key = ids[e]
            j = k - 1
            while j >= cell_start[c] and ids[order[j]] > key:
                order[j + 1] = order[j]
                j -= 1
            order[j + 1] = e

    # Sorted positions and velocities (mirrors reflected), owned ranks, remapped sources.
    x = np.zeros((3, total))  # by component: the candidate search reads x[a, j0:j1]
    v = np.zeros((total, 3))
    targets = np.empty(n, dtype=np.int64)
    owned_perm = np.empty(n, dtype=np.int64)
    rank = np.empty(n, dtype=np.int64)
    r = 0
    for k in range(total):
        e = order[k]
        s = src[e]
        if e < n:  # an owned original (mirrors have e >= base)
            targets[r] = k
            owned_perm[r] = e
            rank[e] = r
            r += 1
        for a in range(d):
            if s < n:
                xa = own[s, 1 + a]
                va = own[s, 1 + d + a]
            else:
                xa = ghost[s - n, 1 + a]
                va = ghost[s - n, 1 + d + a]
            if side[e, a] < 0:
                xa = -xa
                va = -va
            elif side[e, a] > 0:
                xa = 2.0 * lengths[a] - xa
                va = -va
            x[a, k] = xa
            v[k, a] = va
    src_sorted = np.empty(total, dtype=np.int64)
    cell_sorted = np.empty(total, dtype=np.int64)
    for k in range(total):
        e = order[k]
        s = src[e]
        src_sorted[k] = rank[s] if s < n else s
        cell_sorted[k] = cell[e]
    return BUILD_OK, x, v, src_sorted, cell_sorted, cell_start, targets, owned_perm, pshape


@njit(cache=True, nogil=True)
def row_offsets(pshape: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ``3**(d-1)`` rows of neighbour cells around a cell, in C order.

    Along the last axis the cells ``c-1, c, c+1`` are adjacent in the flat index, so their
    particles form one contiguous run of the sorted arrays; a row is named by its middle
    cell. Rows are listed with the first axis varying slowest, so the runs, and the
    particles within them, come in the C order of the ``3**d`` cells.

    Returns
    -------
    offsets : int64 ``(3**(d-1),)``
        Flat offset of each row's middle cell from the centre cell.
    directions : int64 ``(3**(d-1), d-1)``
        Each row's offset (-1, 0, 1) on the axes before the last.
    """
    d = pshape.shape[0]
    nrow = 3 ** (d - 1)
    out = np.zeros(nrow, dtype=np.int64)
    dirs = np.zeros((nrow, max(d - 1, 1)), dtype=np.int64)
    for r in range(nrow):
        off = 0
        div = nrow // 3
        for a in range(d - 1):
            o = (r // div) % 3 - 1
            div = max(div // 3, 1)
            stride = 1
            for b in range(a + 1, d):
                stride *= pshape[b]
            off += o * stride
            dirs[r, a] = o
        out[r] = off
    return out, dirs


@njit(cache=True, nogil=True)
def wendland_sigma(d: int, h: float) -> float:
    """Normalisation of the Wendland C2 kernel with support radius ``h`` (m), 1/m**d."""
    if d == 2:
        return 7.0 / (np.pi * h * h)
    return 21.0 / (2.0 * np.pi * h * h * h)


@njit(cache=True, nogil=True)
def density_pass(
    x: np.ndarray,
    cell: np.ndarray,
    cell_start: np.ndarray,
    targets: np.ndarray,
    pshape: np.ndarray,
    lo: np.ndarray,
    h: float,
    sigma: float,
    mass: float,
    rho_out: np.ndarray,
):
    """Density summation ``rho_i = sum_j m W(|x_i - x_j|, h)`` for every target.

    Also records each target's neighbours (``|x_i - x_j| < h``, the particle itself
    included) for :func:`force_pass`: positions do not change between the two passes, so
    the force pass skips the candidate search.

    Parameters
    ----------
    x
        float64 ``(3, M)``: sorted positions, m (from :func:`build_neighbourhood`).
    cell, cell_start, targets, pshape
        The cell lists and the owned particles' sorted positions.
    lo
        int64 ``(d,)``: the box's first global cell per axis (the padded grid starts one
        cell before it).
    h, sigma, mass
        Support radius (m), kernel normalisation (1/m**d), particle mass (kg, or kg/m in 2-D).
    rho_out
        float64 ``(len(targets),)``, written: density, kg/m**d.

    Returns
    -------
    candidates : int
        Candidate pairs examined: the partition's work count.
    nbr_ptr : int64 ``(len(targets) + 1,)``
        Target ``t``'s neighbours are ``nbr[nbr_ptr[t]:nbr_ptr[t + 1]]``.
    nbr : int32 ``(nbr_ptr[-1],)``
        Sorted positions of the neighbours, in the visiting order of the sum.

    Notes
    -----
    The sum visits the neighbours in the C order of the ``3**d`` cells around the target
    and by id within a cell: the same terms in the same order in every partitioning.
    Cells wholly out of reach (their nearest point is farther than ``h``, with a relative
    margin of 1e-9 so no in-range pair is dropped by rounding) are not searched; they hold
    no neighbours, so the order of the neighbours found is unchanged.

    The candidate search is branch-free: distances over each contiguous run of candidates
    are computed first (positions are stored by component, so LLVM vectorises this), then
    the run is compacted by always writing the index and advancing an unsigned counter by
    the comparison (a third to a sixth of candidates are in range, and a branch on that
    mispredicts; unsigned indices avoid numba's negative-index check).
    """
    d = pshape.shape[0]
    last = d - 1
    rows, dirs = row_offsets(pshape)
    nt = targets.shape[0]
    h2 = h * h
    reach2 = h2 * (1.0 + 1e-9)
    inv_h = 1.0 / h
    strides = np.ones(d, dtype=np.int64)
    for a in range(d - 2, -1, -1):
        strides[a] = strides[a + 1] * pshape[a + 1]
    gap_lo = np.zeros(3)  # squared distance from the target to its cell's low face, per axis
    gap_hi = np.zeros(3)
    xs = x[0]
    ys = x[1]
    zs = x[2]
    nbr_ptr = np.zeros(nt + 1, dtype=np.int64)
    cap = np.uint64(max(64, nt * 32))
    nbr = np.empty(cap, dtype=np.int32)
    hit = np.empty(64, dtype=np.uint8)  # in-range flags of one run of candidates
    k = np.uint64(0)
    cand = np.uint64(0)  # unsigned like j: numba turns int64 + uint64 into a float
    for t in range(nt):
        i = targets[t]
        c = cell[i]
        for a in range(d):
            g = lo[a] - 1 + (c // strides[a]) % pshape[a]  # global cell on axis a
            below = x[a, i] - g * h
            above = (g + 1) * h - x[a, i]
            gap_lo[a] = below * below
            gap_hi[a] = above * above
        need = np.uint64(0)
        for r in range(rows.shape[0]):
            mid = c + rows[r]
            need += np.uint64(cell_start[mid + 2] - cell_start[mid - 1])
        if k + need > cap:
            cap = max(np.uint64(2) * cap, k + need)
            grown = np.empty(cap, dtype=np.int32)
            grown[:k] = nbr[:k]
            nbr = grown
        if need > hit.shape[0]:
            hit = np.empty(np.uint64(2) * need, dtype=np.uint8)
        xi = xs[i]
        yi = ys[i]
        zi = zs[i]
        k0 = k
        for r in range(rows.shape[0]):
            lateral = 0.0
            for a in range(last):
                o = dirs[r, a]
                if o < 0:
                    lateral += gap_lo[a]
                elif o > 0:
                    lateral += gap_hi[a]
            if lateral > reach2:
                continue
            mid = c + rows[r]
            first = mid - 1 if lateral + gap_lo[last] <= reach2 else mid
            stop = mid + 2 if lateral + gap_hi[last] <= reach2 else mid + 1
            j0 = cell_start[first]
            n = cell_start[stop] - j0
            cand += np.uint64(n)
            # Distances over the contiguous run (vectorised by LLVM), then compaction.
            xr = xs[j0 : j0 + n]
            yr = ys[j0 : j0 + n]
            zr = zs[j0 : j0 + n]
            for m in range(n):
                dx = xi - xr[m]
                dy = yi - yr[m]
                dz = zi - zr[m]
                hit[m] = dx * dx + dy * dy + dz * dz < h2
            base = np.uint64(j0)
            for m in range(n):
                nbr[k] = base + np.uint64(m)
                k += np.uint64(hit[m])
        s = 0.0
        for kk in range(k0, k):
            j = np.uint64(nbr[kk])
            dx = xi - xs[j]
            dy = yi - ys[j]
            dz = zi - zs[j]
            q = np.sqrt(dx * dx + dy * dy + dz * dz) * inv_h
            omq = 1.0 - q
            omq2 = omq * omq
            s += omq2 * omq2 * (1.0 + 4.0 * q)
        rho_out[t] = mass * sigma * s
        nbr_ptr[t + 1] = k
    return np.int64(cand), nbr_ptr, nbr[:k]


@njit(cache=True, nogil=True)
def tait_pressure(rho: float, rho0: float, b: float) -> float:
    """Tait equation of state with gamma = 7, negative pressures clamped to zero, Pa.

    ``p = B ((rho/rho0)**7 - 1)``. Clamping stops particles at the free surface, whose
    summed density is short of ``rho0`` for lack of neighbours, from pulling each other into
    clumps (tensile instability).
    """
    r = rho / rho0
    r2 = r * r
    r4 = r2 * r2
    p = b * (r4 * r2 * r - 1.0)
    return p if p > 0.0 else 0.0


@njit(cache=True, nogil=True)
def pressures(rho: np.ndarray, rho0: float, b: float, out: np.ndarray) -> None:
    """:func:`tait_pressure` over an array."""
    for i in range(rho.shape[0]):
        out[i] = tait_pressure(rho[i], rho0, b)


@njit(cache=True, nogil=True)
def force_pass(
    x: np.ndarray,
    v: np.ndarray,
    base_rho: np.ndarray,
    src: np.ndarray,
    targets: np.ndarray,
    nbr_ptr: np.ndarray,
    nbr: np.ndarray,
    h: float,
    sigma: float,
    mass: float,
    rho0: float,
    b: float,
    c0: float,
    alpha: float,
    gravity: np.ndarray,
    acc_out: np.ndarray,
) -> float:
    """Pressure, artificial viscosity and gravity accelerations of every target.

    ``dv_i/dt = -sum_j m (p_i/rho_i**2 + p_j/rho_j**2 + Pi_ij) grad_i W_ij + g`` with
    Monaghan's artificial viscosity ``Pi_ij = -alpha c0 mu_ij / rho_ij`` for approaching
    pairs (``v_ij . x_ij < 0``, else 0), ``mu_ij = (h/2) v_ij . x_ij / (|x_ij|**2 +
    0.01 (h/2)**2)``, ``rho_ij = (rho_i + rho_j) / 2``. For the Wendland C2 kernel
    ``grad_i W_ij = -20 sigma (1 - q)**3 x_ij / h**2`` with ``q = |x_ij| / h``: no division by
    ``|x_ij|``, so coincident particles, and the particle itself in its neighbour list,
    contribute exactly zero.

    Parameters
    ----------
    x, v
        float64 ``(3, M)`` and ``(M, 3)``: sorted positions (m) and velocities (m/s), as
        :func:`build_neighbourhood` returns them.
    base_rho, src
        Density of every base entry (kg/m**d) and each sorted particle's base entry.
    targets, nbr_ptr, nbr
        The owned particles' sorted positions and their neighbour lists, from
        :func:`density_pass` (visited in the same order).
    h, sigma, mass
        Support radius (m), kernel normalisation (1/m**d), particle mass.
    rho0, b
        Rest density (kg/m**d) and Tait stiffness ``B = c0**2 rho0 / 7`` (Pa).
    c0, alpha
        Speed of sound (m/s) and artificial viscosity coefficient (1).
    gravity
        float64 ``(3,)``: m/s**2.
    acc_out
        float64 ``(len(targets), 3)``, written: accelerations, m/s**2.

    Returns
    -------
    float
        The largest ``max((c0 + |v_i|) / h, sqrt(|a_i| / h))`` over the targets, 1/s: the
        partition's bound on the inverse time step before the CFL factor (0 if empty, NaN
        if some value is NaN).
    """
    total = x.shape[1]
    rho = np.empty(total)
    pr2 = np.empty(total)  # p / rho**2 of every sorted particle
    for k in range(total):
        rk = base_rho[src[k]]
        rho[k] = rk
        pr2[k] = tait_pressure(rk, rho0, b) / (rk * rk)
    inv_h = 1.0 / h
    hs = 0.5 * h
    eps = 0.01 * hs * hs
    visc = 2.0 * alpha * c0 * hs  # the 2 folds in rho_ij = (rho_i + rho_j) / 2
    kfac = 20.0 * mass * sigma * inv_h * inv_h
    rate = 0.0
    for t in range(targets.shape[0]):
        i = targets[t]
        xi = x[0, i]
        yi = x[1, i]
        zi = x[2, i]
        vxi = v[i, 0]
        vyi = v[i, 1]
        vzi = v[i, 2]
        rhoi = rho[i]
        pri = pr2[i]
        ax = 0.0
        ay = 0.0
        az = 0.0
        for kk in range(nbr_ptr[t], nbr_ptr[t + 1]):
            j = np.uint64(nbr[kk])  # unsigned: no negative-index check in the loop
            dx = xi - x[0, j]
            dy = yi - x[1, j]
            dz = zi - x[2, j]
            r2 = dx * dx + dy * dy + dz * dz
            q = np.sqrt(r2) * inv_h
            omq = 1.0 - q
            vr = (vxi - v[j, 0]) * dx + (vyi - v[j, 1]) * dy + (vzi - v[j, 2]) * dz
            # Branch-free viscosity: min(vr, 0) is zero for receding pairs.
            vneg = min(vr, 0.0)
            coef = (pri + pr2[j] - visc * vneg / ((r2 + eps) * (rhoi + rho[j]))) * (omq * omq * omq)
            ax += coef * dx
            ay += coef * dy
            az += coef * dz
        ax = kfac * ax + gravity[0]
        ay = kfac * ay + gravity[1]
        az = kfac * az + gravity[2]
        acc_out[t, 0] = ax
        acc_out[t, 1] = ay
        acc_out[t, 2] = az
        speed = np.sqrt(vxi * vxi + vyi * vyi + vzi * vzi)
        amag = np.sqrt(ax * ax + ay * ay + az * az)
        rt = (c0 + speed) * inv_h
        ra = np.sqrt(amag * inv_h)
        if ra > rt:
            rt = ra
        if rt > rate or rt != rt:  # keep a NaN so the reduction and the check see it
            rate = rt
    return rate


@njit(cache=True, nogil=True)
def integrate(rec: np.ndarray, d: int, dt: float, h: float, lengths: np.ndarray):
    """Symplectic Euler step of owned records in place, with reflection at the walls.

    ``v += dt a``; ``x += dt v``. A particle that crossed a wall is reflected back inside
    and its normal velocity reversed (a safety net: the mirror particles normally keep
    particles off the walls).

    Parameters
    ----------
    rec
        float64 ``(n, NC)``: owned records (see the module docstring), updated.
    d
        Dimension.
    dt, h
        Time step (s) and cell size (m).
    lengths
        Domain extent per axis, m.

    Returns
    -------
    max_cells : float
        Largest ``|dt v_a| / h`` over particles and axes: the displacement in cells.
    worst : int
        Row of that particle (-1 if no particles).
    bad : int
        Row of the first particle with a non-finite position or velocity (-1 if none).
    """
    X, V, A, _, _, _ = record_columns(d)
    n = rec.shape[0]
    max_cells = 0.0
    worst = -1
    bad = -1
    for i in range(n):
        for a in range(d):
            va = rec[i, V + a] + dt * rec[i, A + a]
            step = dt * va
            xa = rec[i, X + a] + step
            if not (np.isfinite(xa) and np.isfinite(va)):
                if bad < 0:
                    bad = i
                rec[i, X + a] = xa
                rec[i, V + a] = va
                continue
            moved = abs(step) / h
            if moved > max_cells:
                max_cells = moved
                worst = i
            length = lengths[a]
            if xa < 0.0:
                xa = -xa
                va = -va
            elif xa >= length:
                xa = 2.0 * length - xa
                va = -va
            # Keep strictly inside (0, L): a particle exactly on a wall would sit on its own
            # mirror image.
            if xa <= 0.0:
                xa = 1e-9 * h
            elif xa >= length:
                xa = length - 1e-9 * h
            rec[i, X + a] = xa
            rec[i, V + a] = va
    return max_cells, worst, bad
