from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from grapeshot.apps import flip_kernels as kernels
from grapeshot.apps import get_app
from grapeshot.apps.flip import (
    SCENES,
    FlipSim,
    halo_cell_bytes,
    make_trace,
    scene_spec,
)
from grapeshot.model.errors import InputError
from grapeshot.model.workload import grid_halo

GRAVITY = 9.8
COLUMN_WIDTH, COLUMN_HEIGHT = 0.25, 0.5  # the "dambreak" validation scene


@dataclass
class DamRun:
    """The 2-D single dam break on 48×48 cells, run until the front passes x = 0.9."""

    sim: FlipSim
    n_initial: int
    fluid_initial: int
    times: np.ndarray
    fronts: np.ndarray
    fluid_cells: np.ndarray
    relative_divergence: np.ndarray
    divergence: np.ndarray
    converged: bool


@pytest.fixture(scope="module")
def dam() -> DamRun:
    sim = FlipSim("dambreak", (48, 48), seed=0)
    n0 = sim.n_particles
    fluid0 = int(sim.fluid_mask().sum())
    times, fronts = [0.0], [float(sim.positions[:, 0].max())]
    fluid, rel, div, ok = [], [], [], True
    while fronts[-1] < 0.9 and len(times) < 200:
        st = sim.step()
        times.append(st.time)
        fronts.append(float(sim.positions[:, 0].max()))
        fluid.append(st.fluid_cells)
        rel.append(st.relative_divergence)
        div.append(st.divergence)
        ok &= st.cg_converged
    return DamRun(
        sim=sim,
        n_initial=n0,
        fluid_initial=fluid0,
        times=np.array(times),
        fronts=np.array(fronts),
        fluid_cells=np.array(fluid),
        relative_divergence=np.array(rel),
        divergence=np.array(div),
        converged=ok,
    )


def assert_conserves_mass(run: DamRun, *, volume_tolerance: float) -> None:
    """Particles are never created or lost; fluid cells stay within ``volume_tolerance``."""
    assert run.sim.n_particles == run.n_initial
    assert np.all(np.isfinite(run.sim.pos)) and np.all(np.isfinite(run.sim.vel))
    ratio = run.fluid_cells / run.fluid_initial
    assert np.all(np.abs(ratio - 1.0) <= volume_tolerance), (ratio.min(), ratio.max())


