"""A user's own program for grapeshot: Gray-Scott reaction-diffusion on a periodic domain.

Two chemicals ``u`` and ``v`` react (``u + 2v -> 3v``, ``u`` fed at rate ``F``, ``v`` removed
at rate ``F + k``) and diffuse (explicit 5-point Laplacian): spots and stripes grow from a
few seeds. The domain wraps around both axes (``periodic = (True, True)``, docs/program-api.md):
the last partition's neighbour is the first, exchanged like any other neighbour, so the kernel
fills no wall; ``make_gray_scott_walls`` is the same program between zero-flux walls instead,
whose kernel mirrors the cells beyond a wall.

Run it (from the repository root)::

    mpiexec -n 2 grapeshot run --app examples/program/gray_scott.py:make_gray_scott \\
        --parts 16,16 --cells 512,512 --steps 100
"""

from __future__ import annotations

import numpy as np
from numba import njit

from grapeshot.model.program import Block, Box, Context, Exchange, Phase, Program

#: Cells per axis when the command line gives no --cells.
DEFAULT_CELLS = (512, 512)
#: Diffusion rates of u and v, feed and kill rates, time step (a "spots" regime).
DU, DV, FEED, KILL, DT = 0.16, 0.08, 0.035, 0.065, 1.0


@njit(cache=True, nogil=True)
def gray_scott_step(u, v, u2, v2, box, params):
    """One explicit step from ``u``, ``v`` into ``u2``, ``v2``.

    params: ``Du, Dv, F, k, dt`` and, per axis, 1.0 where the domain wraps (no wall to fill)
    and 0.0 where it has zero-flux walls (the ghost cells beyond a wall mirror the cells
    inside it). The Laplacian reads no corner (the exchange skips them).
    """
    du, dv, feed, kill, dt = params[0], params[1], params[2], params[3], params[4]
    g = box.ghost
    nx, ny = box.shape
    for f in (u, v):
        if params[5] == 0.0 and box.lo[0] == 0:
            f[g - 1, g : g + ny] = f[g, g : g + ny]
        if params[5] == 0.0 and box.hi[0] == box.domain[0]:
            f[g + nx, g : g + ny] = f[g + nx - 1, g : g + ny]
        if params[6] == 0.0 and box.lo[1] == 0:
            f[g : g + nx, g - 1] = f[g : g + nx, g]
        if params[6] == 0.0 and box.hi[1] == box.domain[1]:
            f[g : g + nx, g + ny] = f[g : g + nx, g + ny - 1]
    for i in range(g, g + nx):
        for j in range(g, g + ny):
            lu = u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * u[i, j]
            lv = v[i - 1, j] + v[i + 1, j] + v[i, j - 1] + v[i, j + 1] - 4.0 * v[i, j]
            uvv = u[i, j] * v[i, j] * v[i, j]
            u2[i, j] = u[i, j] + dt * (du * lu - uvv + feed * (1.0 - u[i, j]))
            v2[i, j] = v[i, j] + dt * (dv * lv + uvv - (feed + kill) * v[i, j])


def seeds(domain: tuple[int, int], seed: int, count: int = 12, size: int = 8) -> np.ndarray:
    """int ``(count, 2)``: the low corners of the seeded squares (``size`` cells a side)."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, np.asarray(domain), size=(count, 2))


def initial(domain: tuple[int, int], lo, hi, seed: int, size: int = 8):
    """``u``, ``v`` on the cells ``lo``..``hi`` (global indices): ``u = 1, v = 0`` but in the
    seeded squares (wrapping around the domain), where ``u = 0.5, v = 0.25``."""
    i = np.arange(lo[0], hi[0])[:, None]
    j = np.arange(lo[1], hi[1])[None, :]
    inside = np.zeros((hi[0] - lo[0], hi[1] - lo[1]), dtype=bool)
    for a, b in seeds(domain, seed, size=size):
        inside |= ((i - a) % domain[0] < size) & ((j - b) % domain[1] < size)
    return np.where(inside, 0.5, 1.0), np.where(inside, 0.25, 0.0)


class GrayScott(Program):
    """Gray-Scott on ``cells`` split into ``parts`` micro-partitions; ``periodic`` per axis.

    Block entries: ``u``, ``v`` and their next values ``u2``, ``v2``, float64
    ``box.padded_shape``. Two phases a step: ``(u, v) -> (u2, v2)``, then back.
    """

    name = "gray-scott"
    ghost = 1

    def __init__(self, parts, cells=None, *, periodic=(True, True), seed: int = 0) -> None:
        self.parts_shape = tuple(parts)
        self.domain_shape = tuple(cells) if cells is not None else DEFAULT_CELLS
        if len(self.parts_shape) != 2 or len(self.domain_shape) != 2:
            raise ValueError("Gray-Scott here is 2-D: give two --parts and two --cells")
        self.periodic = tuple(periodic)
        self.scene = "periodic" if all(self.periodic) else "walls"
        self.seed = seed
        wraps = [1.0 if p else 0.0 for p in self.periodic]
        self._params = np.array([DU, DV, FEED, KILL, DT, *wraps])
        faces = {"width": 1, "corners": False}
        self.phases = (
            Phase(
                "uv-to-2", gray_scott_step, fields=("u", "v", "u2", "v2"), params=self.params,
                exchange=Exchange(("u", "v"), **faces),
            ),
            Phase(
                "2-to-uv", gray_scott_step, fields=("u2", "v2", "u", "v"), params=self.params,
                exchange=Exchange(("u2", "v2"), **faces),
            ),
        )  # fmt: skip

    def params(self, ctx: Context) -> np.ndarray:
        return self._params

    def advance(self, ctx: Context) -> float:
        """Two explicit steps a step."""
        return 2.0 * DT

    def init_block(self, box: Box) -> Block:
        u0, v0 = initial(self.domain_shape, box.lo, box.hi, self.seed)
        u = np.zeros(box.padded_shape)
        v = np.zeros(box.padded_shape)
        u[box.interior()] = u0
        v[box.interior()] = v0
        return {"u": u, "v": v, "u2": u.copy(), "v2": v.copy()}

    def output_fields(self, block: Block, box: Box) -> dict[str, np.ndarray]:
        inside = box.interior()
        return {"u": block["u"][inside].copy(), "v": block["v"][inside].copy()}


def make_gray_scott(parts, cells=None, seed=0) -> GrayScott:
    """Gray-Scott on a doubly periodic domain."""
    return GrayScott(parts, cells, periodic=(True, True), seed=seed)


def make_gray_scott_walls(parts, cells=None, seed=0) -> GrayScott:
    """The same between zero-flux walls (no wrap): the reference for what periodicity costs."""
    return GrayScott(parts, cells, periodic=(False, False), seed=seed)


def reference(cells: tuple[int, int], steps: int, seed: int = 0) -> dict[str, np.ndarray]:
    """The periodic program on one array with ``np.roll``: what every partitioning must give,
    bit for bit (the same operations in the same order as the kernel)."""
    u, v = initial(cells, (0, 0), cells, seed)
    for _ in range(2 * steps):
        lu = np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1) - 4.0 * u
        lv = np.roll(v, 1, 0) + np.roll(v, -1, 0) + np.roll(v, 1, 1) + np.roll(v, -1, 1) - 4.0 * v
        uvv = u * v * v
        u, v = (
            u + DT * (DU * lu - uvv + FEED * (1.0 - u)),
            v + DT * (DV * lv + uvv - (FEED + KILL) * v),
        )
    return {"u": u, "v": v}
