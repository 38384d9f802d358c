"""Geometric placement: recursive coordinate bisection (RCB) of the partition grid.

Each node gets one contiguous region of the grid, so halo exchanges cross node boundaries only
on region faces: the classic locality-first placement that Birdshot's random placement is
compared against. The node set is halved (``n // 2`` nodes, then the rest) and the current set
of partitions is cut across the longest axis of its bounding box at exactly the count that gives
each half its nodes' total quota (:func:`grapeshot.place.quota.quotas`); both halves recurse.

Why the boundary slab is not split in flat-id order
---------------------------------------------------
Exact counts rarely fall on a slab boundary, so one slab (the *boundary slab*) is shared by the
two halves. Splitting it by the key ``(coordinate, flat id)`` cuts regions apart in most
non-divisible cases: on a 4 x 4 grid over 3 equal nodes node 1 gets a cell cut off from the
rest, and in a sweep of 2D/3D grids about half the placements had a split region, because after
the first ragged cut the sets are no longer boxes and the flat-id prefix of a slab need not
touch the cells below it. Here the boundary slab's cells are ranked instead by their distances,
inside the slab, to the cells that touch the lower side (``d_lo``) and the upper side
(``d_up``): by ``(d_lo - d_up, d_lo, raster index)``. The lower half takes a prefix of that
ranking, so every cell it takes reaches the lower side through cells it also takes, and it
leaves the cells nearest the upper side. Each cut is then checked by a flood fill of both
halves; if one is split, the mirrored ranking (the upper half takes a prefix of its own), the
same two with raster ties reversed, and then the next-longest axes are tried; if nothing gives
two connected halves (tiny, oddly shaped sets) the first cut is kept. In sweeps over thousands
of 2D/3D grids and node counts, equal and heterogeneous cores, every region was connected
whenever each node was owed at least 8 partitions; with 1 to 7 partitions per node a region can
still come out split.

When the set being cut is a full box, the ranking reduces to raster order, i.e. the key
``(coordinate on the axis, flat id)``, both halves are connected by construction, and no search
or check runs. So when every cut falls on a slab boundary (power-of-two node counts on
power-of-two grids, say) every region is a box, and otherwise regions are boxes with ragged
faces. The work per level is O(P) in numba kernels, O(P log n) in all; the Python loop runs
over the 2n - 1 node ranges, never over partitions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from grapeshot.model.errors import InputError
from grapeshot.model.seed import SeedLike, as_generator
from grapeshot.place.quota import check_static_inputs

#: Boundary-slab rankings tried per axis (see ``_split_along``'s ``variant``).
_N_VARIANTS = 4

#: Most partitions the int32 cell indices of the kernels can address.
_MAX_PARTS = int(np.iinfo(np.int32).max)


@njit(cache=True)
def _slab_distances(member: np.ndarray, seeds: np.ndarray, n_u: int, n_v: int) -> np.ndarray:
    """Breadth-first distances inside a slab from its seed cells (4-neighbour steps).

    ``member`` and ``seeds`` are flat ``(n_u * n_v,)`` booleans over the slab's raster; cells
    not reachable from a seed (or not members) get ``n_u * n_v + 1``.
    """
    n_cells = n_u * n_v
    far = n_cells + 1
    dist = np.full(n_cells, far, dtype=np.int64)
    queue = np.empty(n_cells, dtype=np.int64)
    head = 0
    tail = 0
    for s in range(n_cells):
        if seeds[s]:
            dist[s] = 0
            queue[tail] = s
            tail += 1
    while head < tail:
        s = queue[head]
        head += 1
        p = s // n_v
        q = s - p * n_v
        for dp, dq in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            pp = p + dp
            qq = q + dq
            if 0 <= pp < n_u and 0 <= qq < n_v:
                t = pp * n_v + qq
                if member[t] and dist[t] == far:
                    dist[t] = dist[s] + 1
                    queue[tail] = t
                    tail += 1
    return dist


@njit(cache=True)
def _farthest(member: np.ndarray, dist: np.ndarray, default: int) -> np.ndarray:
    """Seeds at the members of largest finite ``dist`` (``default`` alone if none is finite)."""
    far = dist.size + 1
    top = -1
    for s in range(dist.size):
        if member[s] and dist[s] < far and dist[s] > top:
            top = dist[s]
    seeds = np.zeros(dist.size, dtype=np.bool_)
    if top < 0:
        seeds[default] = True
        return seeds
    for s in range(dist.size):
        if member[s] and dist[s] == top:
            seeds[s] = True
    return seeds


@njit(cache=True, nogil=True)
def _bounds(runs: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Bounding box of a run set: ``(lo, extent, cells)``, each per axis ``(x, y, z)``."""
    lo = np.empty(3, dtype=np.int64)
    hi = np.empty(3, dtype=np.int64)
    lo[0] = hi[0] = runs[0, 0]
    lo[1] = hi[1] = runs[0, 1]
    lo[2] = runs[0, 2]
    hi[2] = runs[0, 3] - 1
    m = 0
    for r in range(runs.shape[0]):
        lo[0] = min(lo[0], runs[r, 0])
        hi[0] = max(hi[0], runs[r, 0])
        lo[1] = min(lo[1], runs[r, 1])
        hi[1] = max(hi[1], runs[r, 1])
        lo[2] = min(lo[2], runs[r, 2])
        hi[2] = max(hi[2], runs[r, 3] - 1)
        m += runs[r, 3] - runs[r, 2]
    return lo, hi - lo + 1, m


