"""The Z-Model right-hand side (zdot, wdot) = F(z, w) and SSP-RK3, over a pluggable backend.

The numerics are pure: a :class:`Backend` supplies the only non-local pieces (halo filling,
the Riesz transform, the Birkhoff-Rott velocity), so the same code runs on one process
(:class:`SerialBackend`) and on MPI ranks (``grapeshot.apps.zmodel.driver``).
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from typing import Protocol

import numpy as np

from grapeshot.apps.zmodel import operators as op
from grapeshot.apps.zmodel.cutoff import serial_cutoff_velocity
from grapeshot.apps.zmodel.kernels import br_all_pairs, image_offsets
from grapeshot.apps.zmodel.mesh import Block, initial_state, make_block, simpson_weights
from grapeshot.apps.zmodel.params import ZModelParams

#: The timed phases of a step, the columns of a run's ``phase_times`` (the driver folds a
#: backend's :attr:`Backend.timers` into them; a trace file names them).
PHASES = ("halo", "stencil", "fft", "br", "migration")


class Backend(Protocol):
    """What F needs from the world beyond one rank's block."""

    params: ZModelParams
    block: Block
    timers: dict[str, float]

    def fill_halo(self, f: np.ndarray, position: bool) -> None:
        """Fill the halo of padded ``f`` (``position``: shift ghosts across periodic seams)."""

    def riesz(self, w: np.ndarray) -> np.ndarray:
        """Re[R . w] on the owned nodes; ``w`` is owned (2, ni, nj)."""

    def br(self, z: np.ndarray, strength: np.ndarray) -> np.ndarray:
        """Birkhoff-Rott velocity (3, ni, nj) at owned z (3, ni, nj) from every node's
        strength ``W dx dy / (-4 pi) * omega``."""


class Timer:
    """Context manager adding wall time to ``timers[name]``."""

    def __init__(self, timers: dict[str, float], name: str) -> None:
        self.timers, self.name = timers, name

    def __enter__(self) -> None:
        self.t0 = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.timers[self.name] += time.perf_counter() - self.t0


def strength_factor(params: ZModelParams, block: Block) -> np.ndarray:
    """``W_i W_j dx dy / (-4 pi)`` on the owned nodes of ``block``, shape (ni, nj)."""
    wi = simpson_weights(params, np.arange(block.i0, block.i1))
    wj = simpson_weights(params, np.arange(block.j0, block.j1))
    return np.outer(wi, wj) * (params.dx * params.dx / (-4.0 * math.pi))


