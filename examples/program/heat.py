"""A user's own program for grapeshot: 2-D heat with a moving hot spot (docs/program-api.md).

The plate conducts heat (explicit 5-point Laplacian, insulated walls). A torch circles slowly
over one corner of it; under the torch the plate burns: each burning cell integrates a stiff
source term in small steps, up to ``substeps`` of them at the torch's centre, so a burning
cell costs many times a cold one. One block per rank, split either way, leaves the whole flame
to one rank; many small partitions placed at random share it.

Run it (from the repository root)::

    mpiexec -n 2 grapeshot run --app examples/program/heat.py:make_heat --parts 16,16 --steps 100

``make_heat`` is the light kernel (up to 32 source substeps), ``make_heavy`` the heavy one
(up to 128).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from grapeshot.model.program import Block, Box, Context, Exchange, Phase, Program

#: Cells per axis when the command line gives no --cells.
DEFAULT_CELLS = (2048, 2048)


@njit(cache=True, nogil=True)
def heat_step(u, out, work, box, params):
    """One explicit step from ``u`` into ``out``; ``work[0]``: the step's work count, one per
    cell and one per source substep.

    params: ``c`` (diffusion number alpha dt / dx², below 1/4), torch centre ``x``, ``y`` and
    radius (cells), source strength per step, substeps.
    """
    c, tx, ty, radius, power, substeps = (
        params[0], params[1], params[2], params[3], params[4], int(params[5]),
    )  # fmt: skip
    g = box.ghost
    nx, ny = box.shape
    # Insulated walls: the ghost cells beyond a wall mirror the cells inside it. Only faces:
    # the 5-point stencil never reads a corner, so the exchange skips them (corners=False).
    if box.lo[0] == 0:
        u[g - 1, g : g + ny] = u[g, g : g + ny]
    if box.hi[0] == box.domain[0]:
        u[g + nx, g : g + ny] = u[g + nx - 1, g : g + ny]
    if box.lo[1] == 0:
        u[g : g + nx, g - 1] = u[g : g + nx, g]
    if box.hi[1] == box.domain[1]:
        u[g : g + nx, g + ny] = u[g : g + nx, g + ny - 1]
    for i in range(g, g + nx):  # the stencil, on every cell
        for j in range(g, g + ny):
            out[i, j] = u[i, j] + c * (
                u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * u[i, j]
            )
    # The flame: cells whose centre is in the disc burn, heat released towards 1 in small
    # steps (a stiff source), more of them the nearer the torch: ``substeps`` at its centre,
    # none at its edge. Each row's burning cells are a chord of the disc; the chord from
    # sqrt only bounds the search, the test on each cell decides, so a cell burns the same
    # whatever partition it is in.
    h = power / substeps
    r2 = radius * radius
    burnt = 0
    for i in range(g, g + nx):
        dx = box.lo[0] + i - g + 0.5 - tx
        if dx * dx >= r2:
            continue
        half = np.sqrt(r2 - dx * dx)
        first = max(g, int(np.floor(ty - half - 0.5)) - box.lo[1] + g - 1)
        last = min(g + ny, int(np.ceil(ty + half - 0.5)) - box.lo[1] + g + 2)
        for j in range(first, last):
            dy = box.lo[1] + j - g + 0.5 - ty
            d2 = dx * dx + dy * dy
            if d2 < r2:
                n = int(substeps * (1.0 - d2 / r2))
                v = out[i, j]
                for _ in range(n):
                    v += h * (1.0 - v * v * v)
                out[i, j] = v
                burnt += n
    work[0] = nx * ny + burnt


class Heat(Program):
    """The heat plate on ``cells`` cells split into ``parts`` micro-partitions.

    Block entries: ``u`` and ``v``, float64 ``box.padded_shape`` (temperature, and the buffer
    the next half-step writes); ``work``, int64 ``(1,)``: the last half-step's work count,
    what its cost follows (:attr:`Program.work_field`).
    """

    name = "heat"
    ghost = 1
    work_field = "work"

    #: The torch's path and size, fractions of the plate: it circles around ``centre`` at
    #: ``orbit`` and burns a disc of radius ``flame`` (one corner of the plate, so a block
    #: per rank, split either way, leaves it all to one rank).
    centre = (0.25, 0.25)
    orbit = 0.02
    flame = 0.24

    def __init__(self, parts, cells=None, *, substeps: int = 4, seed: int = 0) -> None:
        self.parts_shape = tuple(parts)
        self.domain_shape = tuple(cells) if cells is not None else DEFAULT_CELLS
        if len(self.parts_shape) != 2 or len(self.domain_shape) != 2:
            raise ValueError("the heat plate is 2-D: give two --parts and two --cells")
        self.scene = f"torch, {substeps} substeps"
        self.substeps = substeps
        # The seed picks where on its circle the torch starts.
        self.phase0 = np.random.default_rng(seed).uniform(0.0, 2.0 * math.pi)
        self.dt = 1.0  # one half-step per phase; time counts half-steps
        faces = {"width": 1, "corners": False}
        self.phases = (
            Phase(
                "u-to-v", heat_step, fields=("u", "v", "work"), params=self.params_even,
                exchange=Exchange(("u",), **faces),
            ),
            Phase(
                "v-to-u", heat_step, fields=("v", "u", "work"), params=self.params_odd,
                exchange=Exchange(("v",), **faces),
            ),
        )  # fmt: skip

    def torch(self, t: float) -> tuple[float, float]:
        """Where the torch is at time ``t`` (cells): one turn of its orbit in 100 steps."""
        nx, ny = self.domain_shape
        angle = self.phase0 + 2.0 * math.pi * t / 200.0
        return (
            nx * (self.centre[0] + self.orbit * math.cos(angle)),
            ny * (self.centre[1] + self.orbit * math.sin(angle)),
        )

    def _params(self, t: float) -> np.ndarray:
        x, y = self.torch(t)
        radius = self.flame * min(self.domain_shape)
        return np.array([0.2, x, y, radius, 0.05, self.substeps])

    def params_even(self, ctx: Context) -> np.ndarray:
        return self._params(ctx.time)

    def params_odd(self, ctx: Context) -> np.ndarray:
        return self._params(ctx.time + self.dt)

    def advance(self, ctx: Context) -> float:
        """Two half-steps a step."""
        return 2.0 * self.dt

    def init_block(self, box: Box) -> Block:
        """A cold plate (temperature 0)."""
        u = np.zeros(box.padded_shape)
        return {"u": u, "v": u.copy(), "work": np.zeros(1, dtype=np.int64)}

    def output_fields(self, block: Block, box: Box) -> dict[str, np.ndarray]:
        """The temperature on the partition's cells."""
        return {"u": block["u"][box.interior()].copy()}


def make_heat(parts, cells=None, seed=0) -> Heat:
    """The light kernel: at most 32 source substeps per burning cell."""
    return Heat(parts, cells, substeps=32, seed=seed)


def make_heavy(parts, cells=None, seed=0) -> Heat:
    """The heavy kernel: at most 128 source substeps per burning cell."""
    return Heat(parts, cells, substeps=128, seed=seed)
