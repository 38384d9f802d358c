"""SPH density + force kernel: numba against the faster of two vectorised numpy versions.

All evaluate the same kernel (Wendland C2 density summation, then Tait pressure, Monaghan
artificial viscosity and gravity) on the same sorted neighbourhood of a resting water column,
built by the app itself with walls (mirror particles) included. Two numpy references, both
fully vectorised, both checked against numba's results (density to 1e-12, forces to 1e-9 of
the largest) before anything is timed; the baseline is whichever is faster in this run:

- *candidate pairs* (:func:`numpy_pairs`): every target against every particle of the
  ``3**(d-1)`` rows of cells around it, built as flat index arrays with no Python loop over
  cells or particles (``np.repeat`` and a cumulative sum), filtered to the in-range pairs,
  densities and forces summed with ``np.bincount``; processed in chunks of
  :data:`PAIR_CHUNK` targets so the pair arrays stay in cache;
- *cell blocks* (:func:`numpy_blocks`): for each occupied cell, its particles against its
  ``3**d`` surrounding cells as a dense ``(n_cell, n_around)`` distance matrix, compacted to
  the in-range pairs that the force pass reuses (a Python loop over cells, vectorised within).

Both include their candidate search in the time, as numba's kernel does.

Counting: a *pair interaction* is one ordered pair ``(i, j)``, ``j != i``, closer than ``h``,
evaluated by one pass; a density + force evaluation performs two per ordered pair. Both
counts are printed; the targets use the per-pass count.

Targets: numba >= 20x the fair numpy baseline, and >= 30 M pair interactions/s on one core.
Run: ``.venv/bin/python benchmarks/bench_sph.py``.
"""

from __future__ import annotations

import os

# One core: numpy's elementwise work is single-threaded anyway; keep any BLAS pool out.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import numpy as np  # noqa: E402

from grapeshot.apps import sph_kernels as K  # noqa: E402
from grapeshot.apps.sph import SPHProgram, make_program  # noqa: E402
from timing import figure  # noqa: E402

TARGET_RATIO = 20.0
TARGET_RATE = 30e6  # pair interactions per second
#: Targets per chunk of :func:`numpy_pairs` (its fastest on this machine: 512-2048).
PAIR_CHUNK = 1024


@dataclass
class Neighbourhood:
    """One partition's sorted neighbourhood, as the app's density phase builds it."""

    prog: SPHProgram
    x: np.ndarray
    v: np.ndarray
    base_rho: np.ndarray
    src: np.ndarray
    cell: np.ndarray
    start: np.ndarray
    targets: np.ndarray
    pshape: np.ndarray
    lo: np.ndarray


def setup(cells: tuple[int, ...]) -> Neighbourhood:
    """The dam-break column on one partition, with densities from one density pass."""
    prog = make_program("dambreak", (1,) * len(cells), cells=cells)
    box = prog.boxes()[0]
    own = prog.init_block(box)["p"]
    ghost = np.zeros((0, prog.ghost_cols))
    lo = np.zeros(len(cells), dtype=np.int64)
    hi = np.asarray(cells, dtype=np.int64)
    status, x, v, src, cell, start, targets, _perm, pshape = K.build_neighbourhood(
        own, ghost, prog.d, prog.h, prog.dom, prog.lengths, lo, hi
    )
    assert status == K.BUILD_OK
    rho = np.empty(len(targets))
    K.density_pass(x, cell, start, targets, pshape, lo, prog.h, prog.sigma, prog.mass, rho)
    # Give the particles some motion so the viscosity branch is exercised.
    rng = np.random.default_rng(0)
    v = v + 0.1 * rng.standard_normal(v.shape) * (np.arange(3) < prog.d)
    return Neighbourhood(prog, x, v, rho, src, cell, start, targets, pshape, lo)


def numba_pass(nb: Neighbourhood) -> tuple[np.ndarray, np.ndarray]:
    """Density then forces with the app's numba kernels."""
    p = nb.prog
    rho = np.empty(len(nb.targets))
    _, nbr_ptr, nbr = K.density_pass(
        nb.x, nb.cell, nb.start, nb.targets, nb.pshape, nb.lo, p.h, p.sigma, p.mass, rho
    )
    acc = np.empty((len(nb.targets), 3))
    K.force_pass(
        nb.x,
        nb.v,
        nb.base_rho,
        nb.src,
        nb.targets,
        nbr_ptr,
        nbr,
        p.h,
        p.sigma,
        p.mass,
        p.rho0,
        p.stiffness,
        p.c0,
        p.params.alpha,
        p.gravity,
        acc,
    )
    return rho, acc


def cell_blocks(nb: Neighbourhood) -> list[tuple[np.ndarray, np.ndarray]]:
    """For each cell holding targets: (sorted positions of its targets, of its neighbours)."""
    rows, _ = K.row_offsets(nb.pshape)
    is_target = np.zeros(nb.x.shape[1], dtype=bool)
    is_target[nb.targets] = True
    blocks = []
    for c in np.unique(nb.cell[nb.targets]):
        mine = np.arange(nb.start[c], nb.start[c + 1])
        mine = mine[is_target[mine]]
        around = np.concatenate([np.arange(nb.start[c + r - 1], nb.start[c + r + 2]) for r in rows])
        blocks.append((mine, around))
    return blocks


