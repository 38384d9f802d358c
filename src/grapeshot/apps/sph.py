"""Weakly compressible SPH in the manner of PARSEC fluidanimate, 2-D and 3-D.

The domain is a box of ``cells`` cells of size ``h`` (m); ``h`` is both the cell size of the
cell lists and the support radius of the kernel (Wendland C2), so a particle interacts only
with particles of the ``3**d`` cells around its own, and the program's partitions own whole
SPH cells. Axis 0 is horizontal, axis 1 vertical (gravity points to ``-y``), axis 2 depth.

Each step runs three phases (see :class:`SPHProgram`):

1. ``density`` — halo exchange of the particles in the one-cell layer facing each neighbour
   (id, position, velocity); then density summation and the Tait equation of state.
2. ``forces`` — halo exchange of those particles' densities; then pressure, artificial
   viscosity and gravity accelerations; a global ``max`` reduction of the inverse time step
   (CFL and force criteria).
3. ``integrate`` — symplectic Euler with the reduced time step (or a fixed ``dt``); particles
   that left the box migrate to the neighbour owning their new cell.

Solid walls are mirror particles (free slip) built inside each partition from its own and
ghost particles; see :func:`grapeshot.apps.sph_kernels.build_neighbourhood`. Results are
bitwise identical for every partitioning (see the kernels module and ``docs/apps-sph.md``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from grapeshot.apps import sph_kernels as K
from grapeshot.model.errors import InputError
from grapeshot.model.program import (
    Block,
    Box,
    Context,
    Exchange,
    Migration,
    Offset,
    Phase,
    Program,
    Reduction,
    SimulationError,
    neighbour_offsets,
)
from grapeshot.model.seed import as_generator

# ---------------------------------------------------------------------------------------------
# Scenes


@dataclass(frozen=True)
class Slab:
    """A rectangular body of water: ``[lo, hi)`` per axis, fractions of the domain extent.

    The 3-D tuples are used as they are in 3-D and cut to their first two entries in 2-D.
    ``velocity`` is the initial velocity, m/s.
    """

    lo: tuple[float, float, float]
    hi: tuple[float, float, float]
    velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def contains(self, pos: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Which of the points ``pos`` (m, ``(n, d)``) lie inside."""
        d = pos.shape[1]
        lo = np.asarray(self.lo[:d]) * lengths
        hi = np.asarray(self.hi[:d]) * lengths
        return np.all((pos >= lo) & (pos < hi), axis=1)

    def top(self, lengths: np.ndarray) -> float:
        """Height of the body's top, m."""
        return float(self.hi[1] * lengths[1])


