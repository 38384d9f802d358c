"""Shallow water in 2-D with wet and dry cells: explicit finite volumes, cost where the water is.

Equations, on the horizontal plane ``(x, y)`` = axes ``(0, 1)``::

    ∂h/∂t  + ∂(hu)/∂x            + ∂(hv)/∂y            = 0
    ∂hu/∂t + ∂(hu² + g h²/2)/∂x  + ∂(huv)/∂y           = -g h ∂b/∂x - g n² |u| hu / h^(4/3)
    ∂hv/∂t + ∂(huv)/∂x           + ∂(hv² + g h²/2)/∂y  = -g h ∂b/∂y - g n² |u| hv / h^(4/3)

with depth ``h`` (m), velocity ``(u, v)`` (m/s), bed elevation ``b`` (m), Manning roughness
``n`` (s/m^(1/3)) and gravity ``g = 9.81 m/s²``.

Scheme
------
- **Space**: MUSCL reconstruction of depth, surface ``h + b`` and velocity with the minmod
  limiter, falling back to first order where any cell of the three-cell stencil is dry (the
  limiter keeps face depths ``>= 0``; the fallback keeps face velocities sane at the shoreline).
- **Bed**: hydrostatic reconstruction (Audusse, Bouchut, Bristeau, Klein & Perthame, SIAM J.
  Sci. Comput. 25, 2004) with its centred source term: positive, and a lake at rest stays at
  rest. Friction is applied implicitly per cell, so it can only slow the water.
- **Fluxes**: HLL with Davis wave speeds between wet states and the exact dry-bed speeds
  (``u ± 2c``) at a wet/dry face (Toro, *Shock-capturing methods for free-surface shallow
  flows*, 2001, §10.5). A face whose two cells are both dry carries no flux and is not
  computed: this is where the cost goes to zero.
- **Time**: Heun's method (SSP-RK2), two stages a step, each stage after a halo exchange of
  width 2 (the MUSCL stencil reaches two cells).
- **Time step**: every step starts with a global ``max`` reduction of the signal rate
  ``max((|u| + c)/dx, (|v| + c)/dy)`` (1/s, ``c = sqrt(g h)``) over wet cells, and
  ``dt = CFL / rate`` — the usual ``dt = CFL dx / max(|u| + sqrt(g h))`` with unequal spacings.
- **Dry threshold**: a cell with ``h <= h_dry`` is dry: its velocity is zero, its momentum is
  reset to zero after each stage, and it does not count as work. Mass is conserved to round-off
  (each face flux is computed from the same four cells by both cells it separates, so the
  update telescopes; a reflective wall's mirrored states give an exactly zero mass flux).
- **Walls**: reflective (ghost cells mirror the interior, normal momentum negated).

Every cell's arithmetic depends only on its 2-cell stencil and on the global ``dt``, and the
``dt`` reduction is a ``max``; so the fields are bitwise the same for every partition grid.

Scenes (:data:`SCENES`): ``dambreak``, ``two-way-dambreak`` and ``drop``; their sizes, beds and
default cells are in :data:`SCENE_SETUP`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numba import njit

from grapeshot.model.errors import InputError, check_positive_number
from grapeshot.model.program import (
    Batch,
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
from grapeshot.model.task_halos import batch_ends, task_begins

GRAVITY = 9.81  # m/s²
GHOST = 2  # the MUSCL stencil reaches two cells: faces i±1/2 need cells i-2 .. i+2

SCENES: dict[str, str] = {
    "dambreak": "a 1 m water column along the left wall released into a dry, flat 4 m x 1 m "
    "channel (Ritter's problem)",
    "two-way-dambreak": "two sheets of water (0.4 m and 0.25 m deep) released from opposite "
    "corners of a dry 4 m x 2 m bowl (1.6 m deep at the corners); they run down, collide and "
    "slosh about the bottom while the slopes dry (Manning n = 0.03)",
    "drop": "a Gaussian mound of water (1 m high, 0.15 m wide) spreading over a dry, flat "
    "2 m x 2 m floor",
}


#: A field of the scene at cell centres: ``fn(x, y, length) -> values`` (m; broadcastable
#: coordinate arrays in m, and the domain size per axis in m).
SceneField = Callable[[np.ndarray, np.ndarray, tuple[float, float]], np.ndarray]


def _flat(x: np.ndarray, y: np.ndarray, length: tuple[float, float]) -> np.ndarray:
    return 0.0 * x + 0.0 * y


def _bowl(x: np.ndarray, y: np.ndarray, length: tuple[float, float]) -> np.ndarray:
    # An elliptic paraboloid: 0 at the centre, 0.8 m mid-wall, 1.6 m in the corners.
    sx = (x - 0.5 * length[0]) / (0.5 * length[0])
    sy = (y - 0.5 * length[1]) / (0.5 * length[1])
    return 0.8 * (sx * sx + sy * sy)


def _column(x: np.ndarray, y: np.ndarray, length: tuple[float, float]) -> np.ndarray:
    return np.where(x < 0.25 * length[0], 1.0, 0.0) + 0.0 * y


def _two_sheets(x: np.ndarray, y: np.ndarray, length: tuple[float, float]) -> np.ndarray:
    # Sheets of even depth over the sloping floor, in opposite corners.
    left = (x < 0.2 * length[0]) & (y < 0.5 * length[1])
    right = (x > 0.8 * length[0]) & (y > 0.5 * length[1])
    return np.where(left, 0.4, 0.0) + np.where(right, 0.25, 0.0)


def _mound(x: np.ndarray, y: np.ndarray, length: tuple[float, float]) -> np.ndarray:
    # A Gaussian mound, cut to dry below 1 cm so the floor around it starts dry.
    r2 = (x - 0.35 * length[0]) ** 2 + (y - 0.55 * length[1]) ** 2
    mound = np.exp(-r2 / (2.0 * 0.15**2))
    return np.where(mound >= 0.01, mound, 0.0)


@dataclass(frozen=True)
class Scene:
    """How a scene starts.

    Attributes
    ----------
    cells
        Default cells per axis.
    length
        Domain size per axis, m.
    depth, bed
        Initial depth and bed elevation (m) at cell centres.
    manning
        Manning's roughness of the floor, s/m^(1/3) (0: frictionless).
    h_dry
        Default dry threshold, m. 1 µm on the flat floors, where nothing drains and a small
        threshold keeps the dry-bed front sharp; 1 mm in the bowl (the usual threshold of
        flood models), where the film left on a slope would otherwise count as wet for ever.
    """

    cells: tuple[int, int]
    length: tuple[float, float]
    depth: SceneField
    bed: SceneField = _flat
    manning: float = 0.0
    h_dry: float = 1e-6


#: The set-up of every scene in :data:`SCENES`.
SCENE_SETUP: dict[str, Scene] = {
    "dambreak": Scene((256, 64), (4.0, 1.0), _column),
    "two-way-dambreak": Scene(
        (256, 128), (4.0, 2.0), _two_sheets, bed=_bowl, manning=0.03, h_dry=1e-3
    ),
    "drop": Scene((128, 128), (2.0, 2.0), _mound),
}

#: Courant number used unless ``cfl=`` says otherwise. Heun + MUSCL-HLL keeps depths
#: non-negative up to about 0.5 in 2-D; 0.4 leaves a margin for the dry-bed speeds (u + 2c).
DEFAULT_CFL = 0.4
#: Smallest cells per axis a scene accepts.
MIN_CELLS = 4

#: Components of the state vector of a cell: depth (m), x- and y-momentum (m²/s).
H, HU, HV = 0, 1, 2
#: Components of a face record in the ``fx``/``fy`` arrays: mass flux (m²/s), normal momentum
#: flux as seen from the cell on the left / on the right of the face, tangential momentum flux
#: (m³/s²), then depth and bed reconstructed on each side (m).
F_MASS, F_NORMAL_L, F_NORMAL_R, F_TANGENT, F_HL, F_BL, F_HR, F_BR = range(8)
N_FACE = 8


# ----------------------------------------------------------------------------- numba kernels


@njit(cache=True, nogil=True)
def _minmod(a: float, b: float) -> float:
    if a * b <= 0.0:
        return 0.0
    return a if abs(a) < abs(b) else b


@njit(cache=True, nogil=True)
def _velocity(h: float, hq: float, h_dry: float) -> float:
    # A dry cell has no velocity: dividing a film's momentum by its depth would give
    # arbitrary speeds and collapse the time step.
    return hq / h if h > h_dry else 0.0


@njit(cache=True, nogil=True)
def _hll(
    hl: float, unl: float, utl: float, hr: float, unr: float, utr: float, grav: float
) -> tuple[float, float, float]:
    """HLL flux normal to a face: (mass, normal momentum, tangential momentum) per unit width.

    ``hl, hr`` are depths (0 for a dry side), ``un*`` normal and ``ut*`` tangential
    velocities of the left and right states.
    """
    if hl <= 0.0 and hr <= 0.0:
        return 0.0, 0.0, 0.0
    cl = math.sqrt(grav * hl)
    cr = math.sqrt(grav * hr)
    if hl <= 0.0:  # dry on the left: the front moves left at u - 2c
        sl = unr - 2.0 * cr
        sr = unr + cr
    elif hr <= 0.0:  # dry on the right
        sl = unl - cl
        sr = unl + 2.0 * cl
    else:
        sl = min(unl - cl, unr - cr)
        sr = max(unl + cl, unr + cr)
    ql = hl * unl
    qr = hr * unr
    f0l = ql
    f1l = ql * unl + 0.5 * grav * hl * hl
    f2l = ql * utl
    f0r = qr
    f1r = qr * unr + 0.5 * grav * hr * hr
    f2r = qr * utr
    if sl >= 0.0:
        return f0l, f1l, f2l
    if sr <= 0.0:
        return f0r, f1r, f2r
    inv = 1.0 / (sr - sl)
    f0 = (sr * f0l - sl * f0r + sl * sr * (hr - hl)) * inv
    f1 = (sr * f1l - sl * f1r + sl * sr * (qr - ql)) * inv
    f2 = (sr * f2l - sl * f2r + sl * sr * (hr * utr - hl * utl)) * inv
    return f0, f1, f2


@njit(cache=True, nogil=True)
def _face(
    q: np.ndarray,
    bed: np.ndarray,
    cells: tuple[int, int, int, int, int, int, int, int],
    kn: int,
    kt: int,
    h_dry: float,
    grav: float,
    out: np.ndarray,
) -> None:
    """The record of the face between cells ``b`` and ``c`` (``a, b | c, d`` along the normal).

    ``cells`` holds the padded indices ``(ai, aj, bi, bj, ci, cj, di, dj)``; ``kn``/``kt`` are
    the state components of the normal and tangential momentum. Writes into ``out`` (length
    :data:`N_FACE`): the HLL mass and tangential-momentum fluxes of the hydrostatically
    reconstructed states (Audusse et al., SIAM J. Sci. Comput. 25, 2004), the normal-momentum
    flux as seen by the left and by the right cell (each with its own hydrostatic correction
    ``g/2 (h² - h*²)``), and both sides' reconstructed depth and bed (for each cell's centred
    source term).
    """
    ai, aj, bi, bj, ci, cj, di, dj = cells
    ha, hb, hc, hd = q[ai, aj, H], q[bi, bj, H], q[ci, cj, H], q[di, dj, H]
    eb = hb + bed[bi, bj]
    ec = hc + bed[ci, cj]
    ub = _velocity(hb, q[bi, bj, kn], h_dry)
    vb = _velocity(hb, q[bi, bj, kt], h_dry)
    uc = _velocity(hc, q[ci, cj, kn], h_dry)
    vc = _velocity(hc, q[ci, cj, kt], h_dry)
    # Left state: cell b extrapolated to its right face. Depth and surface (h + bed) are
    # limited separately, so a lake at rest (flat surface) stays at rest; the bed at the face
    # is their difference.
    hl, el, ul, vl = hb, eb, ub, vb
    if ha > h_dry and hb > h_dry and hc > h_dry:
        ea = ha + bed[ai, aj]
        ua = _velocity(ha, q[ai, aj, kn], h_dry)
        va = _velocity(ha, q[ai, aj, kt], h_dry)
        hl = hb + 0.5 * _minmod(hb - ha, hc - hb)
        el = eb + 0.5 * _minmod(eb - ea, ec - eb)
        ul = ub + 0.5 * _minmod(ub - ua, uc - ub)
        vl = vb + 0.5 * _minmod(vb - va, vc - vb)
    # Right state: cell c extrapolated to its left face.
    hr, er, ur, vr = hc, ec, uc, vc
    if hb > h_dry and hc > h_dry and hd > h_dry:
        ed = hd + bed[di, dj]
        ud = _velocity(hd, q[di, dj, kn], h_dry)
        vd = _velocity(hd, q[di, dj, kt], h_dry)
        hr = hc - 0.5 * _minmod(hc - hb, hd - hc)
        er = ec - 0.5 * _minmod(ec - eb, ed - ec)
        ur = uc - 0.5 * _minmod(uc - ub, ud - uc)
        vr = vc - 0.5 * _minmod(vc - vb, vd - vc)
    bl = el - hl
    br = er - hr
    # Hydrostatic reconstruction: both sides see the higher bed; water below it does not flow.
    btop = max(bl, br)
    hls = max(0.0, el - btop)
    hrs = max(0.0, er - btop)
    if hls <= h_dry:
        hls, ul, vl = 0.0, 0.0, 0.0
    if hrs <= h_dry:
        hrs, ur, vr = 0.0, 0.0, 0.0
    f0, f1, f2 = _hll(hls, ul, vl, hrs, ur, vr, grav)
    out[F_MASS] = f0
    out[F_NORMAL_L] = f1 + 0.5 * grav * (hl * hl - hls * hls)
    out[F_NORMAL_R] = f1 + 0.5 * grav * (hr * hr - hrs * hrs)
    out[F_TANGENT] = f2
    out[F_HL] = hl
    out[F_BL] = bl
    out[F_HR] = hr
    out[F_BR] = br


@njit(cache=True, nogil=True)
def swe_fluxes(
    q: np.ndarray, bed: np.ndarray, fx: np.ndarray, fy: np.ndarray, g: int, h_dry: float,
    grav: float,
) -> None:  # fmt: skip
    """Face records of every face of the interior cells; faces between dry cells are skipped.

    Parameters
    ----------
    q
        float64, ``(nx + 2g, ny + 2g, 3)``: depth (m) and momenta (m²/s), ``g`` ghost layers.
    bed
        float64, ``(nx + 2g, ny + 2g)``: bed elevation, m.
    fx
        float64, ``(nx + 1, ny, N_FACE)``: out, the record of the x-face left of interior cell
        ``(i, j)`` (``fx[nx]`` is the last cell's right face). A face between two dry cells is
        left untouched: :func:`swe_update` never reads it.
    fy
        float64, ``(nx, ny + 1, N_FACE)``: the same for y-faces (normal = y).
    g
        Ghost width (>= 2).
    """
    nx = fx.shape[0] - 1
    ny = fx.shape[1]
    for i in range(nx + 1):
        pi = i + g  # padded index of the cell right of the face
        for j in range(ny):
            pj = j + g
            if q[pi - 1, pj, H] <= h_dry and q[pi, pj, H] <= h_dry:
                continue
            cells = (pi - 2, pj, pi - 1, pj, pi, pj, pi + 1, pj)
            _face(q, bed, cells, HU, HV, h_dry, grav, fx[i, j])
    for i in range(nx):
        pi = i + g
        for j in range(ny + 1):
            pj = j + g
            if q[pi, pj - 1, H] <= h_dry and q[pi, pj, H] <= h_dry:
                continue
            # Along y the normal momentum is hv and the tangential one hu.
            cells = (pi, pj - 2, pi, pj - 1, pi, pj, pi, pj + 1)
            _face(q, bed, cells, HV, HU, h_dry, grav, fy[i, j])


@njit(cache=True, nogil=True)
def swe_update(
    q0: np.ndarray, q: np.ndarray, fx: np.ndarray, fy: np.ndarray, out: np.ndarray, g: int,
    dt: float, dx: float, dy: float, h_dry: float, grav: float, manning: float,
    neg_tol: float, first: bool, wet_count: np.ndarray, faces: bool = True,
) -> int:  # fmt: skip
    """One Heun stage on the interior: ``V = Q + dt L(Q)``; out = V (first) or (Q0 + V)/2.

    Parameters
    ----------
    q0
        float64, ``(nx + 2g, ny + 2g, 3)``: the step's initial state (read by the second
        stage only; ``out`` may be the same array).
    q
        The state whose face records ``fx``, ``fy`` :func:`swe_fluxes` computed.
    out
        Where the stage result goes (interior cells only).
    dt, dx, dy
        Time step (s) and cell sizes (m).
    manning
        Manning's roughness ``n`` (s/m^(1/3)); friction is applied implicitly, so it only
        ever slows the water down.
    neg_tol
        A depth below ``-neg_tol`` (m) is a positivity failure, not round-off.
    wet_count
        int64 ``(1,)``: after the second stage, the interior cells left wet (``h > h_dry``),
        the step's work count, counted here so that it costs no pass of its own.
    faces
        False when every cell of ``q``, ghosts included, is dry: then no face carries flux
        and no cell has a bed-slope source, and the loop skips testing for them (the same
        bits: a dry 64 x 16 stage with its face pass skipped too takes about 35% less).

    Returns
    -------
    int
        Flat interior index of the first cell that went negative or non-finite, else -1.
    """
    nx = fx.shape[0] - 1
    ny = fx.shape[1]
    kx = dt / dx
    ky = dt / dy
    bad = -1
    n_wet = 0
    for i in range(nx):
        pi = i + g
        for j in range(ny):
            pj = j + g
            vh, vhu, vhv = q[pi, pj, H], q[pi, pj, HU], q[pi, pj, HV]
            wet = vh > h_dry
            # A face carries flux only if one of its cells is wet (the test swe_fluxes made);
            # a dry cell with dry neighbours changes not at all and costs next to nothing.
            if faces and (wet or q[pi - 1, pj, H] > h_dry):
                w = fx[i, j]
                vh += kx * w[F_MASS]
                vhu += kx * w[F_NORMAL_R]
                vhv += kx * w[F_TANGENT]
            if faces and (wet or q[pi + 1, pj, H] > h_dry):
                e = fx[i + 1, j]
                vh -= kx * e[F_MASS]
                vhu -= kx * e[F_NORMAL_L]
                vhv -= kx * e[F_TANGENT]
            if faces and (wet or q[pi, pj - 1, H] > h_dry):
                s = fy[i, j]
                vh += ky * s[F_MASS]
                vhu += ky * s[F_TANGENT]
                vhv += ky * s[F_NORMAL_R]
            if faces and (wet or q[pi, pj + 1, H] > h_dry):
                n = fy[i, j + 1]
                vh -= ky * n[F_MASS]
                vhu -= ky * n[F_TANGENT]
                vhv -= ky * n[F_NORMAL_L]
            if faces and wet:
                # Centred bed-slope source (Audusse et al.) from this cell's own
                # reconstruction; exactly 0 on a flat bed or in a first-order cell. A wet
                # cell's four faces are all active, so their records are current.
                w, e, s, n = fx[i, j], fx[i + 1, j], fy[i, j], fy[i, j + 1]
                vhu -= kx * 0.5 * grav * (w[F_HR] + e[F_HL]) * (e[F_BL] - w[F_BR])
                vhv -= ky * 0.5 * grav * (s[F_HR] + n[F_HL]) * (n[F_BL] - s[F_BR])
            if not first:
                vh = 0.5 * q0[pi, pj, H] + 0.5 * vh
                vhu = 0.5 * q0[pi, pj, HU] + 0.5 * vhu
                vhv = 0.5 * q0[pi, pj, HV] + 0.5 * vhv
            if vh <= h_dry:
                vhu = 0.0
                vhv = 0.0
            else:
                n_wet += 1
            if vh > h_dry and manning > 0.0:
                speed = math.sqrt(vhu * vhu + vhv * vhv) / vh
                damp = 1.0 / (1.0 + dt * grav * manning * manning * speed / vh ** (4.0 / 3.0))
                vhu *= damp
                vhv *= damp
            out[pi, pj, H] = vh
            out[pi, pj, HU] = vhu
            out[pi, pj, HV] = vhv
            if bad < 0 and not (
                vh >= -neg_tol and vh < math.inf and math.isfinite(vhu) and math.isfinite(vhv)
            ):
                bad = i * ny + j
    if not first:
        wet_count[0] = n_wet
    return bad


@njit(cache=True, nogil=True)
def swe_stage(
    q0: np.ndarray, q: np.ndarray, bed: np.ndarray, fx: np.ndarray, fy: np.ndarray,
    out: np.ndarray, g: int, dt: float, dx: float, dy: float, h_dry: float, grav: float,
    manning: float, neg_tol: float, first: bool, wet_count: np.ndarray,
) -> int:  # fmt: skip
    """:func:`swe_fluxes` then :func:`swe_update`: one Heun stage, one call from Python.

    A block dry everywhere (most of a dam break's partitions, most of the time) has no face
    to compute, and its update skips the face tests.
    """
    faces = not _all_dry(q, h_dry)
    if faces:
        swe_fluxes(q, bed, fx, fy, g, h_dry, grav)
    return swe_update(
        q0, q, fx, fy, out, g, dt, dx, dy, h_dry, grav, manning, neg_tol, first, wet_count,
        faces,
    )  # fmt: skip


@njit(cache=True, nogil=True)
def _all_dry(q: np.ndarray, h_dry: float) -> bool:
    """Whether every cell of the padded block ``q`` has depth ``<= h_dry``."""
    for i in range(q.shape[0]):
        for j in range(q.shape[1]):
            if q[i, j, H] > h_dry:
                return False
    return True


@njit(cache=True, nogil=True)
def swe_rate(
    q: np.ndarray, g: int, dx: float, dy: float, h_dry: float, grav: float
) -> tuple[float, int]:
    """Largest signal rate ``max((|u| + c)/dx, (|v| + c)/dy)`` (1/s) over wet interior cells.

    Returns the rate (0 if every cell is dry) and the flat interior index of the first
    non-finite cell (-1 if none).
    """
    nx = q.shape[0] - 2 * g
    ny = q.shape[1] - 2 * g
    rate = 0.0
    bad = -1
    for i in range(nx):
        for j in range(ny):
            d = q[i + g, j + g, H]
            qu = q[i + g, j + g, HU]
            qv = q[i + g, j + g, HV]
            if not (math.isfinite(d) and math.isfinite(qu) and math.isfinite(qv)):
                if bad < 0:
                    bad = i * ny + j
                continue
            if d <= h_dry:
                continue
            c = math.sqrt(grav * d)
            r = max((abs(qu / d) + c) / dx, (abs(qv / d) + c) / dy)
            if r > rate:
                rate = r
    return rate, bad


@njit(cache=True, nogil=True)
def swe_reflect(q: np.ndarray, g: int, west: bool, east: bool, south: bool, north: bool) -> None:
    """Reflective walls: ghost layer ``g-1-k`` mirrors interior layer ``g+k``, normal momentum
    negated, on the sides that are domain walls (whole ghost rows, corners included)."""
    nxp, nyp = q.shape[0], q.shape[1]
    for k in range(g):
        for c in range(3):
            sign = -1.0 if c == HU else 1.0
            for j in range(nyp):
                if west:
                    q[g - 1 - k, j, c] = sign * q[g + k, j, c]
                if east:
                    q[nxp - g + k, j, c] = sign * q[nxp - g - 1 - k, j, c]
    for k in range(g):
        for c in range(3):
            sign = -1.0 if c == HV else 1.0
            for i in range(nxp):
                if south:
                    q[i, g - 1 - k, c] = sign * q[i, g + k, c]
                if north:
                    q[i, nyp - g + k, c] = sign * q[i, nyp - g - 1 - k, c]


@njit(cache=True, nogil=True)
def swe_count_wet(q: np.ndarray, g: int, h_dry: float) -> int:
    """Interior cells with depth above ``h_dry``."""
    n = 0
    for i in range(g, q.shape[0] - g):
        for j in range(g, q.shape[1] - g):
            if q[i, j, H] > h_dry:
                n += 1
    return n


# ----------------------------------------------------------------------------- batches

#: Block entries the batch kernels use, in the order of their ``arrays`` tuple.
BATCH_FIELDS = ("q", "q1", "bed", "fx", "fy", "bad", "wet")
_Q, _Q1, _BED, _FX, _FY, _BAD, _WET = range(7)


@njit(cache=True, nogil=True)
def _views(arrays, bases, i, nx, ny, g):
    """The padded state arrays of local partition ``i`` inside the runtime's flat arrays."""
    px, py = nx + 2 * g, ny + 2 * g
    q = arrays[_Q][bases[_Q, i] : bases[_Q, i] + px * py * 3].reshape((px, py, 3))
    q1 = arrays[_Q1][bases[_Q1, i] : bases[_Q1, i] + px * py * 3].reshape((px, py, 3))
    bed = arrays[_BED][bases[_BED, i] : bases[_BED, i] + px * py].reshape((px, py))
    return q, q1, bed


@njit(cache=True, nogil=True)
def _face_scratch(arrays, bases, todo, iparams, field, extra_x, extra_y):
    """One partition's face records (``fx``: ``field = _FX``, extents ``nx + 1, ny``; ``fy``:
    ``_FY``, ``nx, ny + 1``), the largest of ``todo``'s, to serve every partition of a batch.

    A face record lives only within its partition's stage, so one pair reused stays in cache,
    where a pair per partition streams through memory. The largest fits every other, and a
    concurrent batch (another thread) holds other partitions, hence other records.
    """
    if todo.size == 0:
        return arrays[field][:0]
    owner, most = todo[0], 0
    for t in range(todo.size):
        i = todo[t]
        size = (iparams[i, 0] + extra_x) * (iparams[i, 1] + extra_y) * N_FACE
        if size > most:
            owner, most = i, size
    return arrays[field][bases[field, owner] : bases[field, owner] + most]


@njit(cache=True, nogil=True)
def swe_rate_batch(arrays, bases, todo, params, iparams, values, stamps, halos):
    """:class:`~grapeshot.model.program.Batch` of the ``rate`` phase (params: dx, dy,
    h_dry, gravity; iparams: nx, ny, ghost, walls W E S N)."""
    bad = arrays[_BAD]
    for t in range(todo.size):
        i = todo[t]
        task_begins(halos, stamps, t, i)
        q = _views(arrays, bases, i, iparams[i, 0], iparams[i, 1], iparams[i, 2])[0]
        rate, first_bad = swe_rate(q, iparams[i, 2], params[0], params[1], params[2], params[3])
        bad[bases[_BAD, i]] = first_bad
        values[i] = rate
    batch_ends(halos, stamps, todo.size)


@njit(cache=True, nogil=True)
def swe_stage_batch(arrays, bases, todo, params, iparams, values, stamps, halos):
    """:class:`~grapeshot.model.program.Batch` of a Heun stage: the walls, then
    :func:`swe_stage` (params: dt, dx, dy, h_dry, gravity, manning, neg_tol, first)."""
    bad = arrays[_BAD]
    wet = arrays[_WET]
    first = params[7] > 0.0
    fx_scratch = _face_scratch(arrays, bases, todo, iparams, _FX, 1, 0)
    fy_scratch = _face_scratch(arrays, bases, todo, iparams, _FY, 0, 1)
    for t in range(todo.size):
        i = todo[t]
        task_begins(halos, stamps, t, i)
        nx, ny, g = iparams[i, 0], iparams[i, 1], iparams[i, 2]
        q, q1, bed = _views(arrays, bases, i, nx, ny, g)
        fx = fx_scratch[: (nx + 1) * ny * N_FACE].reshape((nx + 1, ny, N_FACE))
        fy = fy_scratch[: nx * (ny + 1) * N_FACE].reshape((nx, ny + 1, N_FACE))
        src, dst = (q, q1) if first else (q1, q)
        west, east = iparams[i, 3] > 0, iparams[i, 4] > 0
        south, north = iparams[i, 5] > 0, iparams[i, 6] > 0
        if west or east or south or north:
            swe_reflect(src, g, west, east, south, north)
        wet_count = wet[bases[_WET, i] : bases[_WET, i] + 1]
        bad[bases[_BAD, i]] = swe_stage(
            q, src, bed, fx, fy, dst, g, params[0], params[1], params[2], params[3],
            params[4], params[5], params[6], first, wet_count,
        )  # fmt: skip
        values[i] = 0.0
    batch_ends(halos, stamps, todo.size)


# ----------------------------------------------------------------------------- the program


@dataclass(frozen=True)
class SweConfig:
    """Validated settings of one shallow-water run.

    Attributes
    ----------
    scene
        One of :data:`SCENES`.
    cells
        Cells per axis ``(nx, ny)``.
    cfl
        Courant number: ``dt = cfl / max((|u| + c)/dx, (|v| + c)/dy)``.
    h_dry
        Dry threshold, m.
    gravity
        m/s².
    """

    scene: str
    cells: tuple[int, int]
    cfl: float = DEFAULT_CFL
    h_dry: float = 1e-6
    gravity: float = GRAVITY

    @property
    def setup(self) -> Scene:
        """The scene's set-up."""
        return SCENE_SETUP[self.scene]

    @property
    def spacing(self) -> tuple[float, float]:
        """Cell size per axis, m."""
        lx, ly = self.setup.length
        return (lx / self.cells[0], ly / self.cells[1])


class ShallowWater(Program):
    """The 2-D shallow-water equations on a micro-partitioned grid (see the module notes).

    Block entries: ``q`` float64 ``(*box.padded_shape, 3)`` (depth, x- and y-momentum), ``q1``
    (Heun's first stage, same shape), ``bed`` float64 ``box.padded_shape`` (bed elevation,
    static, ghosts included), ``fx`` ``(nx + 1, ny, N_FACE)`` and ``fy`` ``(nx, ny + 1,
    N_FACE)`` (face records: scratch of one stage, which a batch shares among its
    partitions), ``bad`` int64 ``(1,)`` (first failing cell of the last kernel,
    -1 if healthy), ``wet`` int64 ``(1,)`` (wet interior cells after the last step).
    """

    name = "swe"
    ghost = GHOST
    cell_bytes = 8 * 3
    #: The field a snapshot shows, and its colour map (dry floor white).
    snapshot_field = "h"
    snapshot_cmap = "Blues"

    def __init__(self, config: SweConfig, parts_shape: tuple[int, int]) -> None:
        self.config = config
        self.scene = config.scene
        self.domain_shape = tuple(config.cells)
        self.parts_shape = tuple(parts_shape)
        #: Cell size per axis, m (what a VTK file or a figure needs to place the cells).
        self.spacing = config.spacing
        # Separates round-off (a draining film at -1e-17 m) from a positivity failure.
        self._neg_tol = 1e-9
        iparams = self._iparams
        rate_batch = Batch(BATCH_FIELDS, swe_rate_batch, self._rate_params, iparams, "bad", "wet")
        stage1 = Batch(BATCH_FIELDS, swe_stage_batch, self._stage1_params, iparams, "bad", "wet")
        stage2 = Batch(BATCH_FIELDS, swe_stage_batch, self._stage2_params, iparams, "bad", "wet")
        walls1 = Exchange(("q",), GHOST, boundary=_walls("q"))
        walls2 = Exchange(("q1",), GHOST, boundary=_walls("q1"))
        self.phases = (
            Phase("rate", self._rate, reduce=Reduction("rate", "max"), batch=rate_batch),
            Phase("stage1", self._stage1, exchange=walls1, batch=stage1),
            Phase("stage2", self._stage2, exchange=walls2, batch=stage2),
        )

    # -- state -------------------------------------------------------------------------

    def _centres(self, box: Box, ghosts: bool) -> tuple[np.ndarray, np.ndarray]:
        """Cell-centre coordinates (m) of the box's cells, with ghosts mirrored at walls."""
        axes = []
        for axis in range(2):
            g = box.ghost if ghosts else 0
            idx = np.arange(box.lo[axis] - g, box.hi[axis] + g)
            n = self.domain_shape[axis]
            # A wall ghost mirrors the interior (the same reflection the boundary applies).
            idx = np.where(idx < 0, -1 - idx, np.where(idx >= n, 2 * n - 1 - idx, idx))
            axes.append((idx + 0.5) * self.spacing[axis])
        return axes[0][:, None], axes[1][None, :]

    def init_block(self, box: Box) -> Block:
        """Initial depth and bed from the scene, water at rest."""
        setup = self.config.setup
        q = np.zeros((*box.padded_shape, 3))
        x, y = self._centres(box, ghosts=False)
        q[(*box.interior(), H)] = setup.depth(x, y, setup.length)
        # The bed never changes: every partition computes its ghosts' bed from the global
        # cell index, so it is the neighbour's value bit for bit and needs no exchange.
        xg, yg = self._centres(box, ghosts=True)
        bed = np.broadcast_to(setup.bed(xg, yg, setup.length), box.padded_shape)
        nx, ny = box.shape
        return {
            "q": q,
            "q1": q.copy(),
            "bed": np.ascontiguousarray(bed, dtype=np.float64),
            "fx": np.zeros((nx + 1, ny, N_FACE)),
            "fy": np.zeros((nx, ny + 1, N_FACE)),
            "bad": np.full(1, -1, dtype=np.int64),
            "wet": np.array([swe_count_wet(q, box.ghost, self.config.h_dry)], dtype=np.int64),
        }

    def work(self, block: Block, box: Box) -> int:
        """Wet cells (``h > h_dry``) of the partition."""
        return int(block["wet"][0])  # kept current by the step's second stage

    def output_fields(self, block: Block, box: Box) -> dict[str, np.ndarray]:
        """``h`` (m), ``hu``, ``hv`` (m²/s) and ``bed`` (m) on the partition's cells."""
        inner = box.interior()
        q = block["q"][inner]
        return {
            "h": q[..., H].copy(),
            "hu": q[..., HU].copy(),
            "hv": q[..., HV].copy(),
            "bed": block["bed"][inner].copy(),
        }

    def dt(self, ctx: Context) -> float:
        """This step's time step, s, from the reduced signal rate (0 when all is dry)."""
        rate = ctx.values["rate"]
        return self.config.cfl / rate if rate > 0.0 else 0.0

    def advance(self, ctx: Context) -> float:
        """The step's ``dt``, s."""
        return self.dt(ctx)

    # -- phases ------------------------------------------------------------------------

    def _rate(self, block: Block, box: Box, ctx: Context) -> float:
        c = self.config
        dx, dy = self.spacing
        rate, bad = swe_rate(block["q"], box.ghost, dx, dy, c.h_dry, c.gravity)
        block["bad"][0] = bad
        return rate

    def _stage(self, block: Block, box: Box, ctx: Context, first: bool) -> None:
        c = self.config
        dx, dy = self.spacing
        q0 = block["q"]
        src, dst = (q0, block["q1"]) if first else (block["q1"], q0)
        block["bad"][0] = swe_stage(
            q0, src, block["bed"], block["fx"], block["fy"], dst, box.ghost, self.dt(ctx),
            dx, dy, c.h_dry, c.gravity, c.setup.manning, self._neg_tol, first, block["wet"],
        )  # fmt: skip

    def _stage1(self, block: Block, box: Box, ctx: Context) -> None:
        self._stage(block, box, ctx, True)

    def _stage2(self, block: Block, box: Box, ctx: Context) -> None:
        self._stage(block, box, ctx, False)

    def _iparams(self, box: Box) -> np.ndarray:
        walls = [box.at_wall(0, -1), box.at_wall(0, 1), box.at_wall(1, -1), box.at_wall(1, 1)]
        return np.array([*box.shape, box.ghost, *walls], dtype=np.int64)

    def _rate_params(self, ctx: Context) -> np.ndarray:
        c = self.config
        return np.array([*self.spacing, c.h_dry, c.gravity])

    def _stage_params(self, ctx: Context, first: bool) -> np.ndarray:
        c = self.config
        dx, dy = self.spacing
        flag = 1.0 if first else 0.0
        return np.array(
            [self.dt(ctx), dx, dy, c.h_dry, c.gravity, c.setup.manning, self._neg_tol, flag]
        )

    def _stage1_params(self, ctx: Context) -> np.ndarray:
        return self._stage_params(ctx, True)

    def _stage2_params(self, ctx: Context) -> np.ndarray:
        return self._stage_params(ctx, False)

    def check_block(self, block: Block, box: Box, ctx: Context, phase: str) -> None:
        """Raise :class:`SimulationError` naming the cell if the last kernel found one bad."""
        bad = int(block["bad"][0])
        if bad < 0:
            return
        i, j = divmod(bad, box.shape[1])
        q = block["q1"] if phase == "stage1" else block["q"]
        depth = float(q[i + box.ghost, j + box.ghost, H])
        where = (box.lo[0] + i, box.lo[1] + j)
        raise SimulationError(
            ctx.step,
            box.part,
            phase,
            f"depth h = {depth:.3g} m at cell {where} is negative or not finite; the step is "
            f"unstable (CFL {self.config.cfl:g}; MUSCL-HLL with Heun needs about 0.5 or less)",
        )


def _walls(name: str) -> Callable[[Block, Box], None]:
    """The boundary callback that reflects block entry ``name`` at the domain's walls."""

    walls: dict[int, tuple[bool, bool, bool, bool]] = {}  # per partition, found once

    def boundary(block: Block, box: Box) -> None:
        sides = walls.get(box.part)
        if sides is None:
            sides = walls[box.part] = (
                box.at_wall(0, -1), box.at_wall(0, 1), box.at_wall(1, -1), box.at_wall(1, 1)
            )  # fmt: skip
        if any(sides):  # most micro-partitions touch no wall: no call at all
            swe_reflect(block[name], box.ghost, *sides)

    return boundary


# ----------------------------------------------------------------------------- the app contract


def _check_parts(parts: tuple[int, ...]) -> tuple[int, int]:
    parts = tuple(parts)
    if len(parts) != 2:
        raise InputError("--parts", f"got {len(parts)} values {parts}", "2 values: swe is 2-D")
    for k in parts:
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise InputError("--parts", f"got {parts}", "positive integers")
    return (int(parts[0]), int(parts[1]))


def _check_cells(scene: str, cells: int | tuple[int, ...] | None) -> tuple[int, int]:
    if cells is None:
        return SCENE_SETUP[scene].cells
    cells = (cells, cells) if isinstance(cells, int | np.integer) else tuple(cells)
    if len(cells) != 2:
        raise InputError("--cells", f"got {len(cells)} values {cells}", "2 values: swe is 2-D")
    for n in cells:
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < MIN_CELLS:
            raise InputError("--cells", f"got {cells}", f"integers >= {MIN_CELLS}")
    return (int(cells[0]), int(cells[1]))


def make_program(
    scene: str,
    parts: tuple[int, ...],
    *,
    cells: int | tuple[int, ...] | None = None,
    seed: int = 0,
    cfl: float = DEFAULT_CFL,
    h_dry: float | None = None,
) -> ShallowWater:
    """A shallow-water program for ``scene`` split into ``parts`` partitions per axis.

    Parameters
    ----------
    scene
        One of :data:`SCENES`.
    parts
        Partitions per axis ``(px, py)``.
    cells
        Cells per axis ``(nx, ny)`` (one int: both axes), each ``>= MIN_CELLS``; default the scene's
        (:data:`SCENE_SETUP`). The physical size stays the scene's (cells may be rectangular).
    seed
        Accepted for the app contract and validated; the scenes are deterministic.
    cfl
        Courant number (> 0). Above about 0.5 the scheme loses positivity and the run stops
        with :class:`~grapeshot.model.program.SimulationError`.
    h_dry
        Dry threshold, m, in (0, 0.01); default the scene's (:attr:`Scene.h_dry`).

    Raises
    ------
    InputError
        On an unknown scene, a bad partition or cell count, or bad ``cfl``/``h_dry``.
    """
    if scene not in SCENES:
        raise InputError("--scene", f"unknown swe scene {scene!r}", f"one of {', '.join(SCENES)}")
    as_generator(seed)
    parts_shape = _check_parts(parts)
    shape = _check_cells(scene, cells)
    cfl = check_positive_number(cfl, "cfl")
    h_dry = SCENE_SETUP[scene].h_dry if h_dry is None else check_positive_number(h_dry, "h_dry")
    if h_dry >= 0.01:
        raise InputError("h_dry", f"got {h_dry!r} m", "a dry threshold below 0.01 m")
    config = SweConfig(scene, shape, cfl=cfl, h_dry=h_dry)
    program = ShallowWater(config, parts_shape)
    program.boxes()  # fails early, naming --parts, if the partitions do not fit the cells
    return program


def ritter_depth(x: np.ndarray, t: float, *, x0: float, h0: float, gravity: float = GRAVITY):
    """Ritter's dry-bed dam-break depth (m) at ``x`` (m) and time ``t`` (s) after release.

    The dam at ``x0`` holds depth ``h0`` on its left; ``c0 = sqrt(g h0)``. For
    ``x0 - c0 t <= x <= x0 + 2 c0 t``: ``h = (2 c0 - (x - x0)/t)² / (9 g)``; ``h0`` to the left,
    0 to the right. Valid until the rarefaction reaches the left wall (``t < x0 / c0``).
    """
    x = np.asarray(x, dtype=np.float64)
    c0 = math.sqrt(gravity * h0)
    if t <= 0.0:
        return np.where(x < x0, h0, 0.0)
    xi = (x - x0) / t
    fan = (2.0 * c0 - xi) ** 2 / (9.0 * gravity)
    return np.where(xi < -c0, h0, np.where(xi > 2.0 * c0, 0.0, fan))
