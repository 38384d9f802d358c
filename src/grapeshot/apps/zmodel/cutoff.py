"""The cutoff Birkhoff-Rott solver's spatial side (pure): micro-partitions, ghosts, sums.

Space is cut in x/y into an ``sx x sy`` grid of *micro-partitions* (columns in z) over the
box [-B, B]^2; points outside the box belong to the edge columns (their regions extend to
infinity outward). Each micro-partition lives on one rank (``rank_of_part``), chosen by a
placement strategy. For one derivative evaluation a rank owns the surface points in its
micro-partitions and receives as ghosts every periodic image (free: only the point itself)
within ``cutoff`` (in x/y) of one of its micro-partitions. Sums run over sources in a
canonical order (global node id, image) on a cell grid anchored at the origin, so the result
is bit-for-bit the same whatever the placement and the number of ranks.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from grapeshot.apps.zmodel.kernels import br_cutoff, build_cells, image_offsets
from grapeshot.apps.zmodel.params import ZModelParams
from grapeshot.model.errors import InputError


def part_of(xy: np.ndarray, box: float, parts: tuple[int, int]) -> np.ndarray:
    """Flat micro-partition of points ``xy`` (n, >=2); C order over ``parts`` = (sx, sy)."""
    sx, sy = parts
    width = 2.0 * box
    ix = np.clip(np.floor((xy[:, 0] + box) * (sx / width)), 0, sx - 1).astype(np.int64)
    iy = np.clip(np.floor((xy[:, 1] + box) * (sy / width)), 0, sy - 1).astype(np.int64)
    return ix * sy + iy


@njit(cache=True)
def _ghost_pairs(points, offsets, box, sx, sy, cutoff, rank_of_part, nranks, home, bounds):
    """(point, image, destination rank) of every ghost copy (numba)."""  # pragma: no cover
    width = 2.0 * box
    n = points.shape[0]
    mark = np.full(nranks, -1, np.int64)
    out_p = []
    out_o = []
    out_r = []
    stamp = 0
    for o in range(offsets.shape[0]):
        zero = offsets[o, 0] == 0.0 and offsets[o, 1] == 0.0
        for p in range(n):
            stamp += 1
            qx = points[p, 0] + offsets[o, 0]
            qy = points[p, 1] + offsets[o, 1]
            ax = math.floor((qx - cutoff + box) * (sx / width))
            bx = math.floor((qx + cutoff + box) * (sx / width))
            ay = math.floor((qy - cutoff + box) * (sy / width))
            by = math.floor((qy + cutoff + box) * (sy / width))
            ax = min(max(ax, 0), sx - 1)
            bx = min(max(bx, 0), sx - 1)
            ay = min(max(ay, 0), sy - 1)
            by = min(max(by, 0), sy - 1)
            for i in range(ax, bx + 1):
                for j in range(ay, by + 1):
                    k = i * sy + j
                    # x/y distance to the bounding box of the part's points (empty: +inf box)
                    ex = max(bounds[k, 0] - qx, qx - bounds[k, 1], 0.0)
                    ey = max(bounds[k, 2] - qy, qy - bounds[k, 3], 0.0)
                    if ex * ex + ey * ey > cutoff * cutoff:
                        continue
                    r = rank_of_part[k]
                    if mark[r] == stamp:
                        continue
                    mark[r] = stamp
                    if zero and r == home[p]:
                        continue  # the point itself, already owned there
                    out_p.append(p)
                    out_o.append(o)
                    out_r.append(r)
    return np.array(out_p, np.int64), np.array(out_o, np.int64), np.array(out_r, np.int64)


def part_bounds(points: np.ndarray, part: np.ndarray, nparts: int) -> np.ndarray:
    """x/y bounding box (nparts, 4: xmin, xmax, ymin, ymax) of the points of each part;
    an empty part gets an inverted infinite box (nothing is near it)."""
    b = np.empty((nparts, 4))
    b[:, 0] = b[:, 2] = np.inf
    b[:, 1] = b[:, 3] = -np.inf
    np.minimum.at(b[:, 0], part, points[:, 0])
    np.maximum.at(b[:, 1], part, points[:, 0])
    np.minimum.at(b[:, 2], part, points[:, 1])
    np.maximum.at(b[:, 3], part, points[:, 1])
    return b


def ghost_pairs(
    points: np.ndarray,
    offsets: np.ndarray,
    box: float,
    parts: tuple[int, int],
    cutoff: float,
    rank_of_part: np.ndarray,
    home: np.ndarray,
    bounds: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ghost copies to make: arrays (point index, image index, destination rank).

    ``home`` is each point's owning rank in space; ``bounds`` the x/y bounding boxes of every
    part's points (:func:`part_bounds`, over all ranks). A point's zero image is not copied to
    its own rank; every other (image, rank) pair within ``cutoff`` in x/y of the points of one
    of the rank's parts is, once per rank. (A superset of the pairs the 3-D sum needs.)
    """
    nranks = int(rank_of_part.max()) + 1 if rank_of_part.size else 1
    if points.shape[0] == 0:
        e = np.zeros(0, np.int64)
        return e, e, e
    return _ghost_pairs(
        np.ascontiguousarray(points),
        offsets,
        float(box),
        parts[0],
        parts[1],
        float(cutoff),
        rank_of_part.astype(np.int64),
        nranks,
        home.astype(np.int64),
        np.ascontiguousarray(bounds),
    )


#: Cells per cutoff radius of the neighbour grid: finer cells test fewer far candidates.
CELLS_PER_CUTOFF = 2


