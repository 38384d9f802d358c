"""Fronts from point sources, computed only in a narrow band (Lassen style), 2-D and 3-D.

LLNL's Lassen tracks fronts that leave point sources placed on the diagonal plane
``x + y + z = 1`` of a Cartesian mesh of the unit cube, every 20 zones; nearly all of its work
is in a narrow band around the fronts, and every step ends with a global ``min`` reduction of
the time step (Birdshot §7.1). This app keeps that shape of computation with open physics:

Model
-----
Each cell's arrival time ``T`` (s) solves the eikonal equation ``|∇T| = 1/F`` (``F`` the front
speed, m/s, per cell) with ``T = |x - s|/F`` in the cells within ``radius`` zones of a source
``s`` (Lassen's source radius). The front at time ``t`` is the level set ``T = t``.

Scheme
------
- **Update**: the first-order Godunov upwind discretisation (the one fast marching solves):
  for sorted upwind neighbour times ``m_1 <= m_2 <= ...`` (the smaller of the two neighbours
  per axis), ``T`` is the largest root of ``sum_k ((T - m_k)/h_k)^2 = 1/F^2`` over the first
  ``k`` axes, taking more axes while the root exceeds the next ``m``.
- **Narrow band**: a cell is *reached* once ``T <= t`` (its time is final), *far* while it and
  its face neighbours have no time, and otherwise in the *band*. Each step every band cell
  recomputes its time from its neighbours' times of the previous step (a Jacobi sweep:
  neighbours are read from a halo exchange, never from this step's updates, so the result
  does not depend on the partitioning) and keeps it if it is smaller and within ``band``
  zones of the front (``T <= t + dt + band h / F``). Only band cells cost work.
- **Time step**: each partition proposes ``dt = CFL h / max F`` over its band cells (no
  proposal without band cells) and a global ``min`` reduction picks the step, as in Lassen.
  With ``CFL <= 1/sqrt(d)`` the front crosses at most ``1/sqrt(d)`` of a zone a step, slower
  than the one zone a step at which the Jacobi sweep carries information, so every cell gets
  its final Godunov time before it is reached (the same times fast marching gives). A larger
  ``CFL`` lets the front outrun the band; the run then stops with a
  :class:`~grapeshot.model.program.SimulationError` naming the step, partition and cell.

Scenes (:data:`SCENES`): ``diagonal`` (Lassen's sources on the diagonal), ``corner`` (one source
in the corner at the origin: one front sweeping the whole domain) and ``layered`` (diagonal
sources, the front half as fast where ``y > 0.5``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from grapeshot.model.errors import InputError, check_positive_number
from grapeshot.model.program import (
    Block,
    Box,
    Context,
    Exchange,
    Phase,
    Program,
    Reduction,
    SimulationError,
)
from grapeshot.model.seed import as_generator

SCENES: dict[str, str] = {
    "diagonal": "point sources every 20 zones on the diagonal x+y=1 (2-D) or x+y+z=1 (3-D) of "
    "the unit square/cube, speed 1 (Lassen's set-up)",
    "corner": "one point source at the origin corner, speed 1: a single front sweeps the domain",
    "layered": "the diagonal sources, speed 1 where y < 0.5 and 0.5 above: fronts refract and "
    "the global min of dt follows the fastest band",
}

#: Default cells per axis, by dimension.
DEFAULT_CELLS: dict[int, tuple[int, ...]] = {2: (160, 160), 3: (48, 48, 48)}
#: Courant number unless ``cfl=`` says otherwise (<= 1/sqrt(3), see the module notes).
DEFAULT_CFL = 0.5
#: Zones between neighbouring sources on the diagonal (Lassen: 20).
DEFAULT_SPACING = 20
#: Zones of a source's initial exact region (Lassen: 2).
DEFAULT_RADIUS = 2.0
#: Width of the band ahead of the front, zones.
DEFAULT_BAND = 4.0
#: Smallest cells per axis accepted.
MIN_CELLS = 4

#: Cell states in the ``state`` output field.
FAR, BAND, REACHED = 0, 1, 2


# ----------------------------------------------------------------------------- numba kernels


@njit(cache=True, nogil=True)
def godunov(m: np.ndarray, h: np.ndarray, slowness: float) -> float:
    """The Godunov upwind update of one cell.

    Parameters
    ----------
    m
        float64, ``(d,)``: the smaller neighbour time (s) per axis (``inf`` when neither
        neighbour has one); sorted in place.
    h
        float64, ``(d,)``: cell size per axis (m), permuted along with ``m``.
    slowness
        ``1/F``, s/m.

    Returns
    -------
    float
        The largest root ``T`` of ``sum_k ((T - m_k)/h_k)^2 = slowness^2`` over the upwind
        axes (those with ``m_k < T``); ``inf`` if no axis has a time.
    """
    d = m.shape[0]
    # Insertion sort of (m, h) by m: d <= 3.
    for a in range(1, d):
        k = a
        while k > 0 and m[k] < m[k - 1]:
            m[k], m[k - 1] = m[k - 1], m[k]
            h[k], h[k - 1] = h[k - 1], h[k]
            k -= 1
    if m[0] == math.inf:
        return math.inf
    t = m[0] + h[0] * slowness
    sa = 0.0
    sb = 0.0
    sc = 0.0
    for k in range(d):
        if k > 0:
            if m[k] == math.inf or t <= m[k]:
                break
        w = 1.0 / (h[k] * h[k])
        sa += w
        sb += w * m[k]
        sc += w * m[k] * m[k]
        if k > 0:
            disc = sb * sb - sa * (sc - slowness * slowness)
            if disc < 0.0:
                break
            t = (sb + math.sqrt(disc)) / sa
    return t


@njit(cache=True, nogil=True)
def wavefront_march(
    tt: np.ndarray,
    speed: np.ndarray,
    cells: np.ndarray,
    strides: np.ndarray,
    spacing: np.ndarray,
    t_old: float,
    t_new: float,
    band: float,
    cfl: float,
    pend_idx: np.ndarray,
    pend_val: np.ndarray,
    out: np.ndarray,
) -> None:
    """One narrow-band step on one partition.

    Parameters
    ----------
    tt
        float64, flat padded grid: arrival times (s), ``inf`` where unknown; ghosts hold the
        neighbours' times (or ``inf`` at walls). Updated in place (interior only).
    speed
        float64, like ``tt``: front speed ``F`` (m/s) per cell.
    cells
        int64, ``(n,)``: flat padded index of each interior cell.
    strides
        int64, ``(d,)``: flat-index stride of each axis.
    spacing
        float64, ``(d,)``: cell size per axis, m.
    t_old, t_new
        Time at the start and at the end of the step, s.
    band
        Band width ahead of the front, zones of the smallest cell size.
    cfl
        Courant number for the next step's proposal.
    pend_idx, pend_val
        Scratch, ``(n,)``: the updates of this sweep, applied after it (Jacobi).
    out
        float64, ``(4,)``: written with (band cells worked on, this partition's ``dt``
        proposal for the next step in s or ``inf``, first cell whose new time fell before
        ``t_old`` or -1, that time).
    """
    d = strides.shape[0]
    hmin = spacing.min()
    m = np.empty(d)
    h = np.empty(d)
    n_pend = 0
    worked = 0
    bad = -1
    bad_time = 0.0
    for c in range(cells.shape[0]):
        p = cells[c]
        told = tt[p]
        if told <= t_old:
            continue  # reached: final
        known = told < math.inf
        for a in range(d):
            s = strides[a]
            lo = tt[p - s]
            hi = tt[p + s]
            m[a] = lo if lo < hi else hi
            h[a] = spacing[a]
            if m[a] < math.inf:
                known = True
        if not known:
            continue  # far: nothing to propagate from yet
        worked += 1
        f = speed[p]
        cand = godunov(m, h, 1.0 / f)
        if cand < told and cand <= t_new + band * hmin / f:
            pend_idx[n_pend] = p
            pend_val[n_pend] = cand
            n_pend += 1
            if bad < 0 and cand < t_old * (1.0 - 1e-12):
                # An arrival before this step began: the front moved more than the one
                # zone a step the sweep can follow.
                bad = c
                bad_time = cand
    for k in range(n_pend):
        tt[pend_idx[k]] = pend_val[k]
    # The next step's proposal: CFL zones at the fastest speed among cells still ahead.
    fmax = 0.0
    for c in range(cells.shape[0]):
        p = cells[c]
        if t_new < tt[p] < math.inf and speed[p] > fmax:
            fmax = speed[p]
    out[0] = worked
    out[1] = cfl * hmin / fmax if fmax > 0.0 else math.inf
    out[2] = bad
    out[3] = bad_time


@njit(cache=True, nogil=True)
def _states(tt: np.ndarray, cells: np.ndarray, t: float, out: np.ndarray) -> None:
    for c in range(cells.shape[0]):
        v = tt[cells[c]]
        out[c] = 2 if v <= t else (1 if v < math.inf else 0)


# ----------------------------------------------------------------------------- scenes


def source_points(scene: str, cells: tuple[int, ...], spacing_zones: int) -> np.ndarray:
    """Source positions (m), ``(k, d)``, in the unit square/cube of ``cells`` zones per axis.

    ``corner``: the origin. Otherwise a lattice of step ``spacing_zones`` zones (of the first
    axis) on the hyperplane ``sum x = 1``: the first ``d - 1`` coordinates are
    ``(i + 1/2) * spacing_zones / cells[0]`` and the last makes the sum 1 (kept inside).
    """
    d = len(cells)
    if scene == "corner":
        return np.zeros((1, d))
    step = spacing_zones / cells[0]
    ticks = (np.arange(math.ceil(1.0 / step) + 1) + 0.5) * step
    ticks = ticks[ticks < 1.0]
    points = []
    for lead in itertools.product(ticks, repeat=d - 1):
        last = 1.0 - sum(lead)
        if 0.0 < last < 1.0:
            points.append((*lead, last))
    return np.asarray(points, dtype=np.float64).reshape(-1, d)


def speed_field(scene: str, centres: list[np.ndarray], speed: float) -> np.ndarray:
    """Front speed (m/s) at cell centres (``centres[a]`` broadcastable per axis)."""
    shape = np.broadcast_shapes(*(c.shape for c in centres))
    if scene == "layered":
        return np.broadcast_to(np.where(centres[1] < 0.5, speed, 0.5 * speed), shape).copy()
    return np.full(shape, speed)


# ----------------------------------------------------------------------------- the program


@dataclass(frozen=True)
class WavefrontConfig:
    """Validated settings of one wavefront run.

    Attributes
    ----------
    scene
        One of :data:`SCENES`.
    cells
        Cells per axis (2 or 3 values) over the unit square/cube.
    cfl
        Courant number: ``dt = cfl * h_min / max F`` over the band.
    band
        Band width ahead of the front, zones.
    spacing_zones
        Zones between neighbouring sources.
    radius
        Zones around a source initialised with the exact time.
    speed
        Front speed, m/s (the ``layered`` scene halves it where ``y > 0.5``).
    """

    scene: str
    cells: tuple[int, ...]
    cfl: float = DEFAULT_CFL
    band: float = DEFAULT_BAND
    spacing_zones: int = DEFAULT_SPACING
    radius: float = DEFAULT_RADIUS
    speed: float = 1.0

    @property
    def spacing(self) -> tuple[float, ...]:
        """Cell size per axis, m (the domain is the unit square/cube)."""
        return tuple(1.0 / n for n in self.cells)


class Wavefront(Program):
    """Narrow-band front propagation on a micro-partitioned grid (see the module notes).

    Block entries: ``T`` float64 ``box.padded_shape`` (arrival times, s), ``speed`` (same
    shape, m/s), ``cells`` int64 (flat padded index of each interior cell), ``pend_idx``,
    ``pend_val`` (scratch), ``out`` float64 ``(4,)`` (the last step's band cells, ``dt``
    proposal, failing cell and its time), ``clock`` float64 ``(1,)`` (time at the end of the
    last step, s).
    """

    name = "wavefront"
    ghost = 1
    cell_bytes = 8
    #: The field a snapshot shows.
    snapshot_field = "state"
    #: Its colour scale: the three states.
    snapshot_limits = (0.0, 2.0)

    def __init__(self, config: WavefrontConfig, parts_shape: tuple[int, ...]) -> None:
        self.config = config
        self.scene = config.scene
        self.domain_shape = tuple(config.cells)
        self.parts_shape = tuple(parts_shape)
        #: Cell size per axis, m.
        self.spacing = config.spacing
        self.sources = source_points(config.scene, config.cells, config.spacing_zones)
        centres = self._centres(tuple(0 for _ in self.domain_shape), self.domain_shape)
        # The fallback step once no band is left anywhere (every cell reached).
        self._idle_dt = (
            config.cfl
            * min(self.spacing)
            / float(speed_field(self.scene, centres, config.speed).max())
        )
        self.phases = (
            Phase("dt", self._propose, reduce=Reduction("dt", "min")),
            Phase("march", self._march, exchange=Exchange(("T",), 1)),
        )

    def _centres(self, lo: tuple[int, ...], hi: tuple[int, ...]) -> list[np.ndarray]:
        """Cell-centre coordinates (m) per axis for cells ``lo..hi``, shaped to broadcast."""
        d = len(lo)
        out = []
        for a in range(d):
            x = (np.arange(lo[a], hi[a]) + 0.5) * self.spacing[a]
            shape = [1] * d
            shape[a] = len(x)
            out.append(x.reshape(shape))
        return out

    # -- state -------------------------------------------------------------------------

    def init_block(self, box: Box) -> Block:
        """Exact times within ``radius`` zones of a source, ``inf`` elsewhere."""
        c = self.config
        g = box.ghost
        lo = tuple(x - g for x in box.lo)
        hi = tuple(x + g for x in box.hi)
        centres = self._centres(lo, hi)
        dist = np.full(box.padded_shape, np.inf)
        for s in self.sources:
            r2 = sum((centres[a] - s[a]) ** 2 for a in range(box.ndim))
            dist = np.minimum(dist, np.sqrt(r2))
        speed = speed_field(self.scene, centres, c.speed)
        tt = np.where(dist <= c.radius * min(self.spacing), dist / speed, np.inf)
        # Wall ghosts stay inf for ever (no time enters from outside); neighbour ghosts are
        # overwritten by every exchange before they are read.
        inner = np.zeros(box.padded_shape, dtype=bool)
        inner[box.interior()] = True
        tt[~inner] = np.inf
        cells = np.flatnonzero(inner.ravel()).astype(np.int64)
        tt = np.ascontiguousarray(tt)
        speed = np.ascontiguousarray(speed, dtype=np.float64)
        out = np.array([0.0, np.inf, -1.0, 0.0])
        # Step 0's proposal comes from the initial band, like every later one.
        ahead = np.isfinite(tt.ravel()[cells]) & (tt.ravel()[cells] > 0.0)
        if ahead.any():
            out[1] = c.cfl * min(self.spacing) / float(speed.ravel()[cells][ahead].max())
        return {
            "T": tt,
            "speed": speed,
            "cells": cells,
            "pend_idx": np.zeros(len(cells), dtype=np.int64),
            "pend_val": np.zeros(len(cells)),
            "out": out,
            "clock": np.zeros(1),
        }

    def work(self, block: Block, box: Box) -> int:
        """Band cells the last step worked on."""
        return int(block["out"][0])

    def output_fields(self, block: Block, box: Box) -> dict[str, np.ndarray]:
        """``T`` (arrival time, s; ``inf`` not yet known) and ``state`` (0 far, 1 band,
        2 reached) on the partition's cells."""
        states = np.empty(len(block["cells"]), dtype=np.uint8)
        _states(block["T"].ravel(), block["cells"], float(block["clock"][0]), states)
        return {
            "T": block["T"][box.interior()].copy(),
            "state": states.reshape(box.shape),
        }

    def dt(self, ctx: Context) -> float:
        """This step's time step, s: the reduced minimum, or the idle step without a band."""
        dt = ctx.values["dt"]
        return dt if dt < math.inf else self._idle_dt

    def advance(self, ctx: Context) -> float:
        """The step's ``dt``, s."""
        return self.dt(ctx)

    # -- phases ------------------------------------------------------------------------

    def _propose(self, block: Block, box: Box, ctx: Context) -> float:
        # Computed at the end of the previous march (or at init): the band is scanned once.
        return float(block["out"][1])

    def _march(self, block: Block, box: Box, ctx: Context) -> None:
        c = self.config
        tt = block["T"]
        t_new = ctx.time + self.dt(ctx)
        wavefront_march(
            tt.reshape(-1),
            block["speed"].reshape(-1),
            block["cells"],
            np.asarray(tt.strides, dtype=np.int64) // tt.itemsize,
            np.asarray(self.spacing, dtype=np.float64),
            ctx.time,
            t_new,
            c.band,
            c.cfl,
            block["pend_idx"],
            block["pend_val"],
            block["out"],
        )
        block["clock"][0] = t_new

    def check_block(self, block: Block, box: Box, ctx: Context, phase: str) -> None:
        """Raise :class:`SimulationError` if the front outran the band in the last march."""
        if phase != "march" or block["out"][2] < 0:
            return
        c = int(block["out"][2])
        local = np.unravel_index(int(block["cells"][c]), box.padded_shape)
        cell = tuple(int(box.lo[a] + local[a] - box.ghost) for a in range(box.ndim))
        d = box.ndim
        raise SimulationError(
            ctx.step,
            box.part,
            phase,
            f"the front outran the narrow band at cell {cell}: its arrival time "
            f"{block['out'][3]:.6g} s is before the step's start {ctx.time:.6g} s; the step "
            f"is too long (CFL {self.config.cfl:g}; the band follows up to 1/sqrt({d}) = "
            f"{1 / math.sqrt(d):.3f})",
        )


