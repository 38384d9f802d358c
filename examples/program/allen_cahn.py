"""A user's own program for grapeshot: Allen-Cahn phase separation, a uniform load.

``u_t = ε² ∇²u + u - u³`` on a plate with insulated walls, from small random values: ``u``
separates into domains of +1 and -1 that coarsen. The diffusion is explicit; the cubic
reaction, stiff near ``u = ±1``, is implicit (backward Euler, solved by ``newton`` Newton
iterations from the old value). Every cell does the same arithmetic every sweep, so every
partition costs the same: nothing to balance. It is the counterpart of
``examples/program/front.py``: what micro-partitions cost where one block per rank is already
balanced.

Run it (from the repository root)::

    mpiexec -n 2 grapeshot run --app examples/program/allen_cahn.py:make_allen_cahn --parts 16,16

``benchmarks/bench_user_kernel.py`` times it against the best one-block run (grapeshot's
geometric 2×1 and 1×2 and a hand-written mpi4py block code, ``benchmarks/mpi4py_block.py``,
which calls :func:`allen_cahn_step`, :func:`initial_allen_cahn` and
:func:`allen_cahn_params` from here).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from grapeshot.model.program import Block, Box, Context, Exchange, Phase, Program

#: Cells per axis when the command line gives no --cells.
DEFAULT_CELLS = (1024, 512)
#: Work count of one Newton iteration, in cell updates: its division makes it cost about four
#: times a cell's stencil (measured on one core: 13 ns against 3.5 ns).
NEWTON_WORK = 4
#: Diffusion number ``ε² dt / dx²`` (below 1/4 for the explicit stencil) and ``dt`` in the
#: reaction's time units (below 1, so that backward Euler has one root): interfaces about
#: ``sqrt(c / a)`` = 1.4 cells thick.
DIFFUSION, REACTION = 0.2, 0.1
#: Newton iterations of the reaction's backward-Euler step per cell and sweep: one is the
#: linearly implicit Euler step.
NEWTON = 1
#: Amplitude of the initial random values, uniform in ``[-AMPLITUDE, AMPLITUDE]``.
AMPLITUDE = 0.05


@njit(cache=True, nogil=True)
def allen_cahn_step(u, out, work, box, params):
    """One sweep from ``u`` into ``out``; ``work[0]``: its work count, one per cell and
    :data:`NEWTON_WORK` per Newton iteration (every cell does ``newton``).

    params: diffusion number ``c``, reaction step ``a``, Newton iterations.
    """
    c, a, newton = params[0], params[1], int(params[2])
    g = box.ghost
    nx, ny = box.shape
    # Insulated walls: the ghost cells beyond a wall mirror the cells inside it. Faces only:
    # the 5-point stencil reads no corner, so the exchange skips them (corners=False).
    if box.lo[0] == 0:
        u[g - 1, g : g + ny] = u[g, g : g + ny]
    if box.hi[0] == box.domain[0]:
        u[g + nx, g : g + ny] = u[g + nx - 1, g : g + ny]
    if box.lo[1] == 0:
        u[g : g + nx, g - 1] = u[g : g + nx, g]
    if box.hi[1] == box.domain[1]:
        u[g : g + nx, g + ny] = u[g : g + nx, g + ny - 1]
    for i in range(g, g + nx):
        for j in range(g, g + ny):
            v = u[i, j]
            lap = u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * v
            # Backward Euler on w' = w - w³: x - a (x - x³) = v. Its left side increases
            # with x for a < 1 (one root), so Newton from x = v needs no safeguard.
            x = v
            for _ in range(newton):
                x -= (x - a * (x - x * x * x) - v) / (1.0 - a * (1.0 - 3.0 * x * x))
            out[i, j] = x + c * lap
    work[0] = nx * ny * (1 + newton * NEWTON_WORK)


def initial_allen_cahn(domain: tuple[int, int], seed: int) -> np.ndarray:
    """The initial ``u`` over the whole plate (float64, shape ``domain``): uniform random
    values in ``[-AMPLITUDE, AMPLITUDE]`` from ``seed``; a block takes its slice."""
    return np.random.default_rng(seed).uniform(-AMPLITUDE, AMPLITUDE, size=tuple(domain))


def allen_cahn_params(newton: int) -> np.ndarray:
    """The kernel's ``params``: the same every sweep."""
    return np.array([DIFFUSION, REACTION, newton], dtype=np.float64)


class AllenCahn(Program):
    """Allen-Cahn on ``cells`` cells split into ``parts`` micro-partitions.

    Block entries: ``u`` and ``v``, float64 ``box.padded_shape`` (the phase field, and the
    buffer the next sweep writes); ``work``, int64 ``(1,)``: the last sweep's work count
    (:attr:`Program.work_field`).
    """

    name = "allen-cahn"
    ghost = 1
    work_field = "work"

    def __init__(self, parts, cells=None, *, newton: int = NEWTON, seed: int = 0) -> None:
        self.parts_shape = tuple(parts)
        self.domain_shape = tuple(cells) if cells is not None else DEFAULT_CELLS
        if len(self.parts_shape) != 2 or len(self.domain_shape) != 2:
            raise ValueError("Allen-Cahn here is 2-D: give two --parts and two --cells")
        self.scene = f"random start, {newton} Newton"
        # Every rank draws the whole plate (8 bytes a cell) and keeps only its blocks' cells.
        self.initial = initial_allen_cahn(self.domain_shape, seed)
        self.kernel_params = allen_cahn_params(newton)
        self.dt = 1.0  # time counts sweeps
        faces = {"width": 1, "corners": False}
        self.phases = (
            Phase(
                "u-to-v", allen_cahn_step, fields=("u", "v", "work"), params=self.step_params,
                exchange=Exchange(("u",), **faces),
            ),
            Phase(
                "v-to-u", allen_cahn_step, fields=("v", "u", "work"), params=self.step_params,
                exchange=Exchange(("v",), **faces),
            ),
        )  # fmt: skip

    def step_params(self, ctx: Context) -> np.ndarray:
        return self.kernel_params

    def advance(self, ctx: Context) -> float:
        """Two sweeps a step."""
        return 2.0 * self.dt

    def init_block(self, box: Box) -> Block:
        """The partition's slice of :func:`initial_allen_cahn`."""
        u = np.zeros(box.padded_shape)
        u[box.interior()] = self.initial[box.lo[0] : box.hi[0], box.lo[1] : box.hi[1]]
        return {"u": u, "v": u.copy(), "work": np.zeros(1, dtype=np.int64)}

    def output_fields(self, block: Block, box: Box) -> dict[str, np.ndarray]:
        """The phase field on the partition's cells."""
        return {"u": block["u"][box.interior()].copy()}


def make_allen_cahn(parts, cells=None, seed=0) -> AllenCahn:
    """Allen-Cahn with :data:`NEWTON` Newton iterations per cell and sweep."""
    return AllenCahn(parts, cells, seed=seed)