def rhs(
    z: np.ndarray, w: np.ndarray, be: Backend, factor: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """One derivative evaluation (spec §2): owned (zdot (3, ni, nj), wdot (2, ni, nj)).

    ``z`` and ``w`` are padded and get their halos filled here; ``factor`` is
    :func:`strength_factor` of the block.
    """
    p = be.params
    dx = p.dx
    with Timer(be.timers, "halo"):
        be.fill_halo(z, True)
        be.fill_halo(w, False)
    with Timer(be.timers, "stencil"):
        z1, z2 = op.d1(z, dx), op.d2(z, dx)
        wo = op.owned(w)
        omega = wo[1] * z1 - wo[0] * z2
    rw = u = None
    if p.uses_riesz:
        with Timer(be.timers, "fft"):
            rw = be.riesz(np.ascontiguousarray(wo))
    if p.uses_br:
        with Timer(be.timers, "br"):
            u = be.br(np.ascontiguousarray(op.owned(z)), omega * factor)
    with Timer(be.timers, "stencil"):
        h11 = np.einsum("cij,cij->ij", z1, z1)
        h12 = np.einsum("cij,cij->ij", z1, z2)
        h22 = np.einsum("cij,cij->ij", z2, z2)
        deth = h11 * h22 - h12 * h12
        if rw is not None:
            zn = -0.5 * rw / deth
        if p.order == "low":
            normal = op.cross(z1, z2) / np.sqrt(deth)
            zdot = zn * normal
            speed2 = zn * zn
        elif p.order == "medium":
            zdot = u
            speed2 = zn * zn
        else:
            zdot = u
            speed2 = np.einsum("cij,cij->ij", u, u)
        w1, w2 = wo[0], wo[1]
        V = np.zeros((1, *z.shape[1:]))
        V[0, 2:-2, 2:-2] = (
            speed2
            - 0.25 * (h22 * w1 * w1 - 2.0 * h12 * w1 * w2 + h11 * w2 * w2) / deth
            - 2.0 * p.g * op.owned(z)[2]
        )
    with Timer(be.timers, "halo"):
        be.fill_halo(V, False)
    with Timer(be.timers, "stencil"):
        lap = op.laplacian(w, dx, dx)
        wdot = np.empty_like(wo)
        wdot[0] = p.atwood * op.d1(V, dx)[0] + p.mu_eff * lap[0]
        wdot[1] = p.atwood * op.d2(V, dx)[0] + p.mu_eff * lap[1]
    return zdot, wdot


def rk3_step(z: np.ndarray, w: np.ndarray, be: Backend, factor: np.ndarray) -> None:
    """One SSP-RK3 (Shu-Osher) step of padded z, w in place (owned nodes updated)."""
    dt = be.params.dt
    zo, wo = op.owned(z).copy(), op.owned(w).copy()
    z1, w1 = z.copy(), w.copy()
    dz, dw = rhs(z, w, be, factor)
    op.owned(z1)[...] = zo + dt * dz
    op.owned(w1)[...] = wo + dt * dw
    dz, dw = rhs(z1, w1, be, factor)
    z2, w2 = z1, w1
    op.owned(z2)[...] = 0.75 * zo + 0.25 * op.owned(z1) + 0.25 * dt * dz
    op.owned(w2)[...] = 0.75 * wo + 0.25 * op.owned(w1) + 0.25 * dt * dw
    dz, dw = rhs(z2, w2, be, factor)
    op.owned(z)[...] = zo / 3.0 + 2.0 / 3.0 * op.owned(z2) + 2.0 / 3.0 * dt * dz
    op.owned(w)[...] = wo / 3.0 + 2.0 / 3.0 * op.owned(w2) + 2.0 / 3.0 * dt * dw


class SerialBackend:
    """One process owning the whole mesh: numpy FFT, all-pairs numba BR (or cutoff)."""

    def __init__(self, params: ZModelParams) -> None:
        self.params = params
        self.block = make_block(params, 1, 0)
        self.timers: dict[str, float] = defaultdict(float)
        edges = self.block.edges()
        self._exchange = op.serial_exchange(params.periodic)
        self._shift = op.seam_shift(params.length, edges)
        self._edges = edges
        self._offsets = image_offsets(params.periodic, params.length)

    def fill_halo(self, f: np.ndarray, position: bool) -> None:
        op.fill_halo(
            f, self._exchange, self._edges, self.params.periodic, self._shift if position else None
        )

    def riesz(self, w: np.ndarray) -> np.ndarray:
        return op.riesz_serial(w)

    def br(self, z: np.ndarray, strength: np.ndarray) -> np.ndarray:
        pts = np.ascontiguousarray(z.reshape(3, -1).T)
        s = np.ascontiguousarray(strength.reshape(3, -1).T)
        out = np.zeros_like(pts)
        if self.params.solver == "cutoff":
            out = serial_cutoff_velocity(self.params, pts, s)
        else:
            br_all_pairs(pts, pts, s, self._offsets, self.params.eps_eff, out)
        return out.T.reshape(z.shape)


def run_serial(params: ZModelParams, steps: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Run ``steps`` (default ``params.n_steps``) steps on one process; padded (z, w)."""
    be = SerialBackend(params)
    z, w = initial_state(params, be.block)
    factor = strength_factor(params, be.block)
    for _ in range(params.n_steps if steps is None else steps):
        rk3_step(z, w, be, factor)
    be.fill_halo(z, True)
    be.fill_halo(w, False)
    return z, w