# ----------------------------------------------------------------------------- the app contract


def _ints(values: tuple[int, ...], where: str, minimum: int) -> tuple[int, ...]:
    values = tuple(values)
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < minimum:
            raise InputError(where, f"got {values}", f"integers >= {minimum}")
    return tuple(int(v) for v in values)


def make_program(
    scene: str,
    parts: tuple[int, ...],
    *,
    cells: int | tuple[int, ...] | None = None,
    seed: int = 0,
    cfl: float = DEFAULT_CFL,
    band: float = DEFAULT_BAND,
    spacing: int = DEFAULT_SPACING,
    radius: float = DEFAULT_RADIUS,
    speed: float = 1.0,
) -> Wavefront:
    """A wavefront program for ``scene`` split into ``parts`` partitions per axis.

    Parameters
    ----------
    scene
        One of :data:`SCENES`.
    parts
        Partitions per axis: 2 values for 2-D, 3 for 3-D.
    cells
        Cells per axis (as many as ``parts``, or one int for every axis; each
        ``>= MIN_CELLS``); default
        :data:`DEFAULT_CELLS` for the dimension.
    seed
        Accepted for the app contract and validated; the scenes are deterministic.
    cfl
        Courant number (> 0); above ``1/sqrt(d)`` the front may outrun the band and the run
        stops with :class:`~grapeshot.model.program.SimulationError`.
    band
        Band width ahead of the front, zones (>= 1).
    spacing
        Zones between neighbouring sources on the diagonal (>= 1).
    radius
        Zones around each source given the exact time (>= 1).
    speed
        Front speed, m/s (> 0).

    Raises
    ------
    InputError
        On an unknown scene, bad partition or cell counts, or a bad option.
    """
    if scene not in SCENES:
        raise InputError(
            "--scene", f"unknown wavefront scene {scene!r}", f"one of {', '.join(SCENES)}"
        )
    as_generator(seed)
    parts_shape = tuple(parts)
    if len(parts_shape) not in (2, 3):
        raise InputError("--parts", f"got {len(parts_shape)} values", "2 values (2-D) or 3 (3-D)")
    parts_shape = _ints(parts_shape, "--parts", 1)
    d = len(parts_shape)
    if cells is None:
        shape = DEFAULT_CELLS[d]
    else:
        shape = (cells,) * d if isinstance(cells, int | np.integer) else tuple(cells)
        if len(shape) != d:
            raise InputError(
                "--cells", f"got {len(shape)} values for {d}-D parts", f"{d} values like --parts"
            )
        shape = _ints(shape, "--cells", MIN_CELLS)
    cfl = check_positive_number(cfl, "cfl")
    band = check_positive_number(band, "band")
    radius = check_positive_number(radius, "radius")
    speed = check_positive_number(speed, "speed")
    if band < 1.0:
        raise InputError("band", f"got {band!r} zones", "at least 1 zone")
    if radius < 1.0:
        raise InputError("radius", f"got {radius!r} zones", "at least 1 zone")
    (spacing,) = _ints((spacing,), "spacing", 1)
    config = WavefrontConfig(scene, shape, cfl, band, spacing, radius, speed)
    program = Wavefront(config, parts_shape)
    if len(program.sources) == 0:
        raise InputError(
            "spacing", f"{spacing} zones leaves no source inside the domain", "a smaller spacing"
        )
    program.boxes()  # fails early, naming --parts, if the partitions do not fit the cells
    return program


def front_radius(arrival: np.ndarray, spacing: float, t: float) -> float:
    """Distance (m) along a line of cells where the arrival time ``arrival`` crosses ``t``.

    ``arrival[k]`` is the time at the centre of the ``k``-th cell along the line, the cells
    ``spacing`` m apart starting at ``spacing/2``; linear interpolation between centres.
    """
    x = (np.arange(len(arrival)) + 0.5) * spacing
    k = int(np.searchsorted(arrival, t))
    if k == 0 or k >= len(arrival):
        raise InputError("t", f"{t} s is outside the arrival times along the line", None)
    w = (t - arrival[k - 1]) / (arrival[k] - arrival[k - 1])
    return float(x[k - 1] + w * (x[k] - x[k - 1]))
