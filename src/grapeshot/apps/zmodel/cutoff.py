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

from grapeshot.apps.zmodel.kernels import br_cutoff_cells, build_cells, image_offsets
from grapeshot.apps.zmodel.params import ZModelParams
from grapeshot.model.errors import InputError, check_int

#: Bytes of one point record moved between ranks (position, strength, key): what migrating a
#: micro-partition's points costs, and its ghost traffic in a trace.
RECORD_BYTES = 56


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
    start, perm = build_cells(src, lo, cell, dims)  # stable: (cell, key) order
    tperm = build_cells(targets, lo, cell, dims)[1]
    # sources per x/y column of cells (its z cells are contiguous): the kernel's scratch
    longest = int(np.add.reduceat(np.diff(start), np.arange(0, start.size - 1, dims[2])).max())
    br_cutoff_cells(
        np.ascontiguousarray(targets),
        tperm,
        np.ascontiguousarray(src[perm].T),
        np.ascontiguousarray(stren[perm].T),
        float(cutoff),
        eps,
        lo,
        cell,
        dims,
        start,
        max(longest, 1),
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


#: grapeshot dynamic strategies (``grapeshot.place.dynamic``) that may place the
#: micro-partitions, re-deciding every ``interval`` evaluations (:class:`DynamicPlacement`).
DYNAMIC_SPATIAL = ("reactive", "treematch-lb")
SPATIAL_STRATEGIES = (
    "beatnik",
    "geometric",
    "cyclic",
    "sfc",
    "birdshot",
    "greedy",
    *DYNAMIC_SPATIAL,
)


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
    from grapeshot.place.static import STATIC_STRATEGIES, get_static_strategy, is_static

    if strategy in DYNAMIC_SPATIAL:  # the first placement: the strategy's initial one
        return DynamicPlacement(strategy, parts, dims, seed=seed).node_of
    if not is_static(strategy):
        valid = ", ".join(("beatnik", *STATIC_STRATEGIES, "greedy", *DYNAMIC_SPATIAL))
        raise InputError("--spatial-strategy", f"unknown strategy {strategy!r}", f"one of {valid}")
    fn = get_static_strategy(strategy, "--spatial-strategy")  # with its options, if any
    return np.asarray(fn(parts, np.ones(ranks, np.int64), seed=seed), dtype=np.int32)


def parts_graph(parts: tuple[int, int], bytes_per_pair: float = 1.0):
    """Halo graph of the micro-partition grid: the 8 x/y neighbours of each part (a ghost
    ring touches them), symmetric ``scipy.sparse.csr_array`` (P, P) of ``bytes_per_pair``."""
    from scipy import sparse

    sx, sy = parts
    i, j = np.meshgrid(np.arange(sx), np.arange(sy), indexing="ij")
    rows, cols = [], []
    for di in (-1, 0, 1):
        for dj in (-1, 0, 1):
            if di == 0 and dj == 0:
                continue
            ok = (i + di >= 0) & (i + di < sx) & (j + dj >= 0) & (j + dj < sy)
            rows.append((i * sy + j)[ok])
            cols.append(((i + di) * sy + (j + dj))[ok])
    r, c = np.concatenate(rows), np.concatenate(cols)
    data = np.full(r.size, float(bytes_per_pair))
    return sparse.csr_array((data, (r, c)), shape=(sx * sy, sx * sy))


class DynamicPlacement:
    """A grapeshot dynamic strategy placing the cutoff solver's micro-partitions.

    Each evaluation of the Birkhoff-Rott velocity reports the points per micro-partition
    (exact: every rank holds the same all-reduced counts); every ``interval`` evaluations
    the strategy's ``rebalance`` sees the counts since its last call as the loads and may
    return a new placement. Every rank runs the same deterministic call on the same inputs,
    so all ranks agree without communicating; the sums do not depend on the placement.

    Parameters
    ----------
    name
        A key of :data:`DYNAMIC_SPATIAL`.
    parts, dims
        Micro-partitions per axis and the rank grid (px, py).
    seed
        Seed of the strategy's random choices, where it has any.
    interval
        Evaluations between calls (None: the strategy's default, in evaluations).
    options
        Other keyword overrides of the strategy (e.g. reactive's ``threshold``).
    """

    def __init__(
        self,
        name: str,
        parts: tuple[int, int],
        dims: tuple[int, int],
        *,
        seed: int = 0,
        interval: int | None = None,
        options: dict | None = None,
    ) -> None:
        from grapeshot.place.dynamic import factory_keywords, make_dynamic_strategy

        if name not in DYNAMIC_SPATIAL:
            raise InputError(
                "--spatial-strategy",
                f"{name!r} is not a dynamic spatial strategy",
                f"one of {', '.join(DYNAMIC_SPATIAL)}",
            )
        if interval is not None:
            check_int(interval, "--spatial-interval")
        extra = {"seed": seed} if "seed" in factory_keywords(name) else {}
        extra.update(options or {})
        self.strategy = make_dynamic_strategy(name, interval=interval, **extra)
        self.parts = parts
        self.ranks = dims[0] * dims[1]
        self.node_of = place_parts(self.strategy.initial, parts, dims, seed=seed)
        self.history: list[np.ndarray] = []
        self.evaluations = 0
        self.calls = 0
        self.moves = 0
        self._comm = parts_graph(parts)
        self._machine = None

    def _machine_of(self):
        """One core per rank on the lassen preset's network (what topology-aware strategies
        such as TreeMatchLB need; the placement does not change the results)."""
        if self._machine is None:
            from grapeshot.model.machine import Machine, NodeTree
            from grapeshot.model.presets import preset

            self._machine = Machine(
                name="zmodel-ranks",
                nodes=self.ranks,
                node=NodeTree((("core", 1),)),
                network=preset("lassen").network,
            )
        return self._machine

    def update(self, points_per_part: np.ndarray) -> np.ndarray:
        """Record one evaluation's points per part (sx*sy,); the placement to use for it,
        int32 (sx*sy,)."""
        load = np.asarray(points_per_part, dtype=np.float64)
        self.history.append(load)
        self.evaluations += 1
        if self.evaluations % self.strategy.interval:
            return self.node_of
        new = self.strategy.rebalance(
            step=self.evaluations,
            loads=np.stack(self.history),
            node_of=self.node_of.astype(np.int64),
            cores=np.ones(self.ranks, np.int64),
            state_bytes=(load * RECORD_BYTES).astype(np.int64),
            comm=self._comm,
            machine=self._machine_of(),
        )
        self.history.clear()
        self.calls += 1
        if new is not None:
            new = np.asarray(new, dtype=np.int32)
            self.moves += int((new != self.node_of).sum())
            self.node_of = new
        return self.node_of