@dataclass(frozen=True)
class Ball:
    """A disc (2-D) or sphere (3-D) of water.

    ``centre`` is in fractions of the domain extent per axis; ``radius`` in fractions of the
    domain height (so the ball stays round whatever the aspect ratio); ``velocity`` in m/s.
    """

    centre: tuple[float, float, float]
    radius: float
    velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def contains(self, pos: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Which of the points ``pos`` (m, ``(n, d)``) lie inside."""
        d = pos.shape[1]
        centre = np.asarray(self.centre[:d]) * lengths
        r = self.radius * lengths[1]
        return ((pos - centre) ** 2).sum(axis=1) < r * r

    def top(self, lengths: np.ndarray) -> float:
        """Height of the ball's top, m."""
        return float((self.centre[1] + self.radius) * lengths[1])


@dataclass(frozen=True)
class Scene:
    """A named initial condition: bodies of water and default resolutions."""

    about: str
    cells_2d: tuple[int, int]
    cells_3d: tuple[int, int, int]
    bodies: tuple[Slab | Ball, ...]


_SCENES: dict[str, Scene] = {
    "dambreak": Scene(
        "a water column (1/4 of the tank's length, 1/2 of its height) against the x=0 wall "
        "collapses along the floor",
        (64, 32),
        (48, 24, 12),
        (Slab((0.0, 0.0, 0.0), (0.25, 0.5, 1.0)),),
    ),
    "two-way-dambreak": Scene(
        "two columns of different heights released from opposite walls (opposite corners "
        "in 3-D) meet mid-tank",
        (64, 32),
        (48, 24, 24),
        (
            Slab((0.0, 0.0, 0.0), (0.25, 0.6, 0.5)),
            Slab((0.75, 0.0, 0.5), (1.0, 0.4, 1.0)),
        ),
    ),
    "sphere-drop": Scene(
        "a ball of water (radius 0.15 of the height) thrown down at 1 m/s into a pool 0.1 of "
        "the height deep",
        (48, 32),
        (32, 32, 32),
        (
            Slab((0.0, 0.0, 0.0), (1.0, 0.1, 1.0)),
            Ball((0.4, 0.6, 0.45), 0.15, (0.0, -1.0, 0.0)),
        ),
    ),
}

#: Scene name → one-line description (the app registry's contract).
SCENES: dict[str, str] = {name: scene.about for name, scene in _SCENES.items()}

#: Fewest cells per axis a scene accepts: the 0.1-high pool must hold at least two layers of
#: particles (spacing 0.4 h).
MIN_CELLS = 8


@dataclass(frozen=True)
class Params:
    """Physical and numerical constants; every default lives here.

    Attributes
    ----------
    height
        Domain extent along gravity (axis 1), m. The cell size is ``h = height / cells[1]``
        and the other axes extend ``cells[a] * h``.
    spacing
        Initial particle spacing over ``h`` (particles sit on a lattice aligned with the
        walls); 0.4 gives about 20 neighbours in 2-D and 65 in 3-D.
    rho0
        Rest density, kg/m**3 (kg/m**2 in 2-D).
    gravity
        m/s**2, along ``-y``.
    mach
        Target Mach number: ``c0 = v_ref / mach`` with ``v_ref = max sqrt(2 g y_top + v0**2)``
        over the bodies, so density varies by about ``mach**2`` = 1 %.
    alpha
        Artificial viscosity coefficient (Monaghan), dimensionless.
    cfl
        ``dt = cfl / max_i max((c0 + |v_i|) / h, sqrt(|a_i| / h))``.
    jitter
        Amplitude of the seeded perturbation of the initial lattice, in particle spacings.
    dt
        Fixed time step, s; ``None`` uses the CFL time step.
    """

    height: float = 1.0
    spacing: float = 0.4
    rho0: float = 1000.0
    gravity: float = 9.81
    mach: float = 0.1
    alpha: float = 0.1
    cfl: float = 0.125
    jitter: float = 0.002
    dt: float | None = None


# ---------------------------------------------------------------------------------------------
# The program

#: Reasons :meth:`SPHProgram.check_block` reports, stored in ``block["_diag"][0]``.
_OK, _NONFINITE, _TOO_FAR = 0, 1, 2

#: Block entries the density phase builds for the force phase, dropped after it.
_SCRATCH = ("_x", "_v", "_src", "_targets", "_nbr_ptr", "_nbr")


def _wendland(q: np.ndarray) -> np.ndarray:
    """Unnormalised Wendland C2 profile ``(1 - q)**4 (1 + 4 q)`` on ``[0, 1)``, else 0."""
    q = np.asarray(q, dtype=np.float64)
    return np.where(q < 1.0, (1.0 - q) ** 4 * (1.0 + 4.0 * q), 0.0)


def _hash_uniform(key: int, ids: np.ndarray, axis: int) -> np.ndarray:
    """Uniform numbers in ``[0, 1)`` from (key, particle id, axis): splitmix64.

    A counter-based draw makes a particle's jitter a function of its id alone, so a
    partition generates its own particles without generating everyone else's.
    """
    z = ids.astype(np.uint64) * np.uint64(4) + np.uint64(axis)
    z = z + np.full(z.shape, key, dtype=np.uint64)  # uint64 arrays wrap silently
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * 2.0**-53


class SPHProgram(Program):
    """Weakly compressible SPH on a partitioned cell grid.

    Block entries
    -------------
    ``"p"``
        float64 ``(n, 3 + 3d)``: owned particles, ``id | x | v | a | rho | p`` (m, m/s,
        m/s**2, kg/m**d, Pa).
    ``"ghost<k>"``
        float64 ``(m, 2 + 2d)``: particles received from the neighbour at
        ``neighbour_offsets(d)[k]``, ``id | x | v | rho``.
    ``"_x"``, ``"_v"``, ``"_src"``, ``"_targets"``, ``"_nbr_ptr"``, ``"_nbr"``
        The sorted neighbourhood and neighbour lists the density phase built, reused by the
        force phase. Ghosts and these exist only between the two; the force phase drops them.
    ``"_work"``, ``"_diag"``, ``"_step"``
        The last density phase's candidate pairs, the last kernel's stability report, and
        the step of the last integration (for errors raised during migration).

    Parameters
    ----------
    scene
        A key of :data:`SCENES`.
    cells, parts
        Cells and partitions per axis (validated by :func:`make_program`).
    params
        Physical and numerical constants.
    seed
        Seeds the jitter of the initial lattice.
    """

    name = "sph"
    particle_fields = ("id", "x", "y", "z", "vx", "vy", "vz", "rho", "pressure", "mass")

    def __init__(
        self,
        scene: str,
        cells: tuple[int, ...],
        parts: tuple[int, ...],
        params: Params,
        seed: int,
    ) -> None:
        self.scene = scene
        self.domain_shape = tuple(cells)
        self.parts_shape = tuple(parts)
        self.ghost = 1
        self.params = params
        self.d = d = len(cells)
        self.h = params.height / cells[1]
        self.dom = np.asarray(cells, dtype=np.int64)
        self.lengths = self.dom * self.h
        self.dx = params.spacing * self.h
        # Lattice points per axis: (i + 0.5) dx for i = 0..N-1 stays inside [0, L).
        self.lattice = tuple(math.floor(L / self.dx - 0.5) + 1 for L in self.lengths)
        self.bodies = _SCENES[scene].bodies
        self.sigma = float(K.wendland_sigma(d, self.h))
        self.rho0 = params.rho0
        self.mass = self._calibrated_mass()
        v_ref = max(
            math.sqrt(2.0 * params.gravity * b.top(self.lengths) + sum(u * u for u in b.velocity))
            for b in self.bodies
        )
        self.c0 = v_ref / params.mach
        self.stiffness = self.c0**2 * self.rho0 / 7.0  # Tait B, Pa
        self.gravity = np.array([0.0, -params.gravity, 0.0])
        self.seed_key = int(as_generator(seed).integers(0, 2**63))
        self.cols = K.record_columns(d)  # X, V, A, RHO, P, NC
        self.ghost_cols = 2 + 2 * d
        self.offsets = neighbour_offsets(d)
        self._offset_index = {o: k for k, o in enumerate(self.offsets)}
        #: Offsets as int64 ``(k, d)`` tables, per tuple of offsets a partition packs.
        self._offset_tables: dict[tuple[Offset, ...], np.ndarray] = {}
        #: What a halo carries: id, position and velocity; then the density alone.
        self._state_columns = np.arange(1 + 2 * d, dtype=np.int64)
        self._rho_columns = np.array([self.cols[3]], dtype=np.int64)
        # Particle ids are lattice indices: (cell, id) sorts as cell * id_span + id.
        self.id_span = math.prod(self.lattice)
        if math.prod(cells) * self.id_span >= 2**63:
            raise InputError(
                "cells",
                f"got {math.prod(cells)} cells and up to {self.id_span} particles",
                "fewer cells times particles than 2**63 (a halo's sort key is one int64)",
            )
        self._ghost_names = tuple(f"ghost{k}" for k in range(len(self.offsets)))
        self._box_cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        # Halo messages carry about spacing**-d particles per cell, 1 + 2d floats each.
        self.cell_bytes = round(params.spacing**-d * (1 + 2 * d) * 8)
        self.phases = (
            Phase(
                "density",
                self._density,
                exchange=Exchange(
                    ("p",), 1, self._pack_state, self._unpack_state, pack_all=self._pack_state_all
                ),
            ),
            Phase(
                "forces",
                self._forces,
                exchange=Exchange(
                    ("rho",), 1, self._pack_rho, self._unpack_rho, pack_all=self._pack_rho_all
                ),
                reduce=Reduction("inv_dt", "max"),
            ),
            Phase(
                "integrate",
                self._integrate,
                migrate=Migration(self._emigrate, self._immigrate),
            ),
        )

    # -- setup ----------------------------------------------------------------------------------

    def _calibrated_mass(self) -> float:
        """Particle mass making the summed density of the initial lattice exactly ``rho0``.

        The kernel sum over a lattice of spacing ``dx`` is not exactly ``1 / dx**d``; without
        this calibration the water at rest would start compressed or stretched by about a
        percent, i.e. with a pressure of about ``7 %`` of ``B``, and jump.
        """
        reach = math.ceil(self.h / self.dx) + 1
        k = np.arange(-reach, reach + 1, dtype=np.float64)
        grids = np.meshgrid(*([k] * self.d), indexing="ij")
        r = np.sqrt(sum(g**2 for g in grids)) * self.dx
        total = float(_wendland(r / self.h).sum())
        return self.rho0 / (self.sigma * total)

    def init_block(self, box: Box) -> Block:
        """Owned particles of ``box``: the scene's lattice points whose (jittered) cell it owns."""
        d, dx = self.d, self.dx
        lo = np.asarray(box.lo)
        hi = np.asarray(box.hi)
        ranges = []
        for a in range(d):
            i0 = max(0, math.floor(lo[a] * self.h / dx) - 1)
            i1 = min(self.lattice[a], math.ceil(hi[a] * self.h / dx) + 1)
            ranges.append(np.arange(i0, max(i0, i1), dtype=np.int64))
        idx = np.stack([g.ravel() for g in np.meshgrid(*ranges, indexing="ij")], axis=1)
        centre = (idx + 0.5) * dx
        inside = np.zeros(len(idx), dtype=bool)
        vel = np.zeros((len(idx), d))
        for body in self.bodies:  # the first body containing a point gives its velocity
            sel = body.contains(centre, self.lengths) & ~inside
            vel[sel] = np.asarray(body.velocity[:d])
            inside |= sel
        idx, centre, vel = idx[inside], centre[inside], vel[inside]
        ids = np.ravel_multi_index(tuple(idx.T), self.lattice).astype(np.int64)
        pos = centre.copy()
        for a in range(d):
            u = _hash_uniform(self.seed_key, ids, a)
            pos[:, a] += self.params.jitter * dx * (2.0 * u - 1.0)
        cells = np.minimum(np.floor(pos / self.h).astype(np.int64), self.dom - 1)
        mine = np.all((cells >= lo) & (cells < hi), axis=1)
        X, V, _, RHO, _, NC = self.cols
        rec = np.zeros((int(mine.sum()), NC))
        rec[:, 0] = ids[mine]
        rec[:, X : X + d] = pos[mine]
        rec[:, V : V + d] = vel[mine]
        rec[:, RHO] = self.rho0
        return {
            "p": rec,
            "_work": np.zeros(1, dtype=np.int64),
            "_diag": np.zeros(3),
        }

    # -- halo exchanges -------------------------------------------------------------------------

    def _box_arrays(self, box: Box) -> tuple[np.ndarray, np.ndarray]:
        """The box's ``lo`` and ``hi`` as int64 arrays (cached per partition)."""
        got = self._box_cache.get(box.part)
        if got is None:
            got = (np.asarray(box.lo, dtype=np.int64), np.asarray(box.hi, dtype=np.int64))
            self._box_cache[box.part] = got
        return got

    def _pack_layers(
        self, block: Block, box: Box, offsets: Sequence[Offset], columns: np.ndarray
    ) -> list[np.ndarray]:
        """Flat float64 per offset: ``columns`` of the particles in the layer facing it,
        sorted by (global cell, id); all the layers in one compiled pass."""
        lo, hi = self._box_arrays(box)
        key = tuple(offsets)
        table = self._offset_tables.get(key)
        if table is None:
            table = np.asarray(key, dtype=np.int64).reshape(len(key), self.d)
            self._offset_tables[key] = table
        packed, ptr = K.pack_layers(
            block["p"], self.d, self.h, self.dom, lo, hi, table, columns, self.id_span
        )
        w = columns.size
        return [packed[ptr[j] * w : ptr[j + 1] * w] for j in range(len(key))]

    def _pack_state(self, block: Block, box: Box, offset: Offset) -> np.ndarray:
        """Flat float64 ``(m * (1 + 2d),)``: id, position, velocity of the facing layer."""
        return self._pack_layers(block, box, (offset,), self._state_columns)[0]

    def _pack_state_all(
        self, block: Block, box: Box, offsets: Sequence[Offset]
    ) -> list[np.ndarray]:
        """:meth:`_pack_state` for every offset of ``offsets``."""
        return self._pack_layers(block, box, offsets, self._state_columns)

    def _unpack_state(self, block: Block, box: Box, offset: Offset, payload: np.ndarray) -> None:
        """Replace the ghosts from ``offset`` (their density arrives with the next exchange)."""
        w = 1 + 2 * self.d
        if payload.size % w:
            raise InputError(
                f"sph halo from offset {offset} to partition {box.part}",
                f"got {payload.size} values",
                f"a multiple of {w} (id, position, velocity per particle)",
            )
        g = np.zeros((payload.size // w, self.ghost_cols))
        g[:, :w] = payload.reshape(-1, w)
        block[self._ghost_names[self._offset_index[offset]]] = g

    def _pack_rho(self, block: Block, box: Box, offset: Offset) -> np.ndarray:
        """Flat float64 ``(m,)``: densities of the facing layer, in :meth:`_pack_state` order."""
        return self._pack_layers(block, box, (offset,), self._rho_columns)[0]

    def _pack_rho_all(self, block: Block, box: Box, offsets: Sequence[Offset]) -> list[np.ndarray]:
        """:meth:`_pack_rho` for every offset of ``offsets``."""
        return self._pack_layers(block, box, offsets, self._rho_columns)

    def _unpack_rho(self, block: Block, box: Box, offset: Offset, payload: np.ndarray) -> None:
        """Fill the densities of the ghosts from ``offset``."""
        g = block[self._ghost_names[self._offset_index[offset]]]
        if payload.size != len(g):
            raise InputError(
                f"sph halo from offset {offset} to partition {box.part}",
                f"got {payload.size} densities for {len(g)} ghost particles",
                "one density per ghost sent by the density exchange",
            )
        g[:, -1] = payload

    def _ghosts(self, block: Block) -> np.ndarray:
        """All ghost records, concatenated in offset order, ``(m, 2 + 2d)``."""
        parts = [block[n] for n in self._ghost_names if n in block]
        if not parts:
            return np.zeros((0, self.ghost_cols))
        return np.concatenate(parts)

    # -- phases ---------------------------------------------------------------------------------

    def _density(self, block: Block, box: Box, ctx: Context) -> None:
        """Sort owned + ghost + mirror particles into cells; density and pressure of owned."""
        own = block["p"]
        # Check the owned state before it is used: a non-finite particle is reported by its
        # owner, here, before any neighbour's force pass would meet it through the halo.
        state_ok = np.isfinite(own[:, 1 : 1 + 2 * self.d]).all(axis=1)
        if not state_ok.all():
            self._report_nonfinite(block, own, np.where(state_ok, 0.0, np.nan))
            return
        ghost = self._ghosts(block)
        lo, hi = self._box_arrays(box)
        status, x, v, src, cell, start, targets, perm, pshape = K.build_neighbourhood(
            own, ghost, self.d, self.h, self.dom, self.lengths, lo, hi
        )
        if status != K.BUILD_OK:
            raise SimulationError(
                ctx.step,
                box.part,
                "density",
                "a particle lies outside the partition's cells and their one-cell ghost ring",
            )
        own = own[perm]
        rho = np.empty(len(own))
        cand, nbr_ptr, nbr = K.density_pass(
            x, cell, start, targets, pshape, lo, self.h, self.sigma, self.mass, rho
        )
        pres = np.empty(len(own))
        K.pressures(rho, self.rho0, self.stiffness, pres)
        _, _, _, RHO, P, _ = self.cols
        own[:, RHO] = rho
        own[:, P] = pres
        block["p"] = own
        block.update(_x=x, _v=v, _src=src, _targets=targets, _nbr_ptr=nbr_ptr, _nbr=nbr)
        block["_work"] = np.array([cand], dtype=np.int64)
        self._report_nonfinite(block, own, rho)

    def _forces(self, block: Block, box: Box, ctx: Context) -> float:
        """Accelerations of owned particles; returns this partition's inverse time step, 1/s."""
        own = block["p"]
        A, RHO = self.cols[2], self.cols[3]
        ghost = self._ghosts(block)
        base_rho = np.concatenate([own[:, RHO], ghost[:, -1]])
        acc = np.empty((len(own), 3))
        rate = K.force_pass(
            block["_x"],
            block["_v"],
            base_rho,
            block["_src"],
            block["_targets"],
            block["_nbr_ptr"],
            block["_nbr"],
            self.h,
            self.sigma,
            self.mass,
            self.rho0,
            self.stiffness,
            self.c0,
            self.params.alpha,
            self.gravity,
            acc,
        )
        own[:, A : A + self.d] = acc[:, : self.d]
        # Drop the step's scratch and ghosts: between steps a block is its particles alone,
        # which keeps checkpoints and partition moves between ranks small.
        for name in _SCRATCH + self._ghost_names:
            block.pop(name, None)
        self._report_nonfinite(block, own, acc.sum(axis=1))
        return rate / self.params.cfl

    def _integrate(self, block: Block, box: Box, ctx: Context) -> None:
        """Advance owned particles by one time step and reflect them at the walls."""
        own = block["p"]
        dt = self.time_step(ctx)
        max_cells, worst, bad = K.integrate(own, self.d, dt, self.h, self.lengths)
        block["_step"] = np.array([ctx.step], dtype=np.int64)  # for errors raised by _emigrate
        if bad >= 0:
            block["_diag"] = np.array([_NONFINITE, own[bad, 0], np.nan])
        elif max_cells >= 1.0:
            block["_diag"] = np.array([_TOO_FAR, own[worst, 0], max_cells])
        else:
            block["_diag"] = np.array([_OK, -1.0, max_cells])

    def _report_nonfinite(self, block: Block, own: np.ndarray, values: np.ndarray) -> None:
        """Record in ``block["_diag"]`` the first particle whose ``values`` is not finite."""
        finite = np.isfinite(values)
        if finite.all():
            block["_diag"] = np.array([_OK, -1.0, 0.0])
        else:
            first = int(np.argmin(finite))
            block["_diag"] = np.array([_NONFINITE, own[first, 0], np.nan])

    # -- migration ------------------------------------------------------------------------------

    def _emigrate(self, block: Block, box: Box) -> dict[Offset, np.ndarray]:
        """Remove the particles whose cell left the box; ``{offset: flat records}``.

        Whole records travel (acceleration, density and pressure included), so a migrated
        particle's output fields are those it would have had in a single partition.
        """
        own = block["p"]
        if len(own) == 0:
            return {}
        lo, hi = self._box_arrays(box)
        gc = K.global_cells(own, self.d, self.h, self.dom)
        off = (gc >= hi).astype(np.int64) - (gc < lo).astype(np.int64)
        leaving = off.any(axis=1)
        if not leaving.any():
            return {}
        far = (gc < lo - 1) | (gc > hi)
        if far.any():
            row = int(np.flatnonzero(far.any(axis=1))[0])
            raise SimulationError(
                int(block["_step"][0]),
                box.part,
                "integrate",
                f"particle {int(own[row, 0])} left for a cell more than one cell beyond the "
                "box; it cannot migrate to a neighbour",
            )
        # Encode offsets as base-3 numbers; in neighbour_offsets order they are increasing.
        code = np.zeros(len(own), dtype=np.int64)
        for a in range(self.d):
            code = code * 3 + off[:, a] + 1
        out: dict[Offset, np.ndarray] = {}
        leavers = own[leaving]
        leaver_code = code[leaving]
        all_offsets = list(itertools.product((-1, 0, 1), repeat=self.d))
        for c in np.unique(leaver_code):
            offset = all_offsets[int(c)]
            if box.neighbour(offset) is None:
                raise SimulationError(
                    int(block["_step"][0]),
                    box.part,
                    "integrate",
                    f"particles left the domain towards offset {offset}",
                )
            out[offset] = leavers[leaver_code == c].ravel()
        block["p"] = own[~leaving]
        return out

    def _immigrate(self, block: Block, box: Box, buffers: list[np.ndarray]) -> None:
        """Append arriving particles (whole records, see :meth:`_emigrate`)."""
        if buffers:
            nc = self.cols[5]
            block["p"] = np.concatenate([block["p"], *(b.reshape(-1, nc) for b in buffers)])

    # -- Program interface ------------------------------------------------------------------------

    def time_step(self, ctx: Context) -> float:
        """This step's ``dt``, s: the fixed one, or ``1 / values["inv_dt"]`` (CFL)."""
        if self.params.dt is not None:
            return self.params.dt
        return 1.0 / ctx.values["inv_dt"]

    def advance(self, ctx: Context) -> float:
        """Simulated seconds the step advanced."""
        return self.time_step(ctx)

    def work(self, block: Block, box: Box) -> int:
        """Candidate particle pairs the last density pass examined.

        For every owned particle, the particles (owned, ghost, mirror) of the ``3**d`` cells
        around it, less the cells wholly out of its reach: the count the candidate search
        runs over, about ``sum_c n_c sum_nb n_nb`` (the cost model of PARSEC fluidanimate).
        Zero for a partition without particles.
        """
        return int(block["_work"][0])

    def output_fields(self, block: Block, box: Box) -> dict[str, np.ndarray]:
        """Particle fields (1-D, with ``"id"``) and the grid field ``"count"``.

        Particles: ``id`` (int64), ``x``, ``y`` [, ``z``] (m), ``vx``, ``vy`` [, ``vz``]
        (m/s), ``rho`` (kg/m**d) and ``pressure`` (Pa) as of the last density phase, ``mass``.
        Grid: ``count``, int64 shaped like ``box.shape``, owned particles per cell.
        """
        own = block["p"]
        d = self.d
        X, V, _, RHO, P, _ = self.cols
        out: dict[str, np.ndarray] = {"id": own[:, 0].astype(np.int64)}
        for a, name in enumerate("xyz"[:d]):
            out[name] = own[:, X + a].copy()
            out["v" + name] = own[:, V + a].copy()
        out["rho"] = own[:, RHO].copy()
        out["pressure"] = own[:, P].copy()
        out["mass"] = np.full(len(own), self.mass)
        gc = K.global_cells(own, d, self.h, self.dom) - np.asarray(box.lo)
        flat = np.ravel_multi_index(tuple(gc.T), box.shape) if len(own) else np.zeros(0, int)
        out["count"] = np.bincount(flat, minlength=math.prod(box.shape)).reshape(box.shape)
        return out

    def check_block(self, block: Block, box: Box, ctx: Context, phase: str) -> None:
        """Raise :class:`SimulationError` on a non-finite value or a particle that jumped a cell."""
        code, pid, value = block["_diag"]
        if code == _OK:
            return
        what = {
            "density": "position, velocity or density",
            "forces": "acceleration",
            "integrate": "position or velocity",
        }.get(phase, "value")
        if code == _NONFINITE:
            problem = f"particle {int(pid)} has a non-finite {what} (the run blew up)"
        else:
            problem = (
                f"particle {int(pid)} moved {value:.2f} cells in one step "
                f"(dt = {self.time_step(ctx):.3g} s, h = {self.h:.3g} m); particles may cross "
                "at most one cell a step: lower dt or cfl"
            )
        raise SimulationError(ctx.step, box.part, phase, problem)


# ---------------------------------------------------------------------------------------------
# The app's entry point


def _check_shape(value: object, where: str, length: int | None) -> tuple[int, ...]:
    """``value`` as a tuple of positive ints (of ``length`` entries when given)."""
    bad = not isinstance(value, Sequence) or isinstance(value, str)
    items: tuple[int, ...] = ()
    if not bad:
        seq = list(value)  # type: ignore[arg-type]
        bad = any(isinstance(v, bool) or not isinstance(v, int | np.integer) for v in seq)
        if not bad:
            items = tuple(int(v) for v in seq)
            bad = any(v < 1 for v in items)
    want = f"{length}" if length is not None else "2 or 3"
    if (
        bad
        or (length is None and len(items) not in (2, 3))
        or (length is not None and len(items) != length)
    ):
        raise InputError(where, f"got {value!r}", f"{want} positive integers")
    return items


def make_program(
    scene: str,
    parts: Sequence[int],
    *,
    cells: Sequence[int] | None = None,
    seed: int = 0,
    dt: float | None = None,
    cfl: float = Params.cfl,
) -> SPHProgram:
    """The SPH program of ``scene`` on ``parts`` partitions per axis.

    Parameters
    ----------
    scene
        A key of :data:`SCENES`.
    parts
        Partitions per axis; 2 values for 2-D, 3 for 3-D.
    cells
        Cells per axis (default: the scene's); at least :data:`MIN_CELLS` each and at least
        one per partition. The domain is ``height`` = 1 m tall; ``h = 1 m / cells[1]``.
    seed
        Non-negative integer seeding the jitter of the initial particle lattice.
    dt
        Fixed time step, s (default: the CFL time step each step).
    cfl
        CFL number in ``(0, 0.5]``.

    Raises
    ------
    InputError
        On an unknown scene, malformed shapes, too few cells, more partitions than cells on
        an axis, or a bad ``dt``, ``cfl`` or ``seed``.
    """
    if not isinstance(scene, str) or scene not in _SCENES:
        raise InputError("scene", f"unknown SPH scene {scene!r}", f"one of: {', '.join(SCENES)}")
    parts_t = _check_shape(parts, "parts", None)
    d = len(parts_t)
    spec = _SCENES[scene]
    cells_t = (
        _check_shape(cells, "cells", d)
        if cells is not None
        else (spec.cells_2d if d == 2 else spec.cells_3d)
    )
    for a, (n, k) in enumerate(zip(cells_t, parts_t, strict=True)):
        if n < MIN_CELLS:
            raise InputError(
                "cells",
                f"got {n} cells on axis {a}",
                f"at least {MIN_CELLS} cells per axis for the scene's water to be resolved",
            )
        if k > n:
            raise InputError(
                "parts",
                f"got {k} partitions over {n} cells on axis {a}",
                "at most one partition per cell (partitions own whole SPH cells)",
            )
    if dt is not None:
        if isinstance(dt, bool) or not isinstance(dt, int | float) or not (0.0 < dt < math.inf):
            raise InputError("dt", f"got {dt!r}", "a finite time step > 0 s, or None for CFL")
        dt = float(dt)
    if isinstance(cfl, bool) or not isinstance(cfl, int | float) or not (0.0 < cfl <= 0.5):
        raise InputError("cfl", f"got {cfl!r}", "a number in (0, 0.5]")
    as_generator(seed)  # validates: a non-negative integer
    params = Params(dt=dt, cfl=float(cfl))
    return SPHProgram(scene, cells_t, parts_t, params, seed)
