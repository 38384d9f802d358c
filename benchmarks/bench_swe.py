"""Shallow-water kernel speed: the numba stage against a vectorised numpy version of it.

Both compute one Heun stage (MUSCL + hydrostatic reconstruction + HLL face records, then the
cell update with bed source, friction and dry reset) on the same state, a two-way dam break
part way through, on one core. Prints cells per second of each, the ratio, and the largest
difference between the two results (they follow the same formulas, so it is round-off).

Run: ``.venv/bin/python benchmarks/bench_swe.py [--cells 512,256] [--repeat 5]``.
"""

from __future__ import annotations

import argparse

import numpy as np

from grapeshot.apps import swe
from grapeshot.runtime.serial import run_serial
from timing import best_of, figure

H, HU, HV = swe.H, swe.HU, swe.HV


def _minmod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(a * b <= 0.0, 0.0, np.where(np.abs(a) < np.abs(b), a, b))


def _velocity(h: np.ndarray, hq: np.ndarray, h_dry: float) -> np.ndarray:
    wet = h > h_dry
    return np.where(wet, hq / np.where(wet, h, 1.0), 0.0)


def _hll(hl, ul, vl, hr, ur, vr, grav):
    cl = np.sqrt(grav * hl)
    cr = np.sqrt(grav * hr)
    dry_l = hl <= 0.0
    dry_r = hr <= 0.0
    sl = np.where(dry_l, ur - 2.0 * cr, np.where(dry_r, ul - cl, np.minimum(ul - cl, ur - cr)))
    sr = np.where(dry_l, ur + cr, np.where(dry_r, ul + 2.0 * cl, np.maximum(ul + cl, ur + cr)))
    ql, qr = hl * ul, hr * ur
    fl = (ql, ql * ul + 0.5 * grav * hl * hl, ql * vl)
    fr = (qr, qr * ur + 0.5 * grav * hr * hr, qr * vr)
    jump = (hr - hl, qr - ql, hr * vr - hl * vl)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / (sr - sl)
        star = [(sr * a - sl * b + sl * sr * j) * inv for a, b, j in zip(fl, fr, jump, strict=True)]
    both_dry = dry_l & dry_r
    out = []
    for a, b, s in zip(fl, fr, star, strict=True):
        f = np.where(sl >= 0.0, a, np.where(sr <= 0.0, b, s))
        out.append(np.where(both_dry, 0.0, f))
    return out


def _faces(qa, qb, qc, qd, ba, bb, bc, bd, kn, kt, h_dry, grav):
    """Face records (the 8 components of swe._face) for arrays of faces ``a, b | c, d``."""
    ha, hb, hc, hd = qa[..., H], qb[..., H], qc[..., H], qd[..., H]
    ea, eb, ec, ed = ha + ba, hb + bb, hc + bc, hd + bd
    ua, ub, uc, ud = (_velocity(q[..., H], q[..., kn], h_dry) for q in (qa, qb, qc, qd))
    va, vb, vc, vd = (_velocity(q[..., H], q[..., kt], h_dry) for q in (qa, qb, qc, qd))
    left2 = (ha > h_dry) & (hb > h_dry) & (hc > h_dry)
    right2 = (hb > h_dry) & (hc > h_dry) & (hd > h_dry)
    hl = np.where(left2, hb + 0.5 * _minmod(hb - ha, hc - hb), hb)
    el = np.where(left2, eb + 0.5 * _minmod(eb - ea, ec - eb), eb)
    ul = np.where(left2, ub + 0.5 * _minmod(ub - ua, uc - ub), ub)
    vl = np.where(left2, vb + 0.5 * _minmod(vb - va, vc - vb), vb)
    hr = np.where(right2, hc - 0.5 * _minmod(hc - hb, hd - hc), hc)
    er = np.where(right2, ec - 0.5 * _minmod(ec - eb, ed - ec), ec)
    ur = np.where(right2, uc - 0.5 * _minmod(uc - ub, ud - uc), uc)
    vr = np.where(right2, vc - 0.5 * _minmod(vc - vb, vd - vc), vc)
    bl, br = el - hl, er - hr
    btop = np.maximum(bl, br)
    hls = np.maximum(0.0, el - btop)
    hrs = np.maximum(0.0, er - btop)
    dl, dr = hls <= h_dry, hrs <= h_dry
    hls, ul, vl = np.where(dl, 0.0, hls), np.where(dl, 0.0, ul), np.where(dl, 0.0, vl)
    hrs, ur, vr = np.where(dr, 0.0, hrs), np.where(dr, 0.0, ur), np.where(dr, 0.0, vr)
    f0, f1, f2 = _hll(hls, ul, vl, hrs, ur, vr, grav)
    return (
        f0,
        f1 + 0.5 * grav * (hl * hl - hls * hls),
        f1 + 0.5 * grav * (hr * hr - hrs * hrs),
        f2,
        hl,
        bl,
        hr,
        br,
    )


