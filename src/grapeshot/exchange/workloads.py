"""The CM-5 paper's test sets (Wang, Lin & Ranka 1993, section 5) as :class:`Pattern` s.

Set 1 (:func:`regular`)
    Every rank sends ``d`` messages and receives ``d`` (a union of ``d`` random permutations
    with no fixed point and no repeated pair), each ``unit`` bytes. The paper's generator ([11])
    is not given; "approximately d" per row and column becomes exactly ``d`` here.
Set 2 (:func:`nonuniform`)
    The same structure with sizes uniform in ``{1, ..., 32} x unit`` bytes.
Set 3 (:func:`airfoil`)
    An unstructured 3-D mesh around half a wing ("part of an airplane"): points placed densely
    near a NACA 0012 wing and sparsely far away, tetrahedralised by
    :class:`scipy.spatial.Delaunay` (tetrahedra inside the wing dropped), the vertex graph
    partitioned by METIS (``pymetis``) into ``parts`` parts. ``COM[i, j]`` = number of part-``i``
    vertices with a neighbour in part ``j`` (the halo ``j`` needs from ``i``) times ``unit``
    bytes. The paper used Mavriplis' meshes and a genetic partitioner (its [8]). Its statistics
    say the meshes are 3-D: from 2,800 to 53,961 points (19×) its average message grows 6.6×,
    as a surface does (19^(2/3) = 7.2), not 4.4× as a 2-D boundary would; and each of 32 parts
    talks to 9–11 others, where 2-D parts average under 6. Ours (seed 0): 9.5–9.9 partners
    (at most 16–20) and messages of 11 / 23 / 68 vertices on average, at most 30 / 72 / 273
    (paper: 14.2 / 32.0 / 93.2, at most 36 / 99 / 276), see :meth:`Pattern.summary`.
"""

from __future__ import annotations

import numpy as np

from grapeshot.exchange.pattern import Pattern
from grapeshot.model.errors import InputError, check_int
from grapeshot.model.seed import SeedLike, as_generator


def regular_mask(n: int, d: int, seed: SeedLike) -> np.ndarray:
    """``(n, n)`` bool: ``d`` ones in every row and column, none on the diagonal.

    Built as ``d`` random permutations, each repaired by random swaps until it avoids the
    diagonal and the pairs already taken; above ``d = (n - 1) / 2`` the complement of a
    ``(n - 1 - d)``-regular mask is returned (fewer collisions to repair).
    """
    n = check_int(n, "ranks", minimum=1)
    d = check_int(d, "d", minimum=0, maximum=n - 1)
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
    unit = check_int(unit, "unit", minimum=1)
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
    unit = check_int(unit, "unit", minimum=1)
    spread = check_int(spread, "spread", minimum=1)
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


def wing_mesh(
    points: int, *, span: float = 1.5, seed: SeedLike = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Points and Delaunay tetrahedra of a 3-D mesh around half a wing (NACA 0012 section).

    The wing spans ``span`` chords from a symmetry plane (z = 0). A fifth of the points lie on
    its upper and lower surfaces (cosine spacing along the chord, uniform along the span); the
    rest fill the half-space z >= 0 around it, their distance to a random point of the wing
    log-uniform between 0.02 and 8 chords (density falling off away from it). Returns
    ``(xyz (points, 3) float64, tetrahedra (t, 4) int64)`` with tetrahedra inside the wing
    removed.
    """
    from scipy.spatial import Delaunay

    points = check_int(points, "points", minimum=64)
    rng = as_generator(seed)
    # At least half the points fill the space around the wing, or a small mesh would be all
    # surface and every tetrahedron inside the wing.
    n_surf = min(max(16, points // 5), points // 2)
    nx = max(4, int(np.sqrt(n_surf)))
    nz = max(2, n_surf // (2 * nx))
    beta = np.linspace(0.0, np.pi, nx + 2)[1:-1]
    x, z = (a.ravel() for a in np.meshgrid(0.5 * (1 - np.cos(beta)), np.linspace(0, span, nz)))
    t = _naca0012(x)
    surf = np.concatenate([np.c_[x, t, z], np.c_[x, -t, z]])
    n_far = points - len(surf)
    far = np.zeros((0, 3))
    while len(far) < n_far:  # the half below the symmetry plane is drawn again
        r = np.exp(rng.uniform(np.log(0.02), np.log(8.0), 2 * n_far))
        v = rng.normal(size=(2 * n_far, 3))
        v /= np.linalg.norm(v, axis=1)[:, None]
        anchor = np.c_[
            rng.uniform(0, 1, 2 * n_far), np.zeros(2 * n_far), rng.uniform(0, span, 2 * n_far)
        ]
        drawn = anchor + r[:, None] * v
        far = np.concatenate([far, drawn[drawn[:, 2] >= 0]])
    far = far[:n_far]
    fx = np.clip(far[:, 0], 0, 1)
    inside = (far[:, 0] > 0) & (far[:, 0] < 1) & (far[:, 2] <= span)
    inside &= np.abs(far[:, 1]) < _naca0012(fx) + 2e-3
    far[inside, 1] = np.sign(far[inside, 1] + 1e-12) * (_naca0012(fx[inside]) + 0.01)
    xyz = np.concatenate([surf, far])
    tet = Delaunay(xyz).simplices.astype(np.int64)
    c = xyz[tet].mean(axis=1)
    solid = (c[:, 0] > 0) & (c[:, 0] < 1) & (c[:, 2] < span)
    solid &= np.abs(c[:, 1]) < _naca0012(np.clip(c[:, 0], 0, 1))
    return xyz, tet[~solid]


def mesh_pattern(
    n_vertices: int, cells: np.ndarray, parts: int, *, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Partition a mesh's vertex graph with METIS; return ``(membership, counts)``.

    ``cells`` is ``(c, k)`` int: triangles (k = 3) or tetrahedra (k = 4); every two vertices of
    a cell are neighbours.

    ``counts[i, j]`` = vertices of part ``i`` adjacent to at least one vertex of part ``j``.
    """
    import pymetis
    from scipy.sparse import coo_matrix

    k = cells.shape[1]
    e = np.concatenate([cells[:, [a, b]] for a in range(k) for b in range(a + 1, k)])
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
    """Set 3: halo exchange of a 3-D wing mesh of ``points`` vertices split into ``parts``."""
    unit = check_int(unit, "unit", minimum=1)
    parts = check_int(parts, "parts", minimum=2)
    rng = as_generator(seed)
    xyz, tet = wing_mesh(points, seed=rng)
    _, counts = mesh_pattern(len(xyz), tet, parts, seed=int(rng.integers(2**31)))
    return Pattern(
        counts * unit,
        f"airfoil:points={points},unit={unit}",
        {"set": 3, "points": points, "unit": unit, "parts": parts},
    )
