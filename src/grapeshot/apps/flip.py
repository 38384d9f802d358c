"""FLIP water on a MAC grid, and the trace generator built on it (Birdshot §7.1's FLIP app).

The solver
----------
A PIC/FLIP blend (FLIP ratio ``flip_ratio``, default 0.95) on a staggered (MAC) grid of cubic
cells over the unit box, gravity along −y, solid walls on the box faces and on the scene's
obstacles. One step, with ``dt`` from the CFL rule
``dt = min(1/30 s, cfl·dx / (max|v_p| + √(5·g·dx)))`` (the √ term bounds the velocity gravity
adds within the step):

1. *bin*: count particles per cell; a non-solid cell holding a particle is FLUID, the rest AIR.
2. *p2g*: trilinear weighted mean of the particle velocities onto each face.
3. *extrapolate*: one layer outward from the faces that received particle data.
4. *forces*: gravity on the y-faces; then the wall condition on faces touching a solid or the
   box: zero normal velocity into the wall, while a velocity pointing away from it is kept so
   the water can separate (a cheap stand-in for the inequality ``u·n >= 0``).
5. *pressure*: the Poisson equation over the fluid cells, ``A φ = −dx·(Σ outflow)`` with
   ``φ = p·dt/ρ``, ``A`` the 5-/7-point Laplacian scaled by ``dx²`` (solid neighbours drop out,
   air neighbours are ``φ = 0``), assembled with :mod:`scipy.sparse` (CSR) and solved by
   conjugate gradients (:func:`~grapeshot.apps.flip_kernels.pcg`; relative residual 1e-8 in the
   2-norm, warm-started from the previous step's pressure) preconditioned by modified
   incomplete Cholesky MIC(0) (τ = 0.97, σ = 0.25: Bridson's preconditioner, written for a
   general CSR matrix). Both are serial numba loops: :func:`scipy.sparse.linalg.cg` works too,
   but its BLAS dot products stall on a busy machine and sum in a thread-dependent order, and
   the trace wants stable timings and bit-identical fields. pyamg is not used: MIC(0) needs
   no extra dependency and is the preconditioner FLIP codes ship.
   Faces with a fluid cell on either side are then corrected by ``−∇φ``.
6. *extrapolate*: ``⌈cfl⌉ + 2`` layers from the faces next to fluid into the air and the
   wall faces, so that advection never samples an undefined velocity; the wall condition again.
7. *g2p*: ``v_p ← r·(v_p + Δu(x_p)) + (1 − r)·u(x_p)`` with ``Δu`` the grid's change over the
   step (after step 3 to after step 6).
8. *advect*: midpoint (RK2) in the new grid velocity; particles that would leave the box are
   clamped inside it, those that end in a solid cell move to the nearest non-solid cell.

Particles are ``2^d`` per fluid cell at the start, one per sub-cell of a 2×2(×2) split,
jittered uniformly within the sub-cell by a seeded generator. A 2-D scene runs on the same 3-D
kernels with one layer of cells in z (the z-faces are walls), particles on ``z = dx/2``.

The trace
---------
:func:`make_trace` runs the solver in one process and records, per step and per partition of
the partition grid over the cells, the measured seconds of the step (``units="s"``) and the
fluid cells of each partition (``work``). The attribution rule: each phase is timed as a whole
(``time.perf_counter``); the particle phases (*bin*, *p2g*, *g2p*, *advect*) are split among the
partitions in proportion to the particles each holds at the start of the step, the grid phases
(*extrapolate*, *forces*, *pressure* — the global solve included) in proportion to each
partition's fluid cells. A partition with neither costs 0, the way an empty region of a sparse
(OpenVDB) grid does, and the costs of a step add up to its measured time. The halo is
:func:`~grapeshot.model.workload.grid_halo` with one ghost layer, edges and corners included
(trilinear transfers reach diagonal neighbours), and ``8·(d + 1)`` bytes a cell: the ``d``
face velocities and the pressure in float64.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.ndimage import distance_transform_edt

from grapeshot.apps import flip_kernels as kernels
from grapeshot.model.errors import InputError, check_int, check_number, check_probability
from grapeshot.model.seed import SeedLike, as_generator
from grapeshot.model.workload import Workload, check_grid, grid_halo, partition_bounds

FLIP_RATIO = 0.95
"""Default FLIP share of the PIC/FLIP blend."""
CFL = 2.0
"""Default CFL number: cells a particle may cross in one step."""
MAX_CFL = 10.0
"""Largest accepted CFL number (extrapolation depth and RK2 accuracy degrade beyond it)."""
FRAME = 1.0 / 30.0
"""Upper bound of the time step, s: one frame at the configs' 30 fps."""
PARTICLES_PER_AXIS = 2
"""Initial particles per cell along each axis (``2^d`` per cell)."""
MIN_CELLS = 8
"""Fewest cells per axis accepted."""
CG_RTOL = 1e-8
"""Relative residual (2-norm) at which CG stops."""
CG_MAXITER = 2000
"""Iteration cap of CG (the configs allow up to 1500-5000)."""
MIC_TAU = 0.97
MIC_SIGMA = 0.25
PARTICLE_PHASES = ("bin", "p2g", "g2p", "advect")
"""Phases whose time is attributed by particle count."""
GRID_PHASES = ("extrapolate", "forces", "pressure")
"""Phases whose time is attributed by fluid-cell count."""
HALO_GHOST = 1
"""Ghost layers exchanged per step."""


