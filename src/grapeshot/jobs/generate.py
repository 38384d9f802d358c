"""Synthetic workloads: Lublin–Feitelson (JPDC 2003) with users and Tsafrir-style estimates.

The Lublin–Feitelson model gives sizes, run times and arrivals (parameters of its batch jobs,
from the model's own text as ported to GridSim); it has no users and no estimates, so
grapeshot adds both, as the Calana generator does:

* **Sizes**: serial with probability ``SERIAL_PROB``; else log2(size) is two-stage uniform,
  U(ULow, UMed) with probability UProb, else U(UMed, UHi), rounded to a power of two with
  probability ``POW2_PROB``; ``UHi = log2(cpus)``.
* **Run times**: ln(run) is hyper-gamma, Gamma(A1, B1) with probability p = PA·size + PB
  (clipped to [0, 1]), else Gamma(A2, B2); values above 12 are redrawn (≤ 1.9 days).
* **Arrivals**: ln(inter-arrival) ~ Gamma(AARR·ARAR, BARR), then a daily cycle: a homogeneous
  time axis is warped through the cycle's cumulative intensity (48 half-hour buckets weighted
  by Gamma(ANUM, BNUM) CDF differences, starting at 11 o'clock shifted as in the model), and
  the whole axis is scaled to reach the requested offered ``load``.
* **Users** (grapeshot's assumption): Zipf-like popularity over ``users`` (weight 1/rank);
  within a user's job sequence, each job starts a new "session" with probability 1 − repeat,
  and jobs of a session share its first job's size and run time (× lognormal noise σ = 0.2),
  the repeated runs that user-based predictors exploit.
* **Estimates** (Tsafrir, Etsion & Feitelson 2005): requests are modal. A share
  ``max_share`` of the jobs ask for the maximum (``max_estimate``); the others pick one of the
  round values (5 min … 2 days) at least as long as their run time, with popularity
  decreasing with the value.
* **COARE mode**: ``default_share`` of the jobs (that fit) get ``default_walltime_h``.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from grapeshot.jobs.coare import apply_default_walltime
from grapeshot.jobs.trace import JobTrace, make_trace
from grapeshot.model.errors import InputError, check_int, check_positive_number
from grapeshot.model.seed import SeedLike, as_generator

# Lublin–Feitelson batch-job parameters.
SERIAL_PROB = 0.2927
POW2_PROB = 0.6686
ULOW, UMED_OFFSET, UPROB = 1.2, 2.0, 0.875
A1, B1, A2, B2 = 6.57, 0.823, 639.1, 0.0156
PA, PB = -0.003, 0.6986
AARR, BARR, ARAR = 6.0415, 0.8531, 1.0519
ANUM, BNUM = 6.1271, 5.2740
MAX_LOG_RUN = 12.0

#: Round request values (seconds) and their relative popularity (Tsafrir's modal estimates).
ESTIMATE_MODES = np.array(
    [300, 600, 900, 1800, 3600, 7200, 4 * 3600, 8 * 3600, 12 * 3600, 86400, 2 * 86400],
    dtype=np.float64,
)
ESTIMATE_WEIGHTS = np.array([6, 8, 5, 8, 10, 6, 5, 4, 5, 6, 4], dtype=np.float64)


def _sizes(rng: np.random.Generator, n: int, cpus: int) -> np.ndarray:
    uhi = np.log2(cpus)
    umed = max(uhi - UMED_OFFSET, ULOW)
    low = rng.random(n) < UPROB
    e = np.where(low, rng.uniform(ULOW, umed, n), rng.uniform(umed, max(uhi, umed), n))
    e = np.where(rng.random(n) < POW2_PROB, np.round(e), e)
    size = np.minimum(np.round(2.0**e), cpus).astype(np.int64)
    size[rng.random(n) < SERIAL_PROB] = 1
    return np.maximum(size, 1)


def _runtimes(rng: np.random.Generator, size: np.ndarray) -> np.ndarray:
    p = np.clip(PA * size + PB, 0.0, 1.0)
    n = len(size)
    out = np.empty(n)
    todo = np.arange(n)
    while len(todo):  # redraw the few values above the cap, vectorised
        first = rng.random(len(todo)) < p[todo]
        x = np.where(first, rng.gamma(A1, B1, len(todo)), rng.gamma(A2, B2, len(todo)))
        ok = x <= MAX_LOG_RUN
        out[todo[ok]] = x[ok]
        todo = todo[~ok]
    return np.round(np.exp(out))


def _arrivals(rng: np.random.Generator, n: int) -> np.ndarray:
    gaps = np.exp(np.minimum(rng.gamma(AARR * ARAR, BARR, n), 13.0))
    homogeneous = np.cumsum(gaps)
    # Daily cycle: 48 half-hour buckets, Gamma(ANUM, BNUM) CDF differences, shifted by 11 h.
    edges = stats.gamma.cdf(np.arange(49), ANUM, scale=BNUM)
    weights = np.diff(edges) + 1e-3
    weights = np.roll(weights / weights.sum(), 22)
    day = 86400.0
    clock = np.arange(49) * (day / 48)
    cum = np.concatenate(([0.0], np.cumsum(weights))) * day
    days, frac = np.divmod(homogeneous, day)
    return days * day + np.interp(frac, cum, clock)


def _users(rng: np.random.Generator, n: int, users: int) -> np.ndarray:
    w = 1.0 / np.arange(1, users + 1)
    return rng.choice(users, size=n, p=w / w.sum()) + 1


def _sessions(
    rng: np.random.Generator, user: np.ndarray, values: list[np.ndarray], repeat: float
) -> list[np.ndarray]:
    """Copy each session's first value to its later jobs (per user, in arrival order)."""
    n = len(user)
    order = np.lexsort((np.arange(n), user))
    u = user[order]
    new = (rng.random(n) >= repeat) | np.concatenate(([True], u[1:] != u[:-1]))
    first = np.maximum.accumulate(np.where(new, np.arange(n), 0))
    out = []
    for v in values:
        vs = v[order]
        copied = vs[first]
        res = np.empty_like(v)
        res[order] = copied
        out.append(res)
    return out


