"""Beatnik's surface mesh: node placement, 2-D block decomposition, weights, initial state.

Global node (i, j) of the N x N unique nodes; a rank owns the block ``[i0, i1) x [j0, j1)``.
Arrays hold components first with a halo of 2: ``(c, ni + 4, nj + 4)``, owned ``[2:-2, 2:-2]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grapeshot.apps.zmodel.params import ZModelParams
from grapeshot.model.errors import InputError

HALO = 2


def dims_create(ranks: int) -> tuple[int, int]:
    """MPI_Dims_create(ranks, 2): the most square px x py grid, px >= py."""
    best = (ranks, 1)
    for py in range(1, int(ranks**0.5) + 1):
        if ranks % py == 0:
            best = (ranks // py, py)
    return best


def block_bounds(cells: int, parts: int, index: int) -> tuple[int, int]:
    """Cells ``[c0, c1)`` of block ``index`` when ``cells`` are split in ``parts`` blocks.

    Cabana's uniform partitioner: ``cells // parts`` each, the remainder to the first blocks.
    """
    base, extra = divmod(cells, parts)
    c0 = index * base + min(index, extra)
    return c0, c0 + base + (1 if index < extra else 0)


@dataclass(frozen=True)
class Block:
    """The nodes one rank owns, in Beatnik's 2-D block decomposition.

    ``rank = bi * py + bj`` (row-major, as Cabana's Cartesian communicator orders ranks).
    """

    rank: int
    dims: tuple[int, int]
    coords: tuple[int, int]
    i0: int
    i1: int
    j0: int
    j1: int
    nodes: int
    cells_local: tuple[int, int]

    @property
    def shape(self) -> tuple[int, int]:
        """Owned nodes per dimension."""
        return (self.i1 - self.i0, self.j1 - self.j0)

    @property
    def padded(self) -> tuple[int, int]:
        """Owned nodes plus a halo of 2 on each side."""
        return (self.i1 - self.i0 + 2 * HALO, self.j1 - self.j0 + 2 * HALO)

    def edges(self) -> tuple[bool, bool, bool, bool]:
        """Whether the block touches the global low-i, high-i, low-j, high-j edge."""
        return (self.i0 == 0, self.i1 == self.nodes, self.j0 == 0, self.j1 == self.nodes)


def make_block(
    params: ZModelParams, ranks: int, rank: int, dims: tuple[int, int] | None = None
) -> Block:
    """The block of ``rank`` among ``ranks`` (dims from :func:`dims_create` unless given)."""
    px, py = dims if dims is not None else dims_create(ranks)
    if px * py != ranks:
        raise InputError("--dims", f"got {px}x{py} for {ranks} ranks", "px * py == ranks")
    cells = params.mesh - 1  # Cabana's global cells per dimension
    bi, bj = divmod(rank, py)
    bounds = []
    for b, p in ((bi, px), (bj, py)):
        c0, c1 = block_bounds(cells, p, b)
        n1 = c1 + 1 if (not params.periodic and c1 == cells) else c1  # free: last node
        if n1 - c0 < HALO:
            raise InputError(
                "--mesh",
                f"{params.mesh} split over {p} ranks leaves {n1 - c0} nodes",
                f"at least {HALO} nodes per rank and axis",
            )
        bounds.append((c0, n1, c1 - c0))
    (i0, i1, ci), (j0, j1, cj) = bounds
    return Block(rank, (px, py), (bi, bj), i0, i1, j0, j1, params.nodes, (ci, cj))


def node_coords(params: ZModelParams, index: np.ndarray) -> np.ndarray:
    """Initial x (or y) of global node indices (Beatnik's placement, spec §1.1)."""
    index = np.asarray(index, dtype=np.float64)
    if params.periodic:
        n = params.nodes
        return (index - (n // 2)) * params.length / n
    return -params.box + index * params.length / (params.mesh - 1)


def simpson_weights(params: ZModelParams, index: np.ndarray) -> np.ndarray:
    """1-D quadrature weights of global node indices (BR sum, spec §2.3).

    Beatnik (and ``beatnik_compat`` or free boundaries): composite Simpson-3/8 counted over
    ``mesh`` nodes, ``3/8`` at both ends, ``3/4`` where ``g % 3 == 0``, else ``9/8``. Periodic
    without compat: uniform weights 1 (the trapezoid rule, spectrally accurate).
    """
    g = np.asarray(index)
    if params.periodic and not params.beatnik_compat:
        return np.ones(g.shape)
    s = np.where(g % 3 == 0, 0.75, 1.125)
    return np.where((g == 0) | (g == params.mesh - 1), 0.375, s)


def initial_state(params: ZModelParams, block: Block) -> tuple[np.ndarray, np.ndarray]:
    """Padded z (3, ni+4, nj+4) and w (2, ni+4, nj+4) at t = 0 for ``block``; w = 0."""
    ni, nj = block.shape
    z = np.zeros((3, ni + 2 * HALO, nj + 2 * HALO))
    w = np.zeros((2, ni + 2 * HALO, nj + 2 * HALO))
    x = node_coords(params, np.arange(block.i0, block.i1))[:, None]
    y = node_coords(params, np.arange(block.j0, block.j1))[None, :]
    own = (slice(HALO, HALO + ni), slice(HALO, HALO + nj))
    z[0][own] = np.broadcast_to(x, (ni, nj))
    z[1][own] = np.broadcast_to(y, (ni, nj))
    m, p = params.magnitude, params.modes
    if params.init == "multi":
        z[2][own] = m * np.cos(2.0 * np.pi * x / p) * np.cos(2.0 * np.pi * y / p)
    else:
        z[2][own] = m / np.cosh(p * (x * x + y * y)) ** 2
    return z, w