def halo_cell_bytes(ndim: int) -> int:
    """Bytes per ghost cell: ``ndim`` face velocities and the pressure, float64."""
    return 8 * (ndim + 1)


def _sides(a: int) -> tuple[tuple, tuple, tuple]:
    """Index tuples along axis ``a`` of a 3-D array: all but the last, all but the first, and
    all but both ends. For a face array along ``a``, ``lo``/``hi`` of a *cell* array are the
    cells below/above the interior faces ``inner``."""
    lo: list = [slice(None)] * 3
    hi: list = [slice(None)] * 3
    inner: list = [slice(None)] * 3
    lo[a], hi[a], inner[a] = slice(0, -1), slice(1, None), slice(1, -1)
    return tuple(lo), tuple(hi), tuple(inner)


# --- scenes ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Box:
    """An axis-aligned box ``[lo, hi]`` (m) with an initial velocity (m/s) for fluid."""

    lo: tuple[float, ...]
    hi: tuple[float, ...]
    velocity: tuple[float, ...] | None = None

    def contains(self, x: np.ndarray) -> np.ndarray:
        """Which of the points ``x`` (shape ``(M, >= d)``) lie in the box; bool ``(M,)``."""
        d = len(self.lo)
        pts = x[:, :d]
        return np.all((pts >= np.asarray(self.lo)) & (pts <= np.asarray(self.hi)), axis=1)

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper corner of the bounding box, m."""
        return np.asarray(self.lo, dtype=float), np.asarray(self.hi, dtype=float)


@dataclass(frozen=True)
class Ball:
    """A ball (disc in 2-D) of ``radius`` (m) around ``centre`` with an initial velocity."""

    centre: tuple[float, ...]
    radius: float
    velocity: tuple[float, ...] | None = None

    def contains(self, x: np.ndarray) -> np.ndarray:
        """Which of the points ``x`` (shape ``(M, >= d)``) lie in the ball; bool ``(M,)``."""
        d = len(self.centre)
        return np.sum((x[:, :d] - np.asarray(self.centre)) ** 2, axis=1) <= self.radius**2

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper corner of the bounding box, m."""
        c = np.asarray(self.centre, dtype=float)
        return c - self.radius, c + self.radius


@dataclass(frozen=True)
class Scene:
    """A FLIP scene in the unit box: initial fluid, static solids, gravity (m/s², along −y)."""

    about: str
    gravity: float
    fluids: tuple[Box | Ball, ...]
    solids: tuple[Box, ...]
    cells: int
    """Default cells per axis."""