def test_dam_break_conserves_mass(dam: DamRun) -> None:
    # Particle count exact; fluid-cell volume measured within +7.3 % over the collapse.
    assert_conserves_mass(dam, volume_tolerance=0.15)
    assert dam.fluid_initial == (48 // 4) * (48 // 2)  # the 0.25 × 0.5 column, cell aligned


def test_dam_break_front_advances_at_the_gravity_wave_speed(dam: DamRun) -> None:
    # The front moves forward every step until it nears the far wall.
    assert np.all(np.diff(dam.fronts) > 0.0)
    assert len(dam.fronts) > 10
    # Front speed over x in [1.5, 3.5] column widths (past the initial acceleration), against
    # √(2gH): Martin & Moyce's measurements give ≈ 0.86 √(2gH) for this 1:2 column, the
    # frictionless shallow-water (Ritter) front 2√(gH) = √2 · √(2gH) is an upper bound.
    # Measured: 0.85-0.89 over seeds 0-3. Accepted: within a factor 2 below, Ritter above.
    sel = (dam.fronts >= 1.5 * COLUMN_WIDTH) & (dam.fronts <= 3.5 * COLUMN_WIDTH)
    assert sel.sum() >= 5
    speed = np.polyfit(dam.times[sel], dam.fronts[sel], 1)[0]
    scale = math.sqrt(2.0 * GRAVITY * COLUMN_HEIGHT)
    assert 0.5 * scale <= speed <= math.sqrt(2.0) * scale, speed / scale


def test_projection_is_divergence_free(dam: DamRun) -> None:
    # CG stops at a relative residual of 1e-8: measured net outflow / face speeds <= 1e-9.
    assert dam.converged
    assert np.all(dam.relative_divergence < 1e-6)
    # In 1/s: max |∇·u| against the flow's own rate |u|/dx ≈ 3 m/s × 48 ≈ 150 1/s.
    assert np.all(dam.divergence < 1e-4)


def _ref_p2g_component(pos: np.ndarray, vel: np.ndarray, c: int, dx: float, shape) -> tuple:
    """Slow reference of one component of the P2G splat (np.add.at)."""
    off = np.full(3, 0.5)
    off[c] = 0.0
    grid = np.zeros(shape)
    weight = np.zeros(shape)
    f = pos / dx - off
    n = np.array(shape)
    i0 = np.clip(np.floor(f).astype(int), 0, np.maximum(n - 2, 0))
    t = np.clip(f - i0, 0.0, 1.0)
    i1 = np.minimum(i0 + 1, n - 1)
    for corner in np.ndindex(2, 2, 2):
        idx = tuple(np.where(corner[a], i1[:, a], i0[:, a]) for a in range(3))
        wt = np.prod([np.where(corner[a], t[:, a], 1.0 - t[:, a]) for a in range(3)], axis=0)
        np.add.at(grid, idx, wt * vel[:, c])
        np.add.at(weight, idx, wt)
    out = np.divide(grid, weight, out=np.zeros(shape), where=weight > 0)
    return out, weight


def test_transfer_kernels_match_the_reference() -> None:
    rng = np.random.default_rng(5)
    dx, n = 0.1, (6, 5, 4)
    pos = rng.uniform(0.0, 1.0, size=(500, 3)) * np.array(n) * dx
    vel = rng.normal(size=(500, 3))
    shapes = [(7, 5, 4), (6, 6, 4), (6, 5, 5)]
    grids = [np.zeros(s) for s in shapes]
    weights = [np.zeros(s) for s in shapes]
    kernels.p2g(pos, vel, dx, *grids, *weights)
    for c in range(3):
        ref, wref = _ref_p2g_component(pos, vel, c, dx, shapes[c])
        np.testing.assert_allclose(grids[c], ref, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(weights[c], wref, rtol=1e-12)
    # G2P with the PIC end of the blend returns the trilinear sample of the grid: a linear
    # field is reproduced exactly away from the clamped edges.
    lin = [
        np.fromfunction(lambda i, j, k, c=c: 1.0 + i + 2 * j - k + c, s)
        for c, s in enumerate(shapes)
    ]
    inner = rng.uniform(0.1, 0.9, size=(100, 3)) * np.array(n) * dx + 0.5 * dx
    inner = np.minimum(inner, (np.array(n) - 0.5) * dx)
    out = np.zeros_like(inner)
    zero = [np.zeros(s) for s in shapes]
    kernels.g2p(inner, out, dx, *lin, *zero, 0.0)
    for c in range(3):
        idx = inner / dx - np.where(np.arange(3) == c, 0.0, 0.5)
        expect = 1.0 + idx[:, 0] + 2 * idx[:, 1] - idx[:, 2] + c
        np.testing.assert_allclose(out[:, c], expect, rtol=1e-12)


def test_mic0_pcg_solves_a_poisson_system() -> None:
    # 2-D Laplacian with Dirichlet sides, as the pressure matrix of a fluid box in air.
    n = 20
    lap = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    A = sp.csr_matrix(sp.kronsum(lap, lap))
    A.sort_indices()
    b = np.random.default_rng(0).normal(size=n * n)
    args = (A.indptr.astype(np.int64), A.indices.astype(np.int64), A.data)
    prec = kernels.mic0_factor(*args, 0.97, 0.25)
    x = np.zeros(n * n)
    iterations, converged = kernels.pcg(*args, prec, b, x, 1e-10, 500)
    assert converged
    np.testing.assert_allclose(x, spla.spsolve(A.tocsc(), b), rtol=1e-7, atol=1e-9)
    # The preconditioner earns its keep against plain CG (scipy, no preconditioner).
    plain = []
    spla.cg(A, b, rtol=1e-10, atol=0.0, maxiter=2000, callback=lambda _: plain.append(1))
    assert iterations < len(plain) / 2


def test_particles_stay_in_the_box_and_out_of_solids() -> None:
    sim = FlipSim("sphere-drop", (16, 16, 16), seed=2)
    n0 = sim.n_particles
    for _ in range(15):
        sim.step()
    assert sim.n_particles == n0
    pos = sim.positions
    assert np.all((pos > 0.0) & (pos < 1.0))
    cells = np.minimum((pos * 16).astype(int), 15)
    assert not np.any(sim.solid[cells[:, 0], cells[:, 1], cells[:, 2]])


def test_trace_shapes_costs_and_halo() -> None:
    seen = []
    w = make_trace(
        "two-way-dambreak",
        (4, 2, 4),
        8,
        cells=16,
        seed=1,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert w.domain_shape == (16, 16, 16) and w.parts_shape == (4, 2, 4)
    assert w.cost.shape == (8, 32) and w.work is not None and w.work.shape == (8, 32)
    assert w.units == "s" and w.app == "flip" and w.scene == "two-way-dambreak"
    assert np.all(w.cost >= 0.0) and np.all(w.cost.sum(axis=1) > 0.0)
    assert np.all(w.work >= 0)
    # A partition without fluid cells holds no particle either (particles mark cells fluid),
    # so it costs nothing: the sparse-grid model. The scene leaves such partitions.
    assert np.any(w.work == 0)
    assert np.all(w.cost[w.work == 0] == 0.0)
    assert np.all(w.cost[w.work > 0] > 0.0)
    assert seen == [(i, 8) for i in range(1, 9)]
    expect = grid_halo((16, 16, 16), (4, 2, 4), ghost=1, cell_bytes=halo_cell_bytes(3))
    assert np.array_equal(w.halo.indptr, expect.indptr)
    assert np.array_equal(w.halo.nbytes, expect.nbytes)
    # The work counts are the fluid cells of an identical simulation, split by partition.
    sim = FlipSim("two-way-dambreak", (16, 16, 16), parts=(4, 2, 4), seed=1)
    for s in range(8):
        st = sim.step()
        assert np.array_equal(w.work[s], st.fluid_per_part)
        assert w.work[s].sum() == st.fluid_cells
        assert st.particles_per_part is not None
        assert st.particles_per_part.sum() == sim.n_particles


def test_load_varies_in_space_and_time() -> None:
    w = make_trace("two-way-dambreak", (8, 8), 60, cells=64, seed=0)
    assert w.work is not None
    q = w.n_steps // 4
    k = max(1, w.n_parts // 10)
    first = np.argsort(-w.work[:q].mean(axis=0), kind="stable")[:k]
    last = np.argsort(-w.work[-q:].mean(axis=0), kind="stable")[:k]
    overlap = len(set(first) & set(last)) / k
    # The busiest set moves: at most half of it stays (measured 1/6-1/2 for seeds 0-7; a
    # load that stayed put would give 1). Work counts only: the measured seconds in
    # ``w.cost`` are not asserted on (tests never check time).
    assert k == 6 and overlap <= 0.5
    assert np.all(w.work.min(axis=1) < w.work.max(axis=1))  # uneven in space every step
    assert np.any(w.work[0] != w.work[-1])


def test_same_seed_same_fields_and_counts() -> None:
    runs = []
    for seed in (4, 4, 5):
        sim = FlipSim("two-way-dambreak", (32, 32), parts=(4, 4), seed=seed)
        work = [sim.step().fluid_per_part for _ in range(6)]
        runs.append((sim, np.array(work)))
    (a, wa), (b, wb), (c, _) = runs
    assert np.array_equal(a.pos, b.pos) and np.array_equal(a.vel, b.vel)
    assert np.array_equal(a.u[0], b.u[0]) and np.array_equal(a.u[1], b.u[1])
    assert np.array_equal(wa, wb)
    assert not np.array_equal(a.pos[: c.n_particles], c.pos[: a.n_particles])


def test_scenes_and_registry() -> None:
    assert {"two-way-dambreak", "sphere-drop"} <= set(SCENES)
    assert get_app("flip").make_trace is make_trace
    for name in SCENES:
        for ndim in (2, 3):
            spec = scene_spec(name, ndim)
            assert spec.gravity > 0 and spec.fluids
    sim = FlipSim("sphere-drop", (16, 16))
    assert sim.n_particles > 0 and sim.positions.shape == (sim.n_particles, 2)
    # The pool fills row 0 up to x = 0.625, where the solid slab starts: 10 cells.
    assert sim.fluid_mask()[:10, 0].all()


@pytest.mark.parametrize(
    ("kwargs", "where"),
    [
        ({"scene": "waterfall"}, "scene"),
        ({"parts": (4,)}, "parts"),
        ({"parts": (2, 2, 2, 2)}, "parts"),
        ({"parts": (0, 2)}, "parts"),
        ({"parts": 4}, "parts"),
        ({"steps": 0}, "steps"),
        ({"cells": 4}, "cells"),
        ({"cells": (16, 32)}, "cells"),
        ({"cells": (16, 16, 16)}, "cells"),
        ({"cells": 8, "parts": (16, 2)}, "parts"),
        ({"flip_ratio": 1.5}, "flip_ratio"),
        ({"flip_ratio": -0.1}, "flip_ratio"),
        ({"cfl": 0.0}, "cfl"),
        ({"cfl": 50.0}, "cfl"),
        ({"cfl": "fast"}, "cfl"),
        ({"seed": None}, "seed"),
        ({"seed": -1}, "seed"),
        ({"progress": "yes"}, "progress"),
    ],
)
def test_bad_parameters(kwargs: dict, where: str) -> None:
    args = {"scene": "dambreak", "parts": (2, 2), "steps": 1, "cells": 16} | kwargs
    with pytest.raises(InputError, match=f"^{where}"):
        make_trace(args.pop("scene"), args.pop("parts"), args.pop("steps"), **args)