@njit(cache=True, nogil=True)
def _uv(axis: int) -> tuple[int, int]:
    """The two other axes, in order: a slab across ``axis`` is rastered ``(u, v)``."""
    return (1 if axis == 0 else 0), (1 if axis == 2 else 2)


@njit(cache=True, nogil=True)
def _raster_slab(
    runs: np.ndarray, lo: np.ndarray, ext: np.ndarray, axis: int, t: int
) -> np.ndarray:
    """Cells of the set in slab ``t`` (local coordinate on ``axis``), flat ``(n_u * n_v,)``."""
    u, v = _uv(axis)
    n_v = ext[v]
    member = np.zeros(ext[u] * n_v, dtype=np.bool_)
    if t < 0 or t >= ext[axis]:
        return member
    for r in range(runs.shape[0]):
        lx = runs[r, 0] - lo[0]
        ly = runs[r, 1] - lo[1]
        z0 = runs[r, 2] - lo[2]
        z1 = runs[r, 3] - lo[2]
        if axis == 2:
            if z0 <= t < z1:
                member[lx * n_v + ly] = True
        elif (lx if axis == 0 else ly) == t:
            p = ly if axis == 0 else lx
            for z in range(z0, z1):
                member[p * n_v + z] = True
    return member


@njit(cache=True, nogil=True)
def _split_runs(
    runs: np.ndarray, lo: np.ndarray, ext: np.ndarray, axis: int, c: int, sel: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The two halves of a cut: cells below slab ``c`` on ``axis``, plus slab ``c``'s cells
    ``sel`` marks (flat over the slab's raster), go to the lower half.

    Runs keep their raster order and stay maximal (a run's pieces alternate halves).
    """
    _, v = _uv(axis)
    n_v = ext[v]
    n_runs = runs.shape[0]
    cap = n_runs + (sel.size if axis != 2 else 0)
    lower = np.empty((cap, 4), dtype=np.int32)
    upper = np.empty((cap, 4), dtype=np.int32)
    n_lo = 0
    n_up = 0
    for r in range(n_runs):
        x = runs[r, 0]
        y = runs[r, 1]
        z0 = runs[r, 2]
        z1 = runs[r, 3]
        lx = x - lo[0]
        ly = y - lo[1]
        if axis == 2:
            # Along the run: z < c lower, z == c as ``sel`` says, z > c upper.
            cut = lo[2] + c
            if cut < z0:
                split = z0
            elif cut >= z1:
                split = z1
            else:
                split = cut + 1 if sel.size and sel[lx * n_v + ly] else cut
            if split > z0:
                lower[n_lo, 0] = x
                lower[n_lo, 1] = y
                lower[n_lo, 2] = z0
                lower[n_lo, 3] = split
                n_lo += 1
            if split < z1:
                upper[n_up, 0] = x
                upper[n_up, 1] = y
                upper[n_up, 2] = split
                upper[n_up, 3] = z1
                n_up += 1
            continue
        la = lx if axis == 0 else ly
        if la != c or sel.size == 0:
            if la < c:
                lower[n_lo, 0] = x
                lower[n_lo, 1] = y
                lower[n_lo, 2] = z0
                lower[n_lo, 3] = z1
                n_lo += 1
            else:
                upper[n_up, 0] = x
                upper[n_up, 1] = y
                upper[n_up, 2] = z0
                upper[n_up, 3] = z1
                n_up += 1
            continue
        p = ly if axis == 0 else lx
        base = p * n_v - lo[2]
        start = z0
        cur = sel[base + z0]
        for z in range(z0 + 1, z1 + 1):
            if z < z1 and sel[base + z] == cur:
                continue
            # A piece [start, z) of one half ends here.
            if cur:
                lower[n_lo, 0] = x
                lower[n_lo, 1] = y
                lower[n_lo, 2] = start
                lower[n_lo, 3] = z
                n_lo += 1
            else:
                upper[n_up, 0] = x
                upper[n_up, 1] = y
                upper[n_up, 2] = start
                upper[n_up, 3] = z
                n_up += 1
            if z < z1:
                start = z
                cur = sel[base + z]
    return lower[:n_lo].copy(), upper[:n_up].copy()


@njit(cache=True, nogil=True)
def _find(parent: np.ndarray, a: int) -> int:
    while parent[a] != a:
        parent[a] = parent[parent[a]]
        a = parent[a]
    return a


@njit(cache=True, nogil=True)
def _is_connected(runs: np.ndarray) -> bool:
    """Whether a run set is one 6-connected component (union-find over its runs).

    Two runs touch when their rows are neighbours (``y`` or ``x`` one apart, the other
    equal) and their ``z`` intervals overlap; runs of one row never touch (they are
    maximal). Rows are found through an index over the set's ``(x, y)`` bounding box.
    """
    n = runs.shape[0]
    if n <= 1:
        return True
    x0 = runs[0, 0]
    x1 = runs[0, 0]
    y0 = runs[0, 1]
    y1 = runs[0, 1]
    for r in range(n):
        x0 = min(x0, runs[r, 0])
        x1 = max(x1, runs[r, 0])
        y0 = min(y0, runs[r, 1])
        y1 = max(y1, runs[r, 1])
    n_y = y1 - y0 + 1
    row_start = np.full((x1 - x0 + 1) * n_y + 1, -1, dtype=np.int64)
    row_end = np.zeros((x1 - x0 + 1) * n_y + 1, dtype=np.int64)
    for r in range(n):
        row = (runs[r, 0] - x0) * n_y + runs[r, 1] - y0
        if row_start[row] < 0:
            row_start[row] = r
        row_end[row] = r + 1
    parent = np.arange(n)
    components = n
    for r in range(n):
        if r > 0 and runs[r - 1, 0] == runs[r, 0] and runs[r - 1, 1] == runs[r, 1]:
            continue  # this row was done from its first run
        lx = runs[r, 0] - x0
        ly = runs[r, 1] - y0
        row = lx * n_y + ly
        for other in range(2):
            if other == 0:
                if ly == 0:
                    continue
                nb = row - 1
            else:
                if lx == 0:
                    continue
                nb = row - n_y
            i = row_start[row]
            i_end = row_end[row]
            j = row_start[nb]
            if j < 0:
                continue
            j_end = row_end[nb]
            while i < i_end and j < j_end:
                if runs[i, 3] <= runs[j, 2]:
                    i += 1
                elif runs[j, 3] <= runs[i, 2]:
                    j += 1
                else:
                    ri = _find(parent, i)
                    rj = _find(parent, j)
                    if ri != rj:
                        parent[ri] = rj
                        components -= 1
                    if runs[i, 3] < runs[j, 3]:
                        i += 1
                    else:
                        j += 1
    return components == 1


@njit(cache=True, nogil=True)
def _slab_selection(
    runs: np.ndarray, lo: np.ndarray, ext: np.ndarray, axis: int, k: int, variant: int
) -> tuple[int, np.ndarray]:
    """Where the lower half (``k`` cells) of a cut across ``axis`` ends; see the module docstring.

    Returns ``(c, sel)``: the lower half is every cell below slab ``c`` (local coordinate on
    ``axis``) and the cells of slab ``c`` that ``sel`` marks (flat over the slab's ``(u, v)``
    raster; empty when the cut falls on a slab boundary). ``variant`` picks the boundary
    slab's ranking: bit 0 set, the upper half takes the prefix of its own ranking
    ``(d_up - d_lo, d_up)``; bit 1 set, raster ties are broken from the far end.
    """
    extent = ext[axis]
    per_slab = np.zeros(extent + 1, dtype=np.int64)
    for r in range(runs.shape[0]):
        z0 = runs[r, 2] - lo[2]
        z1 = runs[r, 3] - lo[2]
        if axis == 2:
            per_slab[z0] += 1
            per_slab[z1] -= 1
        else:
            per_slab[runs[r, axis] - lo[axis]] += z1 - z0
    if axis == 2:
        for t in range(1, extent):
            per_slab[t] += per_slab[t - 1]
    # c = the boundary slab: slabs below it go wholly to the lower half, k_c of its cells too.
    c = 0
    below = 0
    while below + per_slab[c] <= k:
        below += per_slab[c]
        c += 1
    k_c = k - below
    if k_c == 0:
        return c, np.zeros(0, dtype=np.bool_)

    u, v = _uv(axis)
    n_u = ext[u]
    n_v = ext[v]
    n_cells = n_u * n_v
    member = _raster_slab(runs, lo, ext, axis, c)
    below_slab = _raster_slab(runs, lo, ext, axis, c - 1)
    above_slab = _raster_slab(runs, lo, ext, axis, c + 1)
    lo_seed = member & below_slab
    up_seed = member & above_slab
    any_lo = lo_seed.any()
    any_up = up_seed.any()
    first = -1
    last = -1
    for s in range(n_cells):
        if member[s]:
            if first < 0:
                first = s
            last = s
    # A side with nothing on it (the cut is at the set's edge) grows its part from the slab
    # cells farthest from the other side, so what it leaves is what lies nearest that side.
    if any_lo and any_up:
        d_lo = _slab_distances(member, lo_seed, n_u, n_v)
        d_up = _slab_distances(member, up_seed, n_u, n_v)
    elif any_up:
        d_up = _slab_distances(member, up_seed, n_u, n_v)
        d_lo = _slab_distances(member, _farthest(member, d_up, first), n_u, n_v)
    elif any_lo:
        d_lo = _slab_distances(member, lo_seed, n_u, n_v)
        d_up = _slab_distances(member, _farthest(member, d_lo, last), n_u, n_v)
    else:  # the set does not continue on either side of this slab: grow from its corners
        lo_seed[first] = True
        up_seed[last] = True
        d_lo = _slab_distances(member, lo_seed, n_u, n_v)
        d_up = _slab_distances(member, up_seed, n_u, n_v)

    n_slab = per_slab[c]
    slab_cells = np.empty(n_slab, dtype=np.int64)
    rank_key = np.empty(n_slab, dtype=np.int64)
    span = n_cells + 2  # distances are <= n_cells + 1
    from_upper = (variant & 1) == 1
    reverse = (variant & 2) == 2
    t = 0
    for s0 in range(n_cells):
        s = n_cells - 1 - s0 if reverse else s0
        if member[s]:
            slab_cells[t] = s
            if from_upper:
                rank_key[t] = (d_up[s] - d_lo[s] + span) * span + d_up[s]
            else:
                rank_key[t] = (d_lo[s] - d_up[s] + span) * span + d_lo[s]
            t += 1
    # Stable sort: equal keys keep the (forward or reversed) raster order of the collection
    # loop above, the deterministic last tie-break.
    order = np.argsort(rank_key, kind="mergesort")
    sel = np.zeros(n_cells, dtype=np.bool_)
    if from_upper:
        for r in range(n_slab - k_c, n_slab):
            sel[slab_cells[order[r]]] = True
    else:
        for r in range(k_c):
            sel[slab_cells[order[r]]] = True
    return c, sel


@njit(cache=True, nogil=True)
def _box_split(
    runs: np.ndarray, lo: np.ndarray, ext: np.ndarray, axis: int, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Halves of a full box cut across ``axis``: the first ``k`` cells in the key
    (coordinate on ``axis``, flat id), i.e. whole slabs then a raster prefix of the next one.

    Every run is then a full row of the box, and the lower half of each is a prefix.
    """
    u, v = _uv(axis)
    slab = ext[u] * ext[v]
    c = k // slab
    k_c = k - c * slab
    n_runs = runs.shape[0]
    lower = np.empty((n_runs, 4), dtype=np.int32)
    upper = np.empty((n_runs, 4), dtype=np.int32)
    n_lo = 0
    n_up = 0
    for r in range(n_runs):
        lx = runs[r, 0] - lo[0]
        ly = runs[r, 1] - lo[1]
        z0 = runs[r, 2]
        z1 = runs[r, 3]
        # t = how many cells of this row, from its start, are in the lower half.
        if axis == 2:
            t = c + (1 if lx * ext[1] + ly < k_c else 0)
        else:
            la = lx if axis == 0 else ly
            p = ly if axis == 0 else lx
            if la < c:
                t = ext[2]
            elif la > c:
                t = 0
            else:
                t = min(max(k_c - p * ext[2], 0), ext[2])
        split = z0 + t
        if split > z0:
            lower[n_lo, 0] = runs[r, 0]
            lower[n_lo, 1] = runs[r, 1]
            lower[n_lo, 2] = z0
            lower[n_lo, 3] = split
            n_lo += 1
        if split < z1:
            upper[n_up, 0] = runs[r, 0]
            upper[n_up, 1] = runs[r, 1]
            upper[n_up, 2] = split
            upper[n_up, 3] = z1
            n_up += 1
    return lower[:n_lo].copy(), upper[:n_up].copy()


@njit(cache=True, nogil=True)
def _bisect(runs: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Split a run set into the ``k`` cells that go to the lower node half and the rest.

    Axes are tried longest first (ties to the lower axis), each with every slab ranking of
    :func:`_slab_selection`; the first cut with two connected halves wins, else the first
    cut tried. A full box is cut in raster order: no ranking, no check (both halves of such
    a cut are connected).
    """
    lo, ext, m = _bounds(runs)
    # Longest first; a stable sort keeps the lower axis first among equals.
    axes = np.argsort(-ext, kind="mergesort")
    if m == ext[0] * ext[1] * ext[2]:
        return _box_split(runs, lo, ext, axes[0], k)
    best_lower = np.empty((0, 4), dtype=np.int32)
    best_upper = np.empty((0, 4), dtype=np.int32)
    tried = False
    for a in axes:
        if ext[a] < 2:
            break
        for variant in range(_N_VARIANTS):
            c, sel = _slab_selection(runs, lo, ext, a, k, variant)
            lower, upper = _split_runs(runs, lo, ext, a, c, sel)
            if not tried:
                best_lower = lower
                best_upper = upper
                tried = True
            if _is_connected(lower) and _is_connected(upper):
                return lower, upper
    return best_lower, best_upper


@njit(cache=True, nogil=True)
def _fill(node_of: np.ndarray, runs: np.ndarray, node: int, s0: int, s1: int) -> None:
    """``node_of[cells of runs] = node``; ``s0``, ``s1``: strides of ``x`` and ``y``."""
    for r in range(runs.shape[0]):
        row = runs[r, 0] * s0 + runs[r, 1] * s1
        node_of[row + runs[r, 2] : row + runs[r, 3]] = node


def place_geometric(
    parts_shape: tuple[int, ...], cores: Sequence[int] | np.ndarray, *, seed: SeedLike
) -> np.ndarray:
    """Place partitions on nodes as contiguous regions by recursive coordinate bisection.

    Parameters
    ----------
    parts_shape
        Partitions per axis of the 2D or 3D grid; ``P = prod(parts_shape)``. Partition ids
        flatten the grid in C order.
    cores
        Cores of each node, shape ``(n,)``, integers ``>= 1``.
    seed
        Validated like every strategy's seed, then unused: RCB is deterministic.

    Returns
    -------
    numpy.ndarray
        int32, shape ``(P,)``: the node of each partition. Node ``i`` holds exactly
        ``quotas(P, cores)[i]`` partitions, and the lower node half of every bisection lies on
        the lower side of its cut.

    Raises
    ------
    InputError
        On an invalid grid, core counts or seed, or a grid of more than ``2**31 - 1``
        partitions.
    """
    shape, quota = check_static_inputs(parts_shape, cores)
    as_generator(seed)  # same contract as the random strategies; no randomness is drawn
    n_nodes = quota.size
    n_parts = int(quota.sum())
    if n_parts > _MAX_PARTS:
        # Runs hold int32 coordinates, and node_of is filled through int32-sized rows.
        raise InputError("parts_shape", f"got {n_parts} partitions", f"at most {_MAX_PARTS}")
    nx, ny, nz = (1,) * (3 - len(shape)) + shape
    # first[k] = partitions owed to nodes [0, k): a node range's total quota in O(1).
    first = np.zeros(n_nodes + 1, dtype=np.int64)
    np.cumsum(quota, out=first[1:])
    node_of = np.empty(n_parts, dtype=np.int32)

    # The whole grid as runs along its last axis: one (x, y, z0, z1) per row.
    runs = np.empty((nx * ny, 4), dtype=np.int32)
    runs[:, 0] = np.repeat(np.arange(nx, dtype=np.int32), ny)
    runs[:, 1] = np.tile(np.arange(ny, dtype=np.int32), nx)
    runs[:, 2] = 0
    runs[:, 3] = nz
    # Explicit stack of (runs, cells, first node, one past the last node): 2n - 1 entries.
    stack: list[tuple[np.ndarray, int, int, int]] = [(runs, n_parts, 0, n_nodes)]
    while stack:
        runs, m, lo, hi = stack.pop()
        if hi - lo == 1:
            _fill(node_of, runs, lo, ny * nz, nz)
            continue
        mid = lo + (hi - lo) // 2
        n_lower = int(first[mid] - first[lo])
        # A side whose nodes are all owed nothing (more nodes than partitions) takes no cut.
        if n_lower == 0:
            stack.append((runs, m, mid, hi))
        elif n_lower == m:
            stack.append((runs, m, lo, mid))
        else:
            lower, upper = _bisect(runs, n_lower)
            stack.append((upper, m - n_lower, mid, hi))
            stack.append((lower, n_lower, lo, mid))
    return node_of