def numpy_blocks(
    nb: Neighbourhood, blocks: list[tuple[np.ndarray, np.ndarray]]
) -> tuple[np.ndarray, np.ndarray]:
    """The density and force kernel in numpy, vectorised over cell blocks.

    Like the numba kernel, the density pass finds each block's in-range pairs (a dense
    ``(n_cell, n_around)`` distance matrix, then compaction) and the force pass reuses them,
    so neither pass computes anything for out-of-range candidates beyond the distance.
    Returns density and acceleration of the targets, in sorted order.
    """
    p = nb.prog
    h2, hs = p.h * p.h, 0.5 * p.h
    eps = 0.01 * hs * hs
    x, v = nb.x.T, nb.v
    rho_t = np.empty(len(x))
    pairs = []
    for mine, around in blocks:
        d = x[mine, None, :] - x[None, around, :]
        r2 = np.einsum("ijk,ijk->ij", d, d)
        ii, jj = np.nonzero((r2 < h2) & (mine[:, None] != around[None, :]))
        q = np.sqrt(r2[ii, jj]) / p.h
        w = (1.0 - q) ** 4 * (1.0 + 4.0 * q)
        s = 1.0 + np.bincount(ii, weights=w, minlength=len(mine))  # W(0) for the particle
        rho_t[mine] = p.mass * p.sigma * s
        pairs.append((mine[ii], around[jj], ii, len(mine)))
    # Forces use every particle's density (the app takes them from base entries).
    rho_at = nb.base_rho[nb.src]
    r = rho_at / p.rho0
    pres = np.maximum(p.stiffness * (r**7 - 1.0), 0.0)
    pr2 = pres / rho_at**2
    kfac = 20.0 * p.mass * p.sigma / h2
    acc_t = np.empty((len(x), 3))
    for (mine, _), (i, j, ii, n) in zip(blocks, pairs, strict=True):
        d = x[i] - x[j]
        r2 = np.einsum("ij,ij->i", d, d)
        q = np.sqrt(r2) / p.h
        vr = np.einsum("ij,ij->i", v[i] - v[j], d)
        visc = -2.0 * p.params.alpha * p.c0 * hs * np.minimum(vr, 0.0)
        visc /= (r2 + eps) * (rho_at[i] + rho_at[j])
        coef = (pr2[i] + pr2[j] + visc) * (1.0 - q) ** 3
        for a in range(3):
            acc_t[mine, a] = kfac * np.bincount(ii, weights=coef * d[:, a], minlength=n)
        acc_t[mine] += p.gravity
    return rho_t[nb.targets], acc_t[nb.targets]