# Geometry from the fluid-sim-lb configs (Birdshot §7.1 ran the same FLIP setup as [SHQL18]):
# `configs/dam.txt` and `configs/sphere-drop.txt`. The 2-D variants are the x-y cross-section,
# with the solids that only exist at other depths left out.
_SCENES: dict[str, dict[int, Scene]] = {
    "two-way-dambreak": {
        3: Scene(
            "two columns fall and collapse toward each other over floor steps (configs/dam.txt)",
            9.8,
            (
                Box((0.0, 0.125, 0.0), (0.375, 0.75, 0.375), (0.0, -2.0, 0.0)),
                Box((0.75, 0.25, 0.75), (1.0, 0.75, 1.0), (0.0, -1.0, 0.0)),
            ),
            (
                Box((0.5, 0.0, 0.0), (0.625, 0.125, 0.375)),  # obstacle 1
                Box((0.0, 0.0, 0.5), (0.375, 0.125, 0.625)),  # obstacle 2
                Box((0.75, 0.0, 0.75), (1.0, 0.1875, 1.0)),  # bottom of dam 2
                Box((0.5, 0.0, 0.5), (1.0, 0.125, 1.0)),  # step down for dam 2
            ),
            64,
        ),
        2: Scene(
            "two columns fall and collapse toward each other over floor steps (x-y section)",
            9.8,
            (
                Box((0.0, 0.125), (0.375, 0.75), (0.0, -2.0)),
                Box((0.75, 0.25), (1.0, 0.75), (0.0, -1.0)),
            ),
            (
                Box((0.5, 0.0), (0.625, 0.125)),
                Box((0.75, 0.0), (1.0, 0.1875)),
                Box((0.5, 0.0), (1.0, 0.125)),
            ),
            128,
        ),
    },
    "sphere-drop": {
        3: Scene(
            "a ball of water falls into a thin pool walled at x, z = 0.75 "
            "(configs/sphere-drop.txt)",
            6.0,
            (
                Ball((0.3, 0.8, 0.4), 0.2, (0.0, -1.5, 0.0)),
                Box((0.0, 0.0, 0.0), (0.75, 0.0625, 0.75), (0.0, 0.0, 0.0)),
            ),
            (
                Box((0.625, 0.0, 0.0), (1.0, 0.03125, 1.0)),
                Box((0.0, 0.0, 0.625), (1.0, 0.03125, 1.0)),
                Box((0.75, 0.0, 0.0), (0.8125, 1.0, 1.0)),
                Box((0.0, 0.0, 0.75), (1.0, 1.0, 0.8125)),
            ),
            64,
        ),
        2: Scene(
            "a disc of water falls into a thin pool walled at x = 0.75 (x-y section)",
            6.0,
            (
                Ball((0.3, 0.8), 0.2, (0.0, -1.5)),
                Box((0.0, 0.0), (0.75, 0.0625), (0.0, 0.0)),
            ),
            (
                Box((0.625, 0.0), (1.0, 0.03125)),
                Box((0.75, 0.0), (0.8125, 1.0)),
            ),
            128,
        ),
    },
    "dambreak": {
        3: Scene(
            "validation: one 0.25 × 0.5 column collapses along the floor (Martin & Moyce 1952)",
            9.8,
            (Box((0.0, 0.0, 0.0), (0.25, 0.5, 1.0), (0.0, 0.0, 0.0)),),
            (),
            64,
        ),
        2: Scene(
            "validation: one 0.25 × 0.5 column collapses along the floor (Martin & Moyce 1952)",
            9.8,
            (Box((0.0, 0.0), (0.25, 0.5), (0.0, 0.0)),),
            (),
            128,
        ),
    },
}

SCENES: dict[str, str] = {name: dims[3].about for name, dims in _SCENES.items()}
"""Scene name → one-line description (3-D wording; 2-D runs the x-y cross-section)."""


def scene_spec(name: str, ndim: int) -> Scene:
    """The :class:`Scene` ``name`` in ``ndim`` dimensions; unknown names list the valid ones."""
    if name not in _SCENES:
        raise InputError("scene", f"unknown FLIP scene {name!r}", f"one of {', '.join(SCENES)}")
    if ndim not in (2, 3):
        raise InputError("parts", f"gives {ndim} dimensions", "2 or 3")
    return _SCENES[name][ndim]


# --- input checks ------------------------------------------------------------------------------


def _check_parts(parts: Sequence[int]) -> tuple[int, ...]:
    try:
        values = tuple(parts)
    except TypeError:
        raise InputError("parts", f"got {parts!r}", "2 or 3 partition counts") from None
    if len(values) not in (2, 3):
        raise InputError("parts", f"got {len(values)} values", "2 or 3 partition counts")
    return tuple(check_int(p, "parts") for p in values)


