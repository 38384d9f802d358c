"""The CM-5 paper's test sets (Wang, Lin & Ranka 1993, section 5) as :class:`Pattern` s.

Set 1 (:func:`regular`)
    Every rank sends ``d`` messages and receives ``d`` (a union of ``d`` random permutations
    with no fixed point and no repeated pair), each ``unit`` bytes. The paper's generator ([11])
    is not given; "approximately d" per row and column becomes exactly ``d`` here.
Set 2 (:func:`nonuniform`)
    The same structure with sizes uniform in ``{1, ..., 32} x unit`` bytes.
Set 3 (:func:`airfoil`)
    An unstructured mesh around an airfoil: points placed densely near a NACA 0012 profile and
    sparsely far away, triangulated by :class:`scipy.spatial.Delaunay` (triangles inside the
    profile dropped), the vertex graph partitioned by METIS (``pymetis``) into ``parts`` parts.
    ``COM[i, j]`` = number of part-``i`` vertices with a neighbour in part ``j`` (the halo ``j``
    needs from ``i``) times ``unit`` bytes. The paper used Mavriplis' meshes and a genetic
    partitioner (its [8]); the counts per rank differ, see :meth:`Pattern.summary`.
"""

from __future__ import annotations

import numpy as np

from grapeshot.exchange.pattern import Pattern
from grapeshot.model.errors import InputError
from grapeshot.model.seed import SeedLike, as_generator