def candidate_pairs(nb: Neighbourhood, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (target, candidate) pair of ``targets`` as flat arrays, no loop over cells.

    Returns the target's index into ``targets`` and the candidate's sorted position, in the
    order numba visits them (target by target, rows of cells in C order).
    """
    rows, _ = K.row_offsets(nb.pshape)
    c = nb.cell[targets]
    first = np.stack([nb.start[c + r - 1] for r in rows], axis=1).ravel()
    count = np.stack([nb.start[c + r + 2] for r in rows], axis=1).ravel() - first
    t = np.repeat(np.repeat(np.arange(len(targets)), len(rows)), count)
    offset = np.cumsum(count) - count
    j = np.arange(count.sum()) - np.repeat(offset - first, count)
    return t, j


def numpy_pairs(nb: Neighbourhood) -> tuple[np.ndarray, np.ndarray]:
    """The density and force kernel in numpy over flat arrays of candidate pairs.

    Chunks of :data:`PAIR_CHUNK` targets: candidate pairs, distances, the in-range filter,
    then the density and the three force components as ``np.bincount`` sums. Returns density
    and acceleration of the targets, in sorted order.
    """
    p = nb.prog
    h2, hs = p.h * p.h, 0.5 * p.h
    eps = 0.01 * hs * hs
    x, v = nb.x.T, nb.v
    rho_at = nb.base_rho[nb.src]
    pr2 = np.maximum(p.stiffness * ((rho_at / p.rho0) ** 7 - 1.0), 0.0) / rho_at**2
    kfac = 20.0 * p.mass * p.sigma / h2
    nt = len(nb.targets)
    rho = np.empty(nt)
    acc = np.empty((nt, 3))
    for lo in range(0, nt, PAIR_CHUNK):
        targets = nb.targets[lo : lo + PAIR_CHUNK]
        n = len(targets)
        t, j = candidate_pairs(nb, targets)
        i = targets[t]
        d = x[i] - x[j]
        r2 = np.einsum("ij,ij->i", d, d)
        keep = (r2 < h2) & (i != j)
        t, i, j, d, r2 = t[keep], i[keep], j[keep], d[keep], r2[keep]
        q = np.sqrt(r2) / p.h
        w = (1.0 - q) ** 4 * (1.0 + 4.0 * q)
        rho[lo : lo + n] = p.mass * p.sigma * (1.0 + np.bincount(t, weights=w, minlength=n))
        vr = np.einsum("ij,ij->i", v[i] - v[j], d)
        visc = -2.0 * p.params.alpha * p.c0 * hs * np.minimum(vr, 0.0)
        visc /= (r2 + eps) * (rho_at[i] + rho_at[j])
        coef = (pr2[i] + pr2[j] + visc) * (1.0 - q) ** 3
        for a in range(3):
            acc[lo : lo + n, a] = kfac * np.bincount(t, weights=coef * d[:, a], minlength=n)
    acc += p.gravity
    return rho, acc


def in_range_pairs(nb: Neighbourhood, blocks: list[tuple[np.ndarray, np.ndarray]]) -> int:
    """Ordered pairs ``(i, j)``, ``j != i``, of targets ``i`` with ``|x_i - x_j| < h``."""
    h2 = nb.prog.h**2
    x = nb.x.T
    total = 0
    for mine, around in blocks:
        d = x[mine, None, :] - x[None, around, :]
        r2 = np.einsum("ijk,ijk->ij", d, d)
        total += int(((r2 < h2) & (mine[:, None] != around[None, :])).sum())
    return total


def best_times(fns: list, repeats: list[int], rounds: int = 3) -> list[float]:
    """Best CPU time of this thread per function, s, over interleaved rounds.

    CPU time rather than wall time: on a shared machine other processes stretch wall time
    but not the cycles this one core spends. The functions take turns within each round
    (``repeats[i]`` calls of ``fns[i]``), so a busy spell of the machine affects all of them
    alike; the best time drops cache warm-up and interference.
    """
    best = [np.inf] * len(fns)
    for _ in range(rounds):
        for k, (fn, rep) in enumerate(zip(fns, repeats, strict=True)):
            for _ in range(rep):
                t0 = time.thread_time()
                fn()
                best[k] = min(best[k], time.thread_time() - t0)
    return best


def bench(cells: tuple[int, ...]) -> tuple[float, float]:
    """Time one configuration; returns (ratio to the fair baseline, numba interactions/s)."""
    nb = setup(cells)
    blocks = cell_blocks(nb)
    rho_nb, acc_nb = numba_pass(nb)  # compiles (or loads the cache)
    scale = np.abs(acc_nb[:, : nb.prog.d]).max()
    references = {
        "candidate pairs": lambda: numpy_pairs(nb),
        "cell blocks": lambda: numpy_blocks(nb, blocks),
    }
    worst = 0.0
    for name, fn in references.items():
        rho_np, acc_np = fn()
        assert np.allclose(rho_np, rho_nb, rtol=1e-12, atol=0.0), f"{name}: density differs"
        assert np.allclose(acc_np, acc_nb, rtol=1e-9, atol=1e-9 * scale), f"{name}: forces"
        worst = max(worst, float(np.abs(acc_np - acc_nb).max()) / scale)
    pairs = in_range_pairs(nb, blocks)
    times = best_times([lambda: numba_pass(nb), *references.values()], [5, 1, 1])
    t_nb, t_refs = times[0], dict(zip(references, times[1:], strict=True))
    fair = min(t_refs, key=t_refs.get)
    t_np = t_refs[fair]
    interactions = 2 * pairs  # one per ordered pair in each of the two passes
    rate_nb = interactions / t_nb
    d = len(cells)
    print(
        f"{d}-D dam-break column, cells {cells}: {len(nb.targets)} particles, "
        f"{pairs / len(nb.targets):.1f} neighbours each, {pairs} ordered pairs per pass"
    )
    print(
        f"  numba  density+force {t_nb * 1e3:8.2f} ms  {rate_nb / 1e6:8.1f} M interactions/s  "
        f"({pairs / t_nb / 1e6:.1f} M pairs/s counting each pair once per step)"
    )
    for name, t in t_refs.items():
        mark = "  <- baseline (the faster)" if name == fair else ""
        print(
            f"  numpy  {name:<16} {t * 1e3:8.2f} ms  {interactions / t / 1e6:8.2f} M "
            f"interactions/s  ratio {t / t_nb:5.1f}x{mark}"
        )
    print(f"  numpy results equal numba's: forces within {worst:.1e} of the largest")
    ratio = figure(
        f"SPH {d}-D density+force, {len(nb.targets)} particles",
        t_nb,
        t_np,
        baseline_name=f"vectorised numpy ({fair}), the faster of two",
        same=True,
        target=TARGET_RATIO,
        note="CPU time of the thread, best of interleaved rounds",
    )
    verdict_rate = "PASS" if rate_nb >= TARGET_RATE else "MISS"
    print(
        f"  numba rate {rate_nb / 1e6:6.1f} M/s  target >= {TARGET_RATE / 1e6:.0f} M/s  "
        f"{verdict_rate}"
    )
    return ratio, rate_nb


def main() -> None:
    """Run the 2-D and 3-D configurations."""
    for cells in ((128, 64), (48, 24, 16)):
        bench(cells)


if __name__ == "__main__":
    main()