def _check_cells(cells: int | Sequence[int] | None, ndim: int, default: int) -> tuple[int, ...]:
    if cells is None:
        return (default,) * ndim
    if isinstance(cells, int | np.integer) and not isinstance(cells, bool):
        values: tuple = (cells,) * ndim
    else:
        try:
            values = tuple(cells)  # type: ignore[arg-type]
        except TypeError:
            raise InputError("cells", f"got {cells!r}", "an integer or one per axis") from None
    if len(values) != ndim:
        raise InputError("cells", f"got {len(values)} values", f"{ndim}, one per axis")
    values = tuple(check_int(c, "cells", minimum=MIN_CELLS) for c in values)
    if len(set(values)) != 1:
        raise InputError(
            "cells", f"got {values}", "the same count on every axis (cubic cells, unit box)"
        )
    return values


def _check_cfl(cfl: float) -> float:
    return check_number(cfl, "cfl", low=0, high=MAX_CFL, low_open=True)


# --- the solver --------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepStats:
    """What one :meth:`FlipSim.step` did.

    Attributes
    ----------
    dt, time
        The step's time step and the simulated time at its end, s.
    cg_iterations
        Iterations CG took; ``cg_converged`` whether it met :data:`CG_RTOL`.
    divergence
        Largest ``|∇·u|`` over the fluid cells after the projection, 1/s.
    relative_divergence
        The largest net outflow of a fluid cell over the largest sum of its face speeds
        (dimensionless; 0 for an exactly divergence-free field).
    fluid_cells
        Fluid cells of the step.
    seconds
        Measured seconds of each phase (keys :data:`PARTICLE_PHASES` + :data:`GRID_PHASES`).
    fluid_per_part, particles_per_part
        int64, shape ``(P,)``: fluid cells and particles per partition at the start of the
        step, or ``None`` when the simulation has no partition grid.
    """

    dt: float
    time: float
    cg_iterations: int
    cg_converged: bool
    divergence: float
    relative_divergence: float
    fluid_cells: int
    seconds: dict[str, float]
    fluid_per_part: np.ndarray | None
    particles_per_part: np.ndarray | None