def numpy_stage(q, bed, g, dt, dx, dy, h_dry, grav, manning):
    """Heun's first stage ``q + dt L(q)`` on the interior, vectorised (the reference)."""
    nx, ny = q.shape[0] - 2 * g, q.shape[1] - 2 * g
    jy = slice(g, g + ny)
    ix = slice(g, g + nx)

    def sx(k: int) -> slice:  # cells k-th to the side of each x-face (k in -2..1)
        return slice(g + k, g + nx + 1 + k)

    def sy(k: int) -> slice:
        return slice(g + k, g + ny + 1 + k)

    fx = _faces(
        *(q[sx(k), jy] for k in (-2, -1, 0, 1)), *(bed[sx(k), jy] for k in (-2, -1, 0, 1)),
        HU, HV, h_dry, grav,
    )  # fmt: skip
    fy = _faces(
        *(q[ix, sy(k)] for k in (-2, -1, 0, 1)), *(bed[ix, sy(k)] for k in (-2, -1, 0, 1)),
        HV, HU, h_dry, grav,
    )  # fmt: skip
    h = q[..., H]
    wet = h[ix, jy] > h_dry
    act_w = wet | (h[g - 1 : g + nx - 1, jy] > h_dry)
    act_e = wet | (h[g + 1 : g + nx + 1, jy] > h_dry)
    act_s = wet | (h[ix, g - 1 : g + ny - 1] > h_dry)
    act_n = wet | (h[ix, g + 1 : g + ny + 1] > h_dry)
    kx, ky = dt / dx, dt / dy

    def west(c):
        return np.where(act_w, fx[c][:-1], 0.0)

    def east(c):
        return np.where(act_e, fx[c][1:], 0.0)

    def south(c):
        return np.where(act_s, fy[c][:, :-1], 0.0)

    def north(c):
        return np.where(act_n, fy[c][:, 1:], 0.0)

    vh = q[ix, jy, H] + kx * west(0) - kx * east(0) + ky * south(0) - ky * north(0)
    vhu = q[ix, jy, HU] + kx * west(2) - kx * east(1) + ky * south(3) - ky * north(3)
    vhv = q[ix, jy, HV] + kx * west(3) - kx * east(3) + ky * south(2) - ky * north(1)
    src_x = kx * 0.5 * grav * (fx[6][:-1] + fx[4][1:]) * (fx[5][1:] - fx[7][:-1])
    src_y = ky * 0.5 * grav * (fy[6][:, :-1] + fy[4][:, 1:]) * (fy[5][:, 1:] - fy[7][:, :-1])
    vhu = np.where(wet, vhu - src_x, vhu)
    vhv = np.where(wet, vhv - src_y, vhv)
    dry = vh <= h_dry
    vhu, vhv = np.where(dry, 0.0, vhu), np.where(dry, 0.0, vhv)
    if manning > 0.0:
        with np.errstate(divide="ignore", invalid="ignore"):
            speed = np.sqrt(vhu * vhu + vhv * vhv) / vh
            damp = 1.0 / (1.0 + dt * grav * manning**2 * speed / vh ** (4.0 / 3.0))
        vhu, vhv = np.where(dry, vhu, vhu * damp), np.where(dry, vhv, vhv * damp)
    return np.stack([vh, vhu, vhv], axis=-1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", default="512,256", help="cells per axis NX,NY")
    parser.add_argument("--repeat", type=int, default=5, help="timings; the best is kept")
    args = parser.parse_args()
    cells = tuple(int(x) for x in args.cells.split(","))
    program = swe.make_program("two-way-dambreak", (1, 1), cells=cells)
    # A state part way through: sheets running down the bowl, the floor still partly dry.
    run = run_serial(program, 40)
    box, block = run.boxes[0], run.blocks[0]
    program.phases[1].exchange.boundary(block, box)  # fill the wall ghosts
    cfg = program.config
    dx, dy = program.spacing
    g = box.ghost
    dt = cfg.cfl / program.phases[0].kernel(block, box, None)
    q, bed, fx, fy = block["q"], block["bed"], block["fx"], block["fy"]
    out = np.zeros_like(q)
    wet = np.zeros(1, dtype=np.int64)
    man = cfg.setup.manning

    def numba_stage() -> None:
        swe.swe_stage(q, q, bed, fx, fy, out, g, dt, dx, dy, cfg.h_dry, cfg.gravity, man,
                      1e-9, True, wet)  # fmt: skip

    numba_stage()  # compile / load the cache outside the timing
    reference = numpy_stage(q, bed, g, dt, dx, dy, cfg.h_dry, cfg.gravity, man)
    t_numba = best_of(numba_stage, args.repeat, warm_up=False)
    t_numpy = best_of(
        lambda: numpy_stage(q, bed, g, dt, dx, dy, cfg.h_dry, cfg.gravity, man),
        args.repeat,
        warm_up=False,
    )
    n = cells[0] * cells[1]
    wet = int((q[box.interior()][..., H] > cfg.h_dry).sum())
    diff = float(np.abs(out[box.interior()] - reference).max())
    print(f"swe stage, {cells[0]} x {cells[1]} cells ({wet / n:.0%} wet), one core")
    print(f"  numba : {t_numba * 1e3:8.2f} ms  {n / t_numba / 1e6:8.2f} Mcells/s")
    print(f"  numpy : {t_numpy * 1e3:8.2f} ms  {n / t_numpy / 1e6:8.2f} Mcells/s")
    print(f"  ratio numba/numpy speed: {t_numpy / t_numba:.1f}x   max |difference|: {diff:.2e}")
    figure(
        f"SWE Heun stage, {cells[0]} x {cells[1]} cells",
        t_numba,
        t_numpy,
        baseline_name="vectorised numpy stage",
        same=diff <= 1e-12,
        note=f"max |difference| {diff:.1e}",
    )


if __name__ == "__main__":
    main()