def cutoff_sum(
    targets: np.ndarray,
    sources: np.ndarray,
    strengths: np.ndarray,
    keys: np.ndarray,
    cutoff: float,
    eps: float,
) -> np.ndarray:
    """Velocity (nt, 3) at ``targets`` from the ``sources`` within ``cutoff``.

    Sources are first put in the canonical order of ``keys`` and binned on a grid of cells of
    size ``cutoff / CELLS_PER_CUTOFF`` anchored at the origin, so the floating-point sum does
    not depend on which rank holds what.
    """
    out = np.zeros((targets.shape[0], 3))
    if targets.shape[0] == 0 or sources.shape[0] == 0:
        return out
    order = np.argsort(keys, kind="stable")
    src = np.ascontiguousarray(sources[order])
    stren = np.ascontiguousarray(strengths[order])
    both = np.concatenate((src, targets))
    # a hair over cutoff / k, so that k cells always span the cutoff despite rounding
    cell = float(cutoff) / CELLS_PER_CUTOFF * (1.0 + 1e-12)
    span = np.ptp(both, axis=0) / cell if np.all(np.isfinite(both)) else np.full(3, np.inf)
    if np.prod(span + 1.0) > 5e7:
        extent = (both.max(axis=0) - both.min(axis=0)).tolist()
        raise InputError(
            "surface",
            f"spans {extent} (cutoff {cutoff}: {np.prod(span + 1.0):.3g} neighbour cells): the run "
            "has gone unstable, or the cutoff is tiny",
            "fewer --steps, more --mu, or a coarser --mesh (Beatnik's fixed dt is not "
            "stable on every mesh)",
        )
    # integer cell indices floor(x / cell) on a lattice anchored at the origin: exactly the
    # same cell for a point whatever else the rank holds (x - lo would round differently)
    lo = np.floor(both.min(axis=0) / cell).astype(np.int64)
    dims = (np.floor(both.max(axis=0) / cell).astype(np.int64) - lo + 1).astype(np.int64)
    start, perm = build_cells(src, lo, cell, dims)
    br_cutoff(
        np.ascontiguousarray(targets),
        src,
        stren,
        float(cutoff),
        eps,
        lo,
        cell,
        CELLS_PER_CUTOFF,
        dims,
        start,
        perm,
        out,
    )
    return out


def serial_cutoff_velocity(
    params: ZModelParams, points: np.ndarray, strengths: np.ndarray
) -> np.ndarray:
    """The cutoff solver on one process: points (n, 3) in global node order -> u (n, 3)."""
    offsets = image_offsets(params.periodic, params.length)
    n = points.shape[0]
    gid = np.arange(n, dtype=np.int64)
    home = np.zeros(n, np.int64)
    bounds = part_bounds(points, np.zeros(n, np.int64), 1)
    gp, go, _ = ghost_pairs(
        points, offsets, params.box, (1, 1), params.cutoff, np.zeros(1, np.int32), home, bounds
    )
    zero = int(np.flatnonzero(~offsets.any(axis=1))[0])
    src = np.concatenate((points, points[gp] + offsets[go]))
    stren = np.concatenate((strengths, strengths[gp]))
    keys = np.concatenate((gid * len(offsets) + zero, gid[gp] * len(offsets) + go))
    return cutoff_sum(points, src, stren, keys, params.cutoff, params.eps_eff)


# ------------------------------------------------------------------------------ placement
def beatnik_layout(parts: tuple[int, int], dims: tuple[int, int]) -> np.ndarray:
    """Beatnik's spatial layout: the parts grid cut in px x py blocks, block (a, b) on rank
    ``a * py + b`` (the 2-D surface decomposition's ranks)."""
    sx, sy = parts
    px, py = dims
    a = np.arange(sx) * px // sx
    b = np.arange(sy) * py // sy
    return (a[:, None] * py + b[None, :]).ravel().astype(np.int32)


SPATIAL_STRATEGIES = ("beatnik", "geometric", "cyclic", "sfc", "birdshot", "greedy")


def place_parts(
    strategy: str,
    parts: tuple[int, int],
    dims: tuple[int, int],
    *,
    seed: int = 0,
    loads: np.ndarray | None = None,
) -> np.ndarray:
    """Rank of each micro-partition, int32 (sx*sy,).

    ``beatnik``: :func:`beatnik_layout`; ``geometric``, ``cyclic``, ``sfc``, ``birdshot``:
    grapeshot's static strategies (``grapeshot.place.static``) with one core per rank;
    ``greedy``: ``grapeshot.place.greedy.greedy_rebalance`` of ``loads`` (points per part;
    the driver passes each evaluation's exact counts, since every point migrates to space
    anyway; without loads it is the beatnik layout).
    """
    ranks = dims[0] * dims[1]
    if strategy == "beatnik":
        return beatnik_layout(parts, dims)
    if strategy == "greedy":
        if loads is None:
            return beatnik_layout(parts, dims)
        from grapeshot.place.greedy import greedy_rebalance

        return greedy_rebalance(np.asarray(loads, np.float64), np.ones(ranks)).astype(np.int32)
    from grapeshot.place.static import STATIC_STRATEGIES

    if strategy not in STATIC_STRATEGIES:
        valid = ", ".join(("beatnik", *STATIC_STRATEGIES, "greedy"))
        raise InputError("--spatial-strategy", f"unknown strategy {strategy!r}", f"one of {valid}")
    return np.asarray(
        STATIC_STRATEGIES[strategy](parts, np.ones(ranks, np.int64), seed=seed), dtype=np.int32
    )
