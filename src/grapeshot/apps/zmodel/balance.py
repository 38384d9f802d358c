"""Load balance of the cutoff solver's spatial micro-partitions, on simulated ranks (pure).

A rank's load in the cutoff solver is the surface points it owns in space (its neighbour
sums cost in proportion). The run's results are bit-for-bit the same whatever the placement
(``tests/apps/zmodel/test_mpi_zmodel.py``), so a placement's per-rank load at a step is the
run's points per micro-partition summed by the placement's owner map: one one-process run,
counted per micro-partition, gives every placement on every rank count ("simulated ranks").

The spread of a load is ``max |load - mean| / mean`` over ranks. For birdshot (a uniformly
random placement with exact per-rank quotas, ``grapeshot.place.birdshot``) the spread is a
random variable whose size :func:`expected_random_spread` predicts from the part counts
alone: it sets how fine the micro-partitions must be, and how many points a rank must hold,
for a random placement to come within a target.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from grapeshot.apps.zmodel.cutoff import ghost_pairs, part_bounds, part_of, place_parts


def spread(load: np.ndarray) -> float:
    """Largest deviation of a rank's load from the mean, relative to the mean.

    Parameters
    ----------
    load
        Points (or any work) per rank, shape (R,); the mean must be > 0.
    """
    load = np.asarray(load, dtype=np.float64)
    return float(np.abs(load - load.mean()).max() / load.mean())


def rank_load(counts: np.ndarray, node_of: np.ndarray, ranks: int) -> np.ndarray:
    """Points per rank, float64 (ranks,), of ``counts`` (P,) placed by ``node_of`` (P,)."""
    return np.bincount(node_of, weights=np.asarray(counts, np.float64), minlength=ranks)


def expected_max_abs_normal(n: int) -> float:
    """E[max of ``n`` independent |Z|], Z standard normal: the integral of
    1 - erf(x / sqrt 2)^n over x >= 0 (trapezoid rule on [0, 12], error < 1e-6)."""
    from scipy.special import erf

    x = np.linspace(0.0, 12.0, 24001)
    f = 1.0 - erf(x / math.sqrt(2.0)) ** n
    return float(np.sum((f[1:] + f[:-1]) * 0.5 * np.diff(x)))


def expected_random_spread(counts: np.ndarray, ranks: int) -> dict[str, float]:
    """The late spread a random placement with quotas is expected to reach.

    Each rank receives K = P / R of the P parts, drawn without replacement, so its load has
    mean K c̄ and variance K s² (P - K) / (P - 1), with c̄ and s² the mean and population
    variance of the part counts. The relative standard deviation is
    ``sd = sqrt(K s² (P - K) / (P - 1)) / (K c̄)``; the spread (the largest |deviation| over
    R ranks) is about ``E[max of R |Z|] * sd`` (:func:`expected_max_abs_normal`: 2.6 for 64
    ranks, 3.0 for 256). This normal approximation ignores the ranks' weak negative
    correlation (their loads sum to N) and the heavy tail of a few dense parts, which the
    measured spreads show to add ~0-25 %.

    Parameters
    ----------
    counts
        Points per micro-partition, shape (P,).
    ranks
        R.

    Returns
    -------
    dict
        ``sd`` (relative standard deviation of a rank's load), ``expected_spread``
        (E[max |Z|] * sd) and ``parts_per_rank`` (K = P / R).
    """
    c = np.asarray(counts, dtype=np.float64)
    p = c.size
    k = p / ranks
    fpc = (p - k) / (p - 1) if p > 1 else 0.0
    sd = math.sqrt(k * float(c.var()) * fpc) / (k * float(c.mean()))
    return {
        "sd": sd,
        "expected_spread": expected_max_abs_normal(ranks) * sd,
        "parts_per_rank": k,
    }


def placement_spreads(
    counts: np.ndarray, parts: tuple[int, int], dims: tuple[int, int], seeds: range
) -> dict[str, Any]:
    """Spread of Beatnik's layout, greedy and birdshot (one per seed) for ``counts``.

    Greedy is GreedyLB on these very counts (the driver's ``--spatial-strategy greedy``
    re-places at each evaluation from its exact counts).
    """
    ranks = dims[0] * dims[1]
    bird = [
        spread(rank_load(counts, place_parts("birdshot", parts, dims, seed=s), ranks))
        for s in seeds
    ]
    return {
        "beatnik": spread(rank_load(counts, place_parts("beatnik", parts, dims), ranks)),
        "greedy": spread(
            rank_load(counts, place_parts("greedy", parts, dims, loads=counts), ranks)
        ),
        "birdshot": {
            "mean": float(np.mean(bird)),
            "max": float(np.max(bird)),
            "min": float(np.min(bird)),
            "seeds": bird,
        },
    }


def study_grids(mesh: int, side: int) -> list[tuple[int, int]]:
    """Micro-partition grids for a granularity study on ``side x side`` ranks.

    Every grid cuts each rank's block into ``a x a`` parts whose width is a whole number of
    the initial node spacings (``side * a`` divides ``mesh``), so that the flat part of the
    surface puts exactly the same number of points in every part; finest, parts of half a
    spacing, where the points themselves become the grain (parts hold 0 or 1 point).
    """
    out = [(side * a, side * a) for a in range(1, mesh // side + 1) if mesh % (side * a) == 0]
    if (2 * mesh) % side == 0:
        out.append((2 * mesh, 2 * mesh))
    return out


def granularity_study(
    points: np.ndarray,
    box: float,
    dims: tuple[int, int],
    grids: list[tuple[int, int]],
    seeds: range,
    *,
    cutoff: float,
    offsets: np.ndarray,
) -> list[dict[str, Any]]:
    """Late spread of each placement, its prediction and the ghost volume, per grid.

    Parameters
    ----------
    points
        Surface points (n, 3) at the late step.
    box
        Half-width of the spatial box.
    dims
        Rank grid (px, py).
    grids
        Micro-partition grids (sx, sy) (:func:`study_grids`).
    seeds
        Birdshot seeds (its spread is a distribution over seeds).
    cutoff, offsets
        The cutoff radius and the periodic image offsets (for the ghost copies).

    Returns
    -------
    list of dict
        Per grid: ``parts``, ``parts_per_rank``; ``spread`` (:func:`placement_spreads`);
        ``theory`` (:func:`expected_random_spread`); ``ghosts_per_point`` for beatnik,
        greedy and birdshot's first seed (ghost copies sent per surface point: finer,
        scattered parts are halo cost).
    """
    ranks = dims[0] * dims[1]
    out = []
    for parts in grids:
        nparts = parts[0] * parts[1]
        part = part_of(points, box, parts)
        counts = np.bincount(part, minlength=nparts).astype(np.float64)
        bounds = part_bounds(points, part, nparts)
        ghosts = {}
        for name in ("beatnik", "greedy", "birdshot"):
            lay = place_parts(name, parts, dims, seed=seeds[0], loads=counts)
            gp, _, _ = ghost_pairs(points, offsets, box, parts, cutoff, lay, lay[part], bounds)
            ghosts[name] = gp.size / points.shape[0]
        out.append(
            {
                "parts": list(parts),
                "parts_per_rank": nparts // ranks,
                "spread": placement_spreads(counts, parts, dims, seeds),
                "theory": expected_random_spread(counts, ranks),
                "ghosts_per_point": ghosts,
            }
        )
    return out


def rank_scan(
    points: np.ndarray, box: float, mesh: int, sides: tuple[int, ...], seeds: range
) -> list[dict[str, Any]]:
    """Late spread against the rank count (``side x side`` ranks), at one initial node
    spacing per micro-partition (``mesh x mesh`` parts: the flat surface puts one point in
    each).

    Beatnik's layout is the spatial blocks of the rank grid themselves (any parts grid
    aligned with them gives the same loads). Returns per rank count: ``ranks``,
    ``points_per_rank``, ``block_width`` (length units), ``spread`` and ``theory`` as in
    :func:`granularity_study`.
    """
    parts = (mesh, mesh)
    counts = np.bincount(part_of(points, box, parts), minlength=mesh * mesh).astype(np.float64)
    out = []
    for side in sides:
        dims = (side, side)
        ranks = side * side
        sp = placement_spreads(counts, parts, dims, seeds)
        sp["beatnik"] = spread(np.bincount(part_of(points, box, dims), minlength=ranks))
        out.append(
            {
                "ranks": ranks,
                "points_per_rank": points.shape[0] / ranks,
                "block_width": 2.0 * box / side,
                "spread": sp,
                "theory": expected_random_spread(counts, ranks),
            }
        )
    return out