class FlipSim:
    """A FLIP water simulation of one scene on one core (see the module docstring).

    Parameters
    ----------
    scene
        A key of :data:`SCENES`.
    cells
        Cells per axis, 2 or 3 equal values (the dimension follows), each >= :data:`MIN_CELLS`.
        The cell size is ``dx = 1 / cells[0]`` m.
    parts
        Optional partitions per axis (same length as ``cells``): with it each step also counts
        fluid cells and particles per partition.
    flip_ratio
        FLIP share of the PIC/FLIP blend, in [0, 1].
    cfl
        CFL number in (0, :data:`MAX_CFL`].
    seed
        Seed of the particle jitter.

    Attributes
    ----------
    pos, vel
        float64, shape ``(N, 3)``: particle positions (m) and velocities (m/s); a 2-D run
        keeps ``z = dx/2`` and zero z-velocity. :attr:`positions` and :attr:`velocities` are
        the ``(N, d)`` views.
    u
        The three face-velocity arrays ``[u, v, w]`` (m/s), shapes ``(nx+1, ny, nz)``,
        ``(nx, ny+1, nz)``, ``(nx, ny, nz+1)``; ``nz = 1`` in 2-D.
    phi
        float64, shape ``(nx, ny, nz)``: the last projection's ``p·dt/ρ`` (m²/s), 0 off fluid.
    solid
        bool, shape ``(nx, ny, nz)``: cells whose centre lies in a solid box.
    time, n_steps
        Simulated time (s) and steps taken.
    """

    def __init__(
        self,
        scene: str,
        cells: Sequence[int],
        *,
        parts: Sequence[int] | None = None,
        flip_ratio: float = FLIP_RATIO,
        cfl: float = CFL,
        seed: SeedLike = 0,
    ) -> None:
        try:
            ndim = len(cells)
        except TypeError:
            raise InputError("cells", f"got {cells!r}", "2 or 3 cell counts") from None
        if ndim not in (2, 3):
            raise InputError("cells", f"got {ndim} values", "2 or 3 cell counts")
        self.spec = scene_spec(scene, ndim)
        self.scene = scene
        self.cells = _check_cells(cells, ndim, self.spec.cells)
        self.ndim = ndim
        self.flip_ratio = check_probability(flip_ratio, "flip_ratio", allow_zero=True)
        self.cfl = _check_cfl(cfl)
        rng = as_generator(seed)
        self.dx = 1.0 / self.cells[0]
        self.shape: tuple[int, int, int] = (
            self.cells if ndim == 3 else (self.cells[0], self.cells[1], 1)
        )  # type: ignore[assignment]
        self.solid = self._solid_mask()
        self._solid_u8 = self.solid.astype(np.uint8)
        # For every solid cell, the index of the nearest non-solid cell (identity elsewhere).
        self._nearest = np.ascontiguousarray(
            distance_transform_edt(self.solid, return_distances=False, return_indices=True),
            dtype=np.int64,
        )
        self._wall_below, self._wall_above = self._wall_faces()
        self._fixed = [lo | hi for lo, hi in zip(self._wall_below, self._wall_above, strict=True)]
        self.pos, self.vel = self._seed_particles(rng)
        nx, ny, nz = self.shape
        self.u = [
            np.zeros((nx + 1, ny, nz)),
            np.zeros((nx, ny + 1, nz)),
            np.zeros((nx, ny, nz + 1)),
        ]
        self._weights = [np.zeros_like(g) for g in self.u]
        self.phi = np.zeros(self.shape)
        self.time = 0.0
        self.n_steps = 0
        self.parts: tuple[int, ...] | None = None
        self._cell_part: np.ndarray | None = None
        if parts is not None:
            self.parts = _check_parts(parts)
            check_grid(self.cells, self.parts, "parts")
            self._cell_part = self._partition_of_cells()
        kernels.warm_up()

    # --- set-up --------------------------------------------------------------------------------

    def _cell_centres(self) -> np.ndarray:
        """Cell centres, shape ``(nx·ny·nz, 3)``, C order, m."""
        axes = [(np.arange(n) + 0.5) * self.dx for n in self.shape]
        return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)

    def _solid_mask(self) -> np.ndarray:
        centres = self._cell_centres()
        solid = np.zeros(len(centres), dtype=bool)
        for box in self.spec.solids:
            solid |= box.contains(centres)
        return solid.reshape(self.shape)

    def _wall_faces(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Per component, faces with a wall below and faces with a wall above, bool.

        "Below" is the face's lower-index side along its own axis; the box's faces count as
        walls, and so does every face touching a solid cell.
        """
        below, above = [], []
        for a in range(3):
            shape = tuple(n + (a == b) for b, n in enumerate(self.shape))
            lo_wall = np.zeros(shape, dtype=bool)
            hi_wall = np.zeros(shape, dtype=bool)
            lo, hi, inner = _sides(a)
            lo_wall[(*lo[:a], 0)] = True  # the box's low face
            hi_wall[(*hi[:a], -1)] = True  # the box's high face
            lo_wall[inner] |= self.solid[lo]  # a solid cell below an interior face
            hi_wall[inner] |= self.solid[hi]  # a solid cell above it
            below.append(lo_wall)
            above.append(hi_wall)
        return below, above

    def _constrain(self, a: int, g: np.ndarray) -> None:
        """Wall condition on component ``a``'s faces ``g``, in place.

        A face between two walls gets 0. A face with a wall on one side keeps its velocity only
        where it points away from the wall (the fluid may separate) and gets 0 where it points
        into it: a cheap stand-in for the inequality ``u·n >= 0`` that stops water sticking to
        a ceiling or wall it leaves, as the sphere-drop ball (touching the lid at y = 1) would.
        """
        lo, hi = self._wall_below[a], self._wall_above[a]
        np.copyto(g, 0.0, where=lo & hi)
        np.maximum(g, 0.0, out=g, where=lo & ~hi)
        np.minimum(g, 0.0, out=g, where=hi & ~lo)

    def _seed_particles(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``2^d`` jittered particles per sub-cell-resolved fluid cell; positions and velocities.

        Candidates are only generated in cells that meet a fluid shape's bounding box, so the
        set-up costs memory in proportion to the fluid, not the grid.
        """
        d, dx = self.ndim, self.dx
        cand = np.zeros(self.shape[:d], dtype=bool)
        for shape in self.spec.fluids:
            lo, hi = shape.bounds()
            sl = tuple(
                slice(max(math.floor(lo[a] / dx), 0), min(math.ceil(hi[a] / dx), n))
                for a, n in enumerate(self.shape[:d])
            )
            cand[sl] = True
        cand &= ~self.solid.reshape(cand.shape)
        cells = np.argwhere(cand).astype(float)  # (M, d), C order
        k = PARTICLES_PER_AXIS
        sub = np.indices((k,) * d).reshape(d, -1).T.astype(float)  # (k^d, d)
        jitter = rng.random((len(cells), len(sub), d))
        pts = ((cells[:, None, :] + (sub[None, :, :] + jitter) / k) * dx).reshape(-1, d)
        vel = np.full((len(pts), d), np.nan)
        for shape in reversed(self.spec.fluids):  # the first shape listed wins an overlap
            inside = shape.contains(pts)
            vel[inside] = np.asarray(shape.velocity or (0.0,) * d)
        keep = ~np.isnan(vel[:, 0])
        pos3 = np.full((int(keep.sum()), 3), 0.5 * dx)
        vel3 = np.zeros((int(keep.sum()), 3))
        pos3[:, :d] = pts[keep]
        vel3[:, :d] = vel[keep]
        if len(pos3) == 0:
            raise InputError("cells", f"{self.cells} leaves no fluid in {self.scene!r}", None)
        return pos3, vel3

    def _partition_of_cells(self) -> np.ndarray:
        """Partition id of every cell, flat C order over the 3-D cell array, int64."""
        assert self.parts is not None
        bounds = partition_bounds(self.cells, self.parts)
        owner = [
            np.searchsorted(b, np.arange(n), side="right") - 1
            for b, n in zip(bounds, self.cells, strict=True)
        ]
        ids = np.ravel_multi_index(np.meshgrid(*owner, indexing="ij"), self.parts)
        return ids.reshape(-1).astype(np.int64)  # a 2-D grid has nz = 1: same flat order

    # --- accessors -----------------------------------------------------------------------------

    @property
    def n_particles(self) -> int:
        """Number of particles (constant over the run)."""
        return len(self.pos)

    @property
    def positions(self) -> np.ndarray:
        """Particle positions, shape ``(N, d)``, m (a view)."""
        return self.pos[:, : self.ndim]

    @property
    def velocities(self) -> np.ndarray:
        """Particle velocities, shape ``(N, d)``, m/s (a view)."""
        return self.vel[:, : self.ndim]

    def _flat_cell(self) -> np.ndarray:
        """Flat cell index of each particle, int64 ``(N,)``."""
        idx = np.minimum((self.pos * (1.0 / self.dx)).astype(np.int64), np.array(self.shape) - 1)
        ny, nz = self.shape[1], self.shape[2]
        return (idx[:, 0] * ny + idx[:, 1]) * nz + idx[:, 2]

    def fluid_mask(self) -> np.ndarray:
        """Cells holding a particle now (never solid), bool, shape ``cells``."""
        counts = np.bincount(self._flat_cell(), minlength=self.solid.size)
        fluid = (counts.reshape(self.shape) > 0) & ~self.solid
        return fluid.reshape(self.cells)

    def face_velocities(self) -> tuple[np.ndarray, ...]:
        """The ``d`` face-velocity arrays (m/s), 3-D shapes (a 2-D grid has ``nz = 1``)."""
        return tuple(self.u[: self.ndim])

    # --- one step ------------------------------------------------------------------------------

    def _dt(self) -> float:
        vmax = math.sqrt(float(np.max(np.einsum("ij,ij->i", self.vel, self.vel))))
        return min(
            FRAME, self.cfl * self.dx / (vmax + math.sqrt(5.0 * self.spec.gravity * self.dx))
        )

    def step(self) -> StepStats:
        """Advance one time step; returns what it measured."""
        clock = time.perf_counter
        seconds = dict.fromkeys(PARTICLE_PHASES + GRID_PHASES, 0.0)
        dx = self.dx
        dt = self._dt()

        t0 = clock()
        flat = self._flat_cell()
        counts = np.bincount(flat, minlength=self.solid.size)
        fluid = (counts.reshape(self.shape) > 0) & ~self.solid
        t1 = clock()
        seconds["bin"] = t1 - t0
        fluid_pp = particles_pp = None
        if self._cell_part is not None:  # bookkeeping for the trace, outside the timed phases
            n_parts = math.prod(self.parts or ())
            fluid_pp = np.bincount(self._cell_part[fluid.reshape(-1)], minlength=n_parts)
            particles_pp = np.bincount(self._cell_part[flat], minlength=n_parts)

        t1 = clock()
        u, wts = self.u, self._weights
        kernels.p2g(self.pos, self.vel, dx, u[0], u[1], u[2], wts[0], wts[1], wts[2])
        t2 = clock()
        seconds["p2g"] = t2 - t1

        for g, wt, fixed in zip(u, wts, self._fixed, strict=True):
            kernels.extrapolate(g, ((wt > 0.0) & ~fixed).view(np.uint8), 1)
        old = [g.copy() for g in u]
        t3 = clock()
        seconds["extrapolate"] = t3 - t2

        u[1] -= self.spec.gravity * dt
        for a, g in enumerate(u):
            self._constrain(a, g)
        t4 = clock()
        seconds["forces"] = t4 - t3

        iterations, converged, div, rel_div = self._project(fluid, dt)
        t5 = clock()
        seconds["pressure"] = t5 - t4

        layers = math.ceil(self.cfl) + 2
        for a, (g, fixed) in enumerate(zip(u, self._fixed, strict=True)):
            kernels.extrapolate(g, (self._next_to(fluid, a) & ~fixed).view(np.uint8), layers)
            self._constrain(a, g)
        delta = [g - o for g, o in zip(u, old, strict=True)]
        t6 = clock()
        seconds["extrapolate"] += t6 - t5

        kernels.g2p(
            self.pos, self.vel, dx, u[0], u[1], u[2], delta[0], delta[1], delta[2], self.flip_ratio
        )
        t7 = clock()
        seconds["g2p"] = t7 - t6

        kernels.advect_rk2(self.pos, dx, dt, u[0], u[1], u[2], self._solid_u8, self._nearest)
        seconds["advect"] = clock() - t7

        self.time += dt
        self.n_steps += 1
        return StepStats(
            dt=dt,
            time=self.time,
            cg_iterations=iterations,
            cg_converged=converged,
            divergence=div,
            relative_divergence=rel_div,
            fluid_cells=int(fluid.sum()),
            seconds=seconds,
            fluid_per_part=fluid_pp,
            particles_per_part=particles_pp,
        )

    @staticmethod
    def _next_to(fluid: np.ndarray, a: int) -> np.ndarray:
        """Faces of axis ``a`` with a fluid cell on at least one side, bool."""
        shape = list(fluid.shape)
        shape[a] += 1
        out = np.zeros(shape, dtype=bool)
        lo, hi, _ = _sides(a)
        out[lo] |= fluid  # the cell above face i is cell i
        out[hi] |= fluid  # the cell below face i + 1 is cell i
        return out

    def _flux(self) -> np.ndarray:
        """Net outflow of every cell, ``Σ_faces ±u`` (m/s; divergence × dx)."""
        u, v, w = self.u
        return (u[1:] - u[:-1]) + (v[:, 1:] - v[:, :-1]) + (w[:, :, 1:] - w[:, :, :-1])

    def _project(self, fluid: np.ndarray, dt: float) -> tuple[int, bool, float, float]:
        """Make the face velocities divergence-free over ``fluid``; returns CG and div stats."""
        dx = self.dx
        n = int(fluid.sum())
        if n == 0:
            return 0, True, 0.0, 0.0
        idx = np.full(self.shape, -1, dtype=np.int64)
        idx[fluid] = np.arange(n)
        open_ = ~self.solid
        diag = np.zeros(self.shape)
        rows, cols = [], []
        for a in range(3):
            lo, hi, _ = _sides(a)
            # Each non-solid neighbour (fluid, or air with φ = 0) adds 1 to the diagonal.
            diag[lo] += open_[hi]
            diag[hi] += open_[lo]
            both = fluid[lo] & fluid[hi]
            rows.append(idx[lo][both])
            cols.append(idx[hi][both])
        r = np.concatenate(rows)
        c = np.concatenate(cols)
        d = diag[fluid]
        b = -dx * self._flux()[fluid]
        # A fluid cell walled in on every side has no equation: pin its pressure to 0.
        walled = d == 0.0
        d[walled] = 1.0
        b[walled] = 0.0
        ids = np.arange(n)
        A = sp.csr_matrix(
            (
                np.concatenate([d, -np.ones(2 * len(r))]),
                (np.concatenate([ids, r, c]), np.concatenate([ids, c, r])),
            ),
            shape=(n, n),
        )
        A.sort_indices()
        indptr = A.indptr.astype(np.int64)
        indices = A.indices.astype(np.int64)
        data = A.data
        prec = kernels.mic0_factor(indptr, indices, data, MIC_TAU, MIC_SIGMA)
        x = np.ascontiguousarray(self.phi[fluid])  # warm start from the previous pressure
        iterations, converged = kernels.pcg(indptr, indices, data, prec, b, x, CG_RTOL, CG_MAXITER)
        phi = np.zeros(self.shape)
        phi[fluid] = x
        self.phi = phi
        speed = np.zeros(self.shape)
        for a, (g, fixed) in enumerate(zip(self.u, self._fixed, strict=True)):
            lo, hi, inner = _sides(a)
            move = (fluid[lo] | fluid[hi]) & ~fixed[inner]
            g[inner] -= np.where(move, (phi[hi] - phi[lo]) / dx, 0.0)
            speed += np.abs(g[lo]) + np.abs(g[hi])  # the cell's two faces along a
        worst = float(np.max(np.abs(self._flux()[fluid])))
        scale = float(np.max(speed[fluid]))
        return iterations, converged, worst / dx, worst / scale if scale > 0.0 else 0.0


# --- the trace ---------------------------------------------------------------------------------


def make_trace(
    scene: str,
    parts: Sequence[int],
    steps: int,
    *,
    cells: int | Sequence[int] | None = None,
    seed: SeedLike = 0,
    progress: Callable[[int, int], None] | None = None,
    flip_ratio: float = FLIP_RATIO,
    cfl: float = CFL,
) -> Workload:
    """Run a FLIP scene and record its per-partition cost trace.

    Parameters
    ----------
    scene
        A key of :data:`SCENES`.
    parts
        Partitions per axis, 2 or 3 values; the dimension follows (Birdshot used 16×8×16).
    steps
        Time steps to run and record, >= 1.
    cells
        Cells per axis (an integer, or one equal value per axis, >= :data:`MIN_CELLS` and >=
        the partitions on that axis); default the scene's (64 in 3-D, 128 in 2-D).
    seed
        Seed of the particle jitter.
    progress
        Called as ``progress(done, steps)`` after each step.
    flip_ratio, cfl
        Solver parameters (see :class:`FlipSim`).

    Returns
    -------
    Workload
        ``cost`` (steps, P) in measured seconds attributed by the rule of the module
        docstring, ``work`` (steps, P) int64 fluid cells per partition, the grid halo.
    """
    parts_t = _check_parts(parts)
    n_steps = check_int(steps, "steps")
    if progress is not None and not callable(progress):
        raise InputError("progress", f"got {progress!r}", "a callable(done, total) or None")
    ndim = len(parts_t)
    shape = _check_cells(cells, ndim, scene_spec(scene, ndim).cells)
    check_grid(shape, parts_t, "parts")
    sim = FlipSim(scene, shape, parts=parts_t, flip_ratio=flip_ratio, cfl=cfl, seed=seed)
    n_parts = math.prod(parts_t)
    cost = np.zeros((n_steps, n_parts))
    work = np.zeros((n_steps, n_parts), dtype=np.int64)
    n = sim.n_particles
    for s in range(n_steps):
        st = sim.step()
        assert st.fluid_per_part is not None and st.particles_per_part is not None
        t_particles = sum(st.seconds[k] for k in PARTICLE_PHASES)
        t_grid = sum(st.seconds[k] for k in GRID_PHASES)
        cost[s] = t_particles * st.particles_per_part / n + t_grid * st.fluid_per_part / max(
            st.fluid_cells, 1
        )
        work[s] = st.fluid_per_part
        if progress is not None:
            progress(s + 1, n_steps)
    halo = grid_halo(shape, parts_t, ghost=HALO_GHOST, cell_bytes=halo_cell_bytes(ndim))
    return Workload(shape, parts_t, cost, halo, "s", work, "flip", scene)