def _estimates(
    rng: np.random.Generator, run: np.ndarray, max_estimate: float, max_share: float
) -> np.ndarray:
    modes = np.append(ESTIMATE_MODES[ESTIMATE_MODES < max_estimate], max_estimate)
    weights = np.append(ESTIMATE_WEIGHTS[: len(modes) - 1], 0.0)
    ok = modes[None, :] >= run[:, None]
    w = np.where(ok, weights[None, :], 0.0)
    w[:, -1] = np.where(w.sum(axis=1) == 0.0, 1.0, w[:, -1])  # only the maximum fits
    cum = np.cumsum(w, axis=1)
    u = rng.random(len(run)) * cum[:, -1]
    pick = (cum < u[:, None]).sum(axis=1)
    req = modes[np.minimum(pick, len(modes) - 1)]
    req[rng.random(len(run)) < max_share] = max_estimate
    return req


def lublin_feitelson(
    n: int,
    *,
    cpus: int = 128,
    load: float = 0.8,
    users: int = 40,
    repeat: float = 0.7,
    max_estimate_h: float = 48.0,
    max_share: float = 0.1,
    default_walltime_h: float | None = None,
    default_share: float = 0.8,
    seed: SeedLike,
) -> JobTrace:
    """Generate ``n`` jobs for a machine of ``cpus`` processors.

    Parameters
    ----------
    n
        Jobs.
    cpus
        Machine size; sizes are capped at it.
    load
        Offered load Σ size·run / (cpus · span), in (0, 5]: arrivals are scaled to reach it.
    users
        Number of users.
    repeat
        Probability that a user's job repeats the previous session's size and run time.
    max_estimate_h
        The site's maximum request, hours (also the largest allowed run time is ≤ 1.9 days).
    max_share
        Share of jobs that ask for the maximum.
    default_walltime_h, default_share
        COARE mode: this share of jobs gets this request (hours). None disables it.
    seed
        Seed; the same seed gives the same trace.
    """
    n = check_int(n, "--jobs")
    cpus = check_int(cpus, "--cpus")
    load = check_positive_number(load, "--load")
    if load > 5:
        raise InputError("--load", f"got {load}", "an offered load in (0, 5]")
    rng = as_generator(seed)
    size = _sizes(rng, n, cpus)
    run = _runtimes(rng, size)
    submit = _arrivals(rng, n)
    user = _users(rng, n, check_int(users, "--users"))
    size, run = _sessions(rng, user, [size, run], repeat)
    run = np.maximum(np.round(run * rng.lognormal(0.0, 0.2, n)), 1.0)
    req = _estimates(rng, run, max_estimate_h * 3600.0, max_share)
    run = np.minimum(run, req)
    span = submit[-1] - submit[0] if n > 1 else 1.0
    offered = float(np.sum(size * run)) / (cpus * span)
    submit = np.round((submit - submit[0]) * offered / load)
    mem = rng.choice([262144.0, 524288.0, 1048576.0, 2097152.0], size=n) * (user % 3 + 1)
    spec = f"lublin-feitelson:n={n},cpus={cpus},load={load},seed={seed}"
    header = {"Computer": "synthetic", "MaxProcs": str(cpus), "MaxNodes": str(cpus),
              "Note": spec}  # fmt: skip
    trace = make_trace(
        submit=submit, run=run, procs=size, req_time=req, user=user, req_mem=mem,
        source=spec, header=header,
    )  # fmt: skip
    if default_walltime_h is not None:
        trace, _ = apply_default_walltime(trace, default_walltime_h, default_share, seed=rng)
    return trace
