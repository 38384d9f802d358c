"""The cell-by-cell recursive coordinate bisection: a slow reference for ``place.geometric``.

This is ``grapeshot.place.geometric`` as it was before it worked on runs of cells (it kept
every set as the list of its cell ids, a bounding-box array and a flood fill per check). The
decisions are the ones described in that module's docstring; the fast version must give the
same placement, bit for bit (``test_geometric.py``).
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
def _cell(box: np.ndarray, axis: int, a: int, p: int, q: int) -> int:
    """``box`` at coordinate ``a`` on ``axis`` and ``(p, q)`` on the other two axes in order."""
    if axis == 0:
        return box[a, p, q]
    if axis == 1:
        return box[p, a, q]
    return box[p, q, a]


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


@njit(cache=True)
def _is_connected(label: np.ndarray, start: int, size: int, p1: int, p0: int) -> bool:
    """Whether the ``size`` cells labelled like cell ``start`` form one 6-connected component.

    ``label`` is the flattened bounding box padded by one empty cell on every side (so a
    neighbour is always in range: no bounds checks), with strides ``p0``, ``p1``, ``1``;
    ``0`` marks cells outside the set. Visited cells are relabelled ``label + 2``, which
    leaves the other half's label intact for its own check.
    """
    which = label[start]
    mark = which + 2
    stack = np.empty(size, dtype=np.int64)
    stack[0] = start
    label[start] = mark
    top = 1
    reached = 1
    while top > 0:
        top -= 1
        f = stack[top]
        for step in (-1, 1, -p1, p1, -p0, p0):
            g = f + step
            if label[g] == which:
                label[g] = mark
                stack[top] = g
                top += 1
                reached += 1
    return reached == size


@njit(cache=True)
def _split_along(local: np.ndarray, box: np.ndarray, axis: int, k: int, variant: int) -> np.ndarray:
    """Lower half (``k`` cells) of a cut across ``axis``; see the module docstring.

    ``local`` is ``(3, m)`` int32 bounding-box coordinates, ``box`` the bounding box holding
    each cell's column in ``local`` (``-1`` outside the set). ``variant`` picks the boundary
    slab's ranking: bit 0 set, the upper half takes the prefix of its own ranking
    ``(d_up - d_lo, d_up)``; bit 1 set, raster ties are broken from the far end. Returns a
    ``(m,)`` bool mask.
    """
    m = local.shape[1]
    extent = box.shape[axis]
    per_slab = np.zeros(extent, dtype=np.int64)
    for j in range(m):
        per_slab[local[axis, j]] += 1
    # c = the boundary slab: slabs below it go wholly to the lower half, k_c of its cells too.
    c = 0
    below = 0
    while below + per_slab[c] <= k:
        below += per_slab[c]
        c += 1
    k_c = k - below
    lower = np.zeros(m, dtype=np.bool_)
    for j in range(m):
        lower[j] = local[axis, j] < c
    if k_c == 0:
        return lower

    u = 1 if axis == 0 else 0
    v = 1 if axis == 2 else 2
    n_u = box.shape[u]
    n_v = box.shape[v]
    n_cells = n_u * n_v
    member = np.zeros(n_cells, dtype=np.bool_)
    lo_seed = np.zeros(n_cells, dtype=np.bool_)
    up_seed = np.zeros(n_cells, dtype=np.bool_)
    column = np.full(n_cells, -1, dtype=np.int64)
    any_lo = False
    any_up = False
    first = -1
    last = -1
    for p in range(n_u):
        for q in range(n_v):
            s = p * n_v + q
            j = _cell(box, axis, c, p, q)
            if j < 0:
                continue
            member[s] = True
            column[s] = j
            if first < 0:
                first = s
            last = s
            if c > 0 and _cell(box, axis, c - 1, p, q) >= 0:
                lo_seed[s] = True
                any_lo = True
            if c + 1 < extent and _cell(box, axis, c + 1, p, q) >= 0:
                up_seed[s] = True
                any_up = True
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
    if from_upper:
        for r in range(n_slab - k_c, n_slab):
            lower[column[slab_cells[order[r]]]] = True
    else:
        for r in range(k_c):
            lower[column[slab_cells[order[r]]]] = True
    return lower


@njit(cache=True)
def _bisect(ids: np.ndarray, coords: np.ndarray, k: int) -> np.ndarray:
    """Choose the ``k`` partitions of ``ids`` that go to the lower node half.

    ``coords`` is ``(3, P)``: every partition's grid coordinates, padded to three axes (a 2D
    grid has a leading axis of extent 1). Axes are tried longest first (ties to the lower
    axis), each with every slab ranking of :func:`_split_along`; the first cut with two
    connected halves wins. Returns a ``(len(ids),)`` bool mask.
    """
    m = ids.size
    lo = np.empty(3, dtype=np.int64)
    extent = np.empty(3, dtype=np.int64)
    for a in range(3):
        low = coords[a, ids[0]]
        high = low
        for j in range(m):
            x = coords[a, ids[j]]
            low = min(low, x)
            high = max(high, x)
        lo[a] = low
        extent[a] = high - low + 1
    # Longest first; a stable sort keeps the lower axis first among equals.
    axes = np.argsort(-extent, kind="mergesort")

    if m == extent[0] * extent[1] * extent[2]:
        # A full box: its boundary slab is a full rectangle whose cells all touch both sides
        # (or, at the box's edge, all touch the one side there is), so the slab ranking is
        # plain raster order, i.e. the key (coordinate on the axis, flat id), and both halves
        # are connected: no box array, no search, no check. This path does most of the work
        # at the top levels, so it reads the coordinates in place instead of copying them.
        a = axes[0]
        u = 1 if a == 0 else 0
        v = 1 if a == 2 else 2
        slab = extent[u] * extent[v]
        c = k // slab
        k_c = k - c * slab
        lower = np.empty(m, dtype=np.bool_)
        for j in range(m):
            f = ids[j]
            x = coords[a, f] - lo[a]
            rank = (coords[u, f] - lo[u]) * extent[v] + (coords[v, f] - lo[v])
            lower[j] = x < c or (x == c and rank < k_c)
        return lower

    local = np.empty((3, m), dtype=np.int32)
    for a in range(3):
        for j in range(m):
            local[a, j] = coords[a, ids[j]] - lo[a]
    box = np.full((extent[0], extent[1], extent[2]), -1, dtype=np.int32)
    for j in range(m):
        box[local[0, j], local[1, j], local[2, j]] = j
    # Flat positions of the cells in the padded bounding box that the flood fill walks.
    p1 = extent[2] + 2
    p0 = (extent[1] + 2) * p1
    padded = np.empty(m, dtype=np.int64)
    for j in range(m):
        padded[j] = (local[0, j] + 1) * p0 + (local[1, j] + 1) * p1 + local[2, j] + 1
    label = np.zeros((extent[0] + 2) * p0, dtype=np.int8)
    best = np.empty(0, dtype=np.bool_)
    for a in axes:
        if extent[a] < 2:
            break
        for variant in range(_N_VARIANTS):
            lower = _split_along(local, box, a, k, variant)
            if best.size == 0:
                best = lower
            first_lower = -1
            first_upper = -1
            for j in range(m):
                label[padded[j]] = 1 if lower[j] else 2
                if lower[j] and first_lower < 0:
                    first_lower = j
                if not lower[j] and first_upper < 0:
                    first_upper = j
            if _is_connected(label, padded[first_lower], k, p1, p0) and _is_connected(
                label, padded[first_upper], m - k, p1, p0
            ):
                return lower
    return best


def place_geometric_cells(
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
        # The kernels index a set's cells with int32 (half the memory traffic of int64).
        raise InputError("parts_shape", f"got {n_parts} partitions", f"at most {_MAX_PARTS}")
    shape3 = (1,) * (3 - len(shape)) + shape
    coords = np.indices(shape3, dtype=np.int32).reshape(3, n_parts)
    # first[k] = partitions owed to nodes [0, k): a node range's total quota in O(1).
    first = np.zeros(n_nodes + 1, dtype=np.int64)
    np.cumsum(quota, out=first[1:])
    node_of = np.empty(n_parts, dtype=np.int32)

    # Explicit stack of (partition ids, first node, one past the last node): 2n - 1 entries.
    stack: list[tuple[np.ndarray, int, int]] = [(np.arange(n_parts, dtype=np.int64), 0, n_nodes)]
    while stack:
        ids, lo, hi = stack.pop()
        if hi - lo == 1:
            node_of[ids] = lo
            continue
        mid = lo + (hi - lo) // 2
        n_lower = int(first[mid] - first[lo])
        # A side whose nodes are all owed nothing (more nodes than partitions) takes no cut.
        if n_lower == 0:
            stack.append((ids, mid, hi))
        elif n_lower == ids.size:
            stack.append((ids, lo, mid))
        else:
            lower = _bisect(ids, coords, n_lower)
            stack.append((ids[~lower], mid, hi))
            stack.append((ids[lower], lo, mid))
    return node_of