def _check(where: str, value: int, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise InputError(where, f"got {value!r}", "an integer")
    if value < lo or (hi is not None and value > hi):
        span = f"in [{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise InputError(where, f"got {value}", f"an integer {span}")
    return int(value)


def regular_mask(n: int, d: int, seed: SeedLike) -> np.ndarray:
    """``(n, n)`` bool: ``d`` ones in every row and column, none on the diagonal.

    Built as ``d`` random permutations, each repaired by random swaps until it avoids the
    diagonal and the pairs already taken; above ``d = (n - 1) / 2`` the complement of a
    ``(n - 1 - d)``-regular mask is returned (fewer collisions to repair).
    """
    n = _check("ranks", n, 1)
    d = _check("d", d, 0, n - 1)
    rng = as_generator(seed)
    if 2 * d > n - 1:
        mask = ~regular_mask(n, n - 1 - d, rng)
        np.fill_diagonal(mask, False)
        return mask
    mask = np.zeros((n, n), dtype=bool)
    rows = np.arange(n)
    for _ in range(d):
        for _attempt in range(100):
            perm = rng.permutation(n)
            bad = np.flatnonzero((perm == rows) | mask[rows, perm])
            tries = 0
            while bad.size and tries < 50 * n:
                i = int(bad[0])
                j = int(rng.integers(n))
                # Swap targets of i and j if both end up on free, off-diagonal pairs.
                if perm[j] != i and perm[i] != j and not mask[i, perm[j]] and not mask[j, perm[i]]:
                    perm[i], perm[j] = perm[j], perm[i]
                    bad = np.flatnonzero((perm == rows) | mask[rows, perm])
                tries += 1
            if not bad.size:
                break
        else:  # pragma: no cover - only for pathological n, d
            raise InputError("d", f"could not build a {d}-regular pattern on {n} ranks")
        mask[rows, perm] = True
    return mask


def regular(n: int = 32, d: int = 4, unit: int = 4096, *, seed: SeedLike = 0) -> Pattern:
    """Set 1: a ``d``-regular pattern of ``unit``-byte messages on ``n`` ranks."""
    unit = _check("unit", unit, 1)
    mask = regular_mask(n, d, seed)
    return Pattern(
        mask.astype(np.int64) * unit,
        f"regular:n={n},d={d},unit={unit}",
        {"set": 1, "n": n, "d": d, "unit": unit},
    )


def nonuniform(
    n: int = 32, d: int = 4, unit: int = 64, *, seed: SeedLike = 0, spread: int = 32
) -> Pattern:
    """Set 2: ``d``-regular, sizes uniform in ``{1, ..., spread} x unit`` bytes."""
    unit = _check("unit", unit, 1)
    spread = _check("spread", spread, 1)
    rng = as_generator(seed)
    mask = regular_mask(n, d, rng)
    sizes = rng.integers(1, spread + 1, size=(n, n), dtype=np.int64)
    return Pattern(
        np.where(mask, sizes, 0) * unit,
        f"nonuniform:n={n},d={d},unit={unit}",
        {"set": 2, "n": n, "d": d, "unit": unit, "spread": spread},
    )


def _naca0012(x: np.ndarray) -> np.ndarray:
    """Half-thickness of the NACA 0012 profile at chord position ``x`` in [0, 1]."""
    return 0.6 * (0.2969 * np.sqrt(x) - 0.1260 * x - 0.3516 * x**2 + 0.2843 * x**3 - 0.1036 * x**4)


def airfoil_mesh(points: int, *, seed: SeedLike = 0) -> tuple[np.ndarray, np.ndarray]:
    """Points and Delaunay triangles of a 2-D mesh around a NACA 0012 airfoil.

    A fifth of the points lie on the profile (cosine spacing, denser at both edges); the rest
    are scattered with density falling off as ``1 / r`` away from it, out to 8 chords. Returns
    ``(xy (points, 2) float64, triangles (t, 3) int64)`` with triangles inside the profile
    removed.
    """
    from scipy.spatial import Delaunay

    points = _check("points", points, 64)
    rng = as_generator(seed)
    n_surf = max(16, points // 5) // 2
    beta = np.linspace(0.0, np.pi, n_surf + 2)[1:-1]
    xs = 0.5 * (1 - np.cos(beta))
    surf = np.concatenate(
        [np.c_[xs, _naca0012(xs)], np.c_[xs[::-1], -_naca0012(xs[::-1])], [[0.0, 0.0], [1, 0]]]
    )
    n_far = points - surf.shape[0]
    # Radii log-uniform between 0.01 and 8 chords around the mid-chord: density ~ 1/r^2 per area.
    r = np.exp(rng.uniform(np.log(0.02), np.log(8.0), n_far))
    theta = rng.uniform(0, 2 * np.pi, n_far)
    far = np.c_[0.5 + r * np.cos(theta), r * np.sin(theta) * 0.6]
    inside = (far[:, 0] > 0) & (far[:, 0] < 1)
    inside &= np.abs(far[:, 1]) < _naca0012(np.clip(far[:, 0], 0, 1)) + 2e-3
    far[inside, 1] = np.sign(far[inside, 1] + 1e-12) * (
        _naca0012(np.clip(far[inside, 0], 0, 1)) + 0.01
    )
    xy = np.concatenate([surf, far])
    tri = Delaunay(xy).simplices.astype(np.int64)
    cx, cy = xy[tri].mean(axis=1).T
    solid = (cx > 0) & (cx < 1) & (np.abs(cy) < _naca0012(np.clip(cx, 0, 1)))
    return xy, tri[~solid]


def mesh_pattern(
    n_vertices: int, triangles: np.ndarray, parts: int, *, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Partition a triangle mesh's vertex graph with METIS; return ``(membership, counts)``.

    ``counts[i, j]`` = vertices of part ``i`` adjacent to at least one vertex of part ``j``.
    """
    import pymetis
    from scipy.sparse import coo_matrix

    e = np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]])
    e = np.concatenate([e, e[:, ::-1]])
    adj = coo_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(n_vertices,) * 2).tocsr()
    adj.sum_duplicates()
    adj.setdiag(0)
    adj.eliminate_zeros()
    opts = pymetis.Options(seed=int(seed))
    graph = pymetis.CSRAdjacency(adj.indptr, adj.indices)
    _, member = pymetis.part_graph(parts, adjacency=graph, options=opts)
    member = np.asarray(member, dtype=np.int64)
    coo = adj.tocoo()
    a, b = member[coo.row], member[coo.col]
    cross = a != b
    # One (vertex, other part) pair per vertex and neighbouring part.
    key = np.unique(coo.row[cross] * parts + b[cross])
    vert, other = key // parts, key % parts
    counts = np.zeros((parts, parts), dtype=np.int64)
    np.add.at(counts, (member[vert], other), 1)
    return member, counts


def airfoil(points: int = 2800, unit: int = 16, *, parts: int = 32, seed: SeedLike = 0) -> Pattern:
    """Set 3: halo exchange of an airfoil mesh of ``points`` vertices split into ``parts``."""
    unit = _check("unit", unit, 1)
    parts = _check("parts", parts, 2)
    rng = as_generator(seed)
    xy, tri = airfoil_mesh(points, seed=rng)
    _, counts = mesh_pattern(len(xy), tri, parts, seed=int(rng.integers(2**31)))
    return Pattern(
        counts * unit,
        f"airfoil:points={points},unit={unit}",
        {"set": 3, "points": points, "unit": unit, "parts": parts},
    )
