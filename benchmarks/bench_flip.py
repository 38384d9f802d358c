"""Particles per second of FLIP's numba transfer kernels against vectorised numpy, one core.

Run: ``python benchmarks/bench_flip.py [--particles N] [--cells C]``. Sets up ``N`` particles
(default 400,000) spread over the lower half of a ``C³`` MAC grid (default 64) with random
velocities, then times, best of a few repeats after a warm-up:

- P2G: :func:`grapeshot.apps.flip_kernels.p2g` against :func:`numpy_p2g` (the same trilinear
  weighted-mean splat: flat corner indices, one ``np.bincount`` per corner for the weighted
  velocities and one for the weights; ``np.add.at``, a known slow path, is 2-3x slower);
- G2P: :func:`grapeshot.apps.flip_kernels.g2p` against :func:`numpy_g2p` (the same PIC/FLIP
  blend with gathers by flat index from the raveled grids);

checks both pairs agree to 1e-10 in the same run, and prints particles per second and the
numba/numpy ratio. Both sides are single-threaded (numba kernels are serial loops; bincount
and gathers run on one core). Numbers only; no plotting, no asserts on time.
"""

from __future__ import annotations

import argparse
import itertools
import math

import numpy as np

from grapeshot.apps import flip_kernels as kernels
from timing import best_of, figure

REPEATS = 3
FLIP_RATIO = 0.95


def _stencil(pos: np.ndarray, c: int, dx: float, shape: tuple[int, int, int]) -> list:
    """Flat corner indices and trilinear weights of component ``c`` at every particle.

    Returns a list of 8 ``(flat index (N,), weight (N,))`` pairs into the raveled grid of
    ``shape``, with the same clamping as the numba kernels.
    """
    off = np.full(3, 0.5)
    off[c] = 0.0
    n = np.array(shape)
    f = pos / dx - off
    i0 = np.clip(np.floor(f).astype(np.int64), 0, np.maximum(n - 2, 0))
    t = np.clip(f - i0, 0.0, 1.0)
    i1 = np.minimum(i0 + 1, n - 1)
    strides = np.array([shape[1] * shape[2], shape[2], 1])
    lo, hi = i0 * strides, i1 * strides
    out = []
    for corner in itertools.product((0, 1), repeat=3):
        idx = sum(hi[:, a] if corner[a] else lo[:, a] for a in range(3))
        wt = np.ones(len(pos))
        for a in range(3):
            wt *= t[:, a] if corner[a] else 1.0 - t[:, a]
        out.append((idx, wt))
    return out


def numpy_p2g(pos: np.ndarray, vel: np.ndarray, dx: float, shapes: list) -> list[np.ndarray]:
    """Vectorised-numpy P2G: per component, the weighted mean velocity on each face."""
    grids = []
    for c, shape in enumerate(shapes):
        size = math.prod(shape)
        grid = np.zeros(size)
        weight = np.zeros(size)
        for idx, wt in _stencil(pos, c, dx, shape):
            grid += np.bincount(idx, weights=wt * vel[:, c], minlength=size)
            weight += np.bincount(idx, weights=wt, minlength=size)
        np.divide(grid, weight, out=grid, where=weight > 0.0)
        grids.append(grid.reshape(shape))
    return grids


def numpy_g2p(
    pos: np.ndarray, vel: np.ndarray, dx: float, new: list, delta: list, flip: float
) -> np.ndarray:
    """Vectorised-numpy G2P: ``flip·(v + Δu(x)) + (1 − flip)·u(x)``, returns new velocities."""
    out = np.empty_like(vel)
    for c in range(3):
        pic = np.zeros(len(pos))
        dif = np.zeros(len(pos))
        grid, change = new[c].ravel(), delta[c].ravel()
        for idx, wt in _stencil(pos, c, dx, new[c].shape):
            pic += wt * grid[idx]
            dif += wt * change[idx]
        out[:, c] = flip * (vel[:, c] + dif) + (1.0 - flip) * pic
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--particles", type=int, default=400_000)
    parser.add_argument("--cells", type=int, default=64)
    args = parser.parse_args()
    n, cells = args.particles, args.cells
    dx = 1.0 / cells
    rng = np.random.default_rng(0)
    # Water in the lower half of the box, as after a dam break: particles cluster per cell.
    pos = rng.random((n, 3)) * np.array([1.0, 0.5, 1.0])
    vel = rng.normal(size=(n, 3))
    shapes = [(cells + 1, cells, cells), (cells, cells + 1, cells), (cells, cells, cells + 1)]
    grids = [np.zeros(s) for s in shapes]
    weights = [np.zeros(s) for s in shapes]
    kernels.warm_up()

    def numba_p2g() -> None:
        kernels.p2g(pos, vel, dx, *grids, *weights)

    t_p2g = best_of(numba_p2g, REPEATS)
    t_p2g_np = best_of(lambda: numpy_p2g(pos, vel, dx, shapes), REPEATS)
    ref = numpy_p2g(pos, vel, dx, shapes)
    p2g_err = max(float(np.max(np.abs(g - r))) for g, r in zip(grids, ref, strict=True))

    new = [g.copy() for g in grids]
    delta = [rng.normal(size=s) * 0.1 for s in shapes]
    work = vel.copy()

    def numba_g2p() -> None:
        work[:] = vel
        kernels.g2p(pos, work, dx, *new, *delta, FLIP_RATIO)

    t_g2p = best_of(numba_g2p, REPEATS)
    t_g2p_np = best_of(lambda: numpy_g2p(pos, vel, dx, new, delta, FLIP_RATIO), REPEATS)
    g2p_err = float(np.max(np.abs(work - numpy_g2p(pos, vel, dx, new, delta, FLIP_RATIO))))

    print(f"FLIP transfers, {n:,} particles on a {cells}^3 MAC grid, one core, best of {REPEATS}")
    print(f"{'kernel':<6} {'numba p/s':>12} {'numpy p/s':>12} {'ratio':>7} {'max |diff|':>11}")
    for name, t, t_np, err in (
        ("P2G", t_p2g, t_p2g_np, p2g_err),
        ("G2P", t_g2p, t_g2p_np, g2p_err),
    ):
        print(f"{name:<6} {n / t:>12.3e} {n / t_np:>12.3e} {t_np / t:>6.1f}x {err:>11.1e}")
        if err > 1e-10:
            print(f"  WARNING: {name} numba and numpy disagree by {err:.1e}")
    baselines = {"P2G": "numpy np.bincount splat", "G2P": "numpy flat-index gathers"}
    for name, t, t_np, err in (
        ("P2G", t_p2g, t_p2g_np, p2g_err),
        ("G2P", t_g2p, t_g2p_np, g2p_err),
    ):
        figure(
            f"FLIP {name}, {n:,} particles, {cells}^3",
            t,
            t_np,
            baseline_name=baselines[name],
            same=err <= 1e-10,
            note=f"max |difference| {err:.1e}",
        )


if __name__ == "__main__":
    main()
