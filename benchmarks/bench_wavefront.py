"""Wavefront kernel speed: the numba narrow-band march against a vectorised numpy version.

Both run one Jacobi band sweep (Godunov upwind update of every band cell from its neighbours'
times, kept if earlier and within the band) on the same state: the diagonal scene part way
through, fronts in mid-domain, on one core. Prints cells per second over the whole grid (both
scan every cell; numba skips reached and far cells after one test, numpy computes all and
masks), the ratio, and the largest difference of the resulting times.

Run: ``.venv/bin/python benchmarks/bench_wavefront.py [--cells 512] [--dim 2] [--repeat 5]``.
"""

from __future__ import annotations

import argparse

import numpy as np

from grapeshot.apps import wavefront as wf
from grapeshot.runtime.serial import run_serial
from timing import best_of, figure


def numpy_godunov(m: np.ndarray, h: np.ndarray, slowness: np.ndarray) -> np.ndarray:
    """:func:`wavefront.godunov` for arrays: ``m`` ``(n, d)`` neighbour times, ``h`` ``(d,)``."""
    order = np.argsort(m, axis=1, kind="stable")
    m = np.take_along_axis(m, order, axis=1)
    hs = h[order]
    t = m[:, 0] + hs[:, 0] * slowness
    sa = np.zeros(len(m))
    sb = np.zeros(len(m))
    sc = np.zeros(len(m))
    going = np.ones(len(m), dtype=bool)
    with np.errstate(invalid="ignore"):
        for k in range(m.shape[1]):
            if k > 0:
                going &= (m[:, k] < np.inf) & (t > m[:, k])
            w = 1.0 / (hs[:, k] * hs[:, k])
            mk = np.where(going, m[:, k], 0.0)
            sa += np.where(going, w, 0.0)
            sb += np.where(going, w * mk, 0.0)
            sc += np.where(going, w * mk * mk, 0.0)
            if k > 0:
                disc = sb * sb - sa * (sc - slowness * slowness)
                going &= disc >= 0.0
                t = np.where(going, (sb + np.sqrt(np.where(going, disc, 0.0))) / sa, t)
    return np.where(m[:, 0] == np.inf, np.inf, t)


def numpy_march(tt, speed, g, spacing, t_old, t_new, band):
    """One band sweep on the interior of the padded grid ``tt`` (in place), vectorised."""
    d = tt.ndim
    inner = tuple(slice(g, n - g) for n in tt.shape)
    told = tt[inner]
    ms = []
    for a in range(d):
        lo = list(inner)
        hi = list(inner)
        lo[a] = slice(g - 1, tt.shape[a] - g - 1)
        hi[a] = slice(g + 1, tt.shape[a] - g + 1)
        ms.append(np.minimum(tt[tuple(lo)], tt[tuple(hi)]))
    m = np.stack(ms, axis=-1)
    known = np.isfinite(told) | np.isfinite(m).any(axis=-1)
    active = (told > t_old) & known
    f = speed[inner][active]
    cand = numpy_godunov(m[active], np.asarray(spacing), 1.0 / f)
    accept = (cand < told[active]) & (cand <= t_new + band * min(spacing) / f)
    new = told[active]
    new[accept] = cand[accept]
    told[active] = new
    return int(active.sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=512, help="cells per axis")
    parser.add_argument("--dim", type=int, default=2, choices=(2, 3))
    parser.add_argument("--repeat", type=int, default=5, help="timings; the best is kept")
    args = parser.parse_args()
    n, d = args.cells if args.dim == 2 else min(args.cells, 128), args.dim
    program = wf.make_program("diagonal", (1,) * d, cells=n)
    # Part way: the fronts have run a fifth of the way to the far corners.
    run = run_serial(program, int(0.2 * n / np.sqrt(d) / program.config.cfl))
    box, block = run.boxes[0], run.blocks[0]
    cfg = program.config
    t_old = run.time
    t_new = t_old + float(block["out"][1])
    start = block["T"].copy()
    work = {}

    def numba_march() -> None:
        tt = start.copy()
        wf.wavefront_march(
            tt.reshape(-1), block["speed"].reshape(-1), block["cells"],
            np.asarray(tt.strides, dtype=np.int64) // 8, np.asarray(program.spacing),
            t_old, t_new, cfg.band, cfg.cfl, block["pend_idx"], block["pend_val"], block["out"],
        )  # fmt: skip
        work["numba"] = tt

    def numpy_version() -> None:
        tt = start.copy()
        work["band"] = numpy_march(
            tt, block["speed"], box.ghost, program.spacing, t_old, t_new, cfg.band
        )
        work["numpy"] = tt

    numba_march()  # compile / load the cache outside the timing
    copy = best_of(lambda: start.copy(), args.repeat, warm_up=False)  # both versions pay one copy
    t_numba = best_of(numba_march, args.repeat, warm_up=False) - copy
    t_numpy = best_of(numpy_version, args.repeat, warm_up=False) - copy
    cells = n**d
    a, b = work["numba"], work["numpy"]
    with np.errstate(invalid="ignore"):  # inf - inf where both are still unknown
        diff = float(np.abs(np.where(a == b, 0.0, a - b)).max())
    print(f"wavefront march, {n}^{d} cells, band {work['band']} cells, one core")
    print(f"  numba : {t_numba * 1e3:8.2f} ms  {cells / t_numba / 1e6:8.1f} Mcells/s")
    print(f"  numpy : {t_numpy * 1e3:8.2f} ms  {cells / t_numpy / 1e6:8.1f} Mcells/s")
    print(f"  ratio numba/numpy speed: {t_numpy / t_numba:.1f}x   max |difference|: {diff:.2e}")
    figure(
        f"wavefront band sweep, {n}^{d} cells",
        t_numba,
        t_numpy,
        baseline_name="vectorised numpy sweep",
        same=diff == 0.0,
        note="bitwise",
    )


if __name__ == "__main__":
    main()
