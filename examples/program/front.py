"""A user's own program for grapeshot: a reaction front spreading from one corner (FKPP).

Fisher-KPP reaction-diffusion, ``u_t = D ∇²u + r u (1 - u)``, on a plate with insulated
walls: ``u`` is the fraction of the plate invaded (0 ahead of the front, 1 behind it). The
front starts as a quarter ellipse around the corner (0, 0) and spreads outwards. The reaction
is stiff where it is active: in the front (``LOW < u < HIGH``) each cell integrates it with
``substeps`` backward-Euler steps, each solved by ``newton`` Newton iterations; ahead of and
behind the front, where it is nearly linear, one explicit step does. A front cell therefore
costs over a hundred times a quiet one (0.6 µs against 3.5 ns, measured on one core), and
the costly cells form a quarter ring that moves across the plate. One block per rank, split
either way, leaves the whole ring to one rank, and no straight cut shares it for long; many
small partitions placed at random do.

Run it (from the repository root)::

    mpiexec -n 2 grapeshot run --app examples/program/front.py:make_front --parts 16,16

``benchmarks/bench_user_kernel.py`` times it against the best one-block run (grapeshot's
geometric 2×1 and 1×2 and a hand-written mpi4py block code, ``benchmarks/mpi4py_block.py``,
which calls :func:`front_step`, :func:`initial_front` and :func:`front_params` from here).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from grapeshot.model.program import Block, Box, Context, Exchange, Phase, Program

#: Cells per axis when the command line gives no --cells.
DEFAULT_CELLS = (1024, 512)
#: The front, where the reaction is integrated in substeps: LOW < u < HIGH.
LOW, HIGH = 0.01, 0.99
#: Work count of one Newton iteration, in cell updates: its division makes it cost about four
#: times a quiet cell's whole update (measured on one core: 13 ns against 3.5 ns), so the
#: count follows the seconds.
NEWTON_WORK = 4
#: Diffusion number ``D dt / dx²`` (below 1/4 for the explicit stencil) and reaction number
#: ``r dt``: the front moves about ``2 sqrt(c a)`` = 0.13 cells a sweep and is about
#: ``9 sqrt(c / a)`` = 29 cells wide.
DIFFUSION, REACTION = 0.2, 0.02
#: The front's reaction: backward-Euler substeps per sweep, Newton iterations per substep.
SUBSTEPS, NEWTON = 24, 2


@njit(cache=True, nogil=True)
def front_step(u, out, work, box, params):
    """One explicit sweep from ``u`` into ``out``; ``work[0]``: its work count, one per cell
    and :data:`NEWTON_WORK` per Newton iteration of the front's cells.

    params: diffusion number ``c``, reaction number ``a``, substeps, Newton iterations.
    """
    c, a, substeps, newton = params[0], params[1], int(params[2]), int(params[3])
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
    h = a / substeps
    front = 0
    for i in range(g, g + nx):
        for j in range(g, g + ny):
            v = u[i, j]
            lap = u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * v
            if LOW < v < HIGH:
                # Backward Euler on w' = a w (1 - w): x - h x (1 - x) = w, Newton from x = w.
                w = v
                for _ in range(substeps):
                    x = w
                    for _ in range(newton):
                        x -= (x - h * x * (1.0 - x) - w) / (1.0 - h * (1.0 - 2.0 * x))
                    w = x
                out[i, j] = w + c * lap
                front += 1
            else:
                out[i, j] = v + c * lap + a * v * (1.0 - v)
    work[0] = nx * ny + front * substeps * newton * NEWTON_WORK


def initial_front(
    lo: tuple[int, int], hi: tuple[int, int], domain: tuple[int, int], axes: tuple[float, float]
) -> np.ndarray:
    """The initial ``u`` on the cells ``lo .. hi - 1`` (float64, shape ``hi - lo``).

    The invaded region is the quarter ellipse around the corner (0, 0) with semi-axes
    ``axes`` times a quarter of the plate's shorter side; ``u`` falls from 1 to 0 across it
    along a smoothstep as wide as the travelling front. Only arithmetic and square roots
    (correctly rounded): a cell gets the same bits whatever block holds it.
    """
    x = np.arange(lo[0], hi[0], dtype=np.float64)[:, None] + 0.5
    y = np.arange(lo[1], hi[1], dtype=np.float64)[None, :] + 0.5
    radius = 0.25 * min(domain)
    width = 9.0 * np.sqrt(DIFFUSION / REACTION)
    r = np.sqrt((x / axes[0]) ** 2 + (y / axes[1]) ** 2)
    t = np.clip((radius + 0.5 * width - r) / width, 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def front_axes(seed: int) -> tuple[float, float]:
    """The initial ellipse's semi-axes (fractions of the quarter side), drawn from ``seed``."""
    ax, ay = np.random.default_rng(seed).uniform(0.8, 1.25, size=2)
    return float(ax), float(ay)


def front_params(substeps: int, newton: int) -> np.ndarray:
    """The kernel's ``params``: the same every sweep."""
    return np.array([DIFFUSION, REACTION, substeps, newton], dtype=np.float64)


class Front(Program):
    """The FKPP front on ``cells`` cells split into ``parts`` micro-partitions.

    Block entries: ``u`` and ``v``, float64 ``box.padded_shape`` (the invaded fraction, and
    the buffer the next sweep writes); ``work``, int64 ``(1,)``: the last sweep's work count,
    what its cost follows (:attr:`Program.work_field`).
    """

    name = "front"
    ghost = 1
    work_field = "work"

    def __init__(
        self, parts, cells=None, *, substeps: int = SUBSTEPS, newton: int = NEWTON, seed: int = 0
    ) -> None:
        self.parts_shape = tuple(parts)
        self.domain_shape = tuple(cells) if cells is not None else DEFAULT_CELLS
        if len(self.parts_shape) != 2 or len(self.domain_shape) != 2:
            raise ValueError("the front is 2-D: give two --parts and two --cells")
        self.scene = f"corner front, {substeps} substeps x {newton} Newton"
        self.axes = front_axes(seed)
        self.kernel_params = front_params(substeps, newton)
        self.dt = 1.0  # time counts sweeps
        faces = {"width": 1, "corners": False}
        self.phases = (
            Phase(
                "u-to-v", front_step, fields=("u", "v", "work"), params=self.step_params,
                exchange=Exchange(("u",), **faces),
            ),
            Phase(
                "v-to-u", front_step, fields=("v", "u", "work"), params=self.step_params,
                exchange=Exchange(("v",), **faces),
            ),
        )  # fmt: skip

    def step_params(self, ctx: Context) -> np.ndarray:
        return self.kernel_params

    def advance(self, ctx: Context) -> float:
        """Two sweeps a step."""
        return 2.0 * self.dt

    def init_block(self, box: Box) -> Block:
        """The quarter ellipse of :func:`initial_front` on the partition's cells."""
        u = np.zeros(box.padded_shape)
        u[box.interior()] = initial_front(box.lo, box.hi, self.domain_shape, self.axes)
        return {"u": u, "v": u.copy(), "work": np.zeros(1, dtype=np.int64)}

    def output_fields(self, block: Block, box: Box) -> dict[str, np.ndarray]:
        """The invaded fraction on the partition's cells."""
        return {"u": block["u"][box.interior()].copy()}


def make_front(parts, cells=None, seed=0) -> Front:
    """The front: :data:`SUBSTEPS` backward-Euler substeps of :data:`NEWTON` Newton iterations
    per front cell and sweep."""
    return Front(parts, cells, seed=seed)
