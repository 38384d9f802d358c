"""Load imbalance factor (LIF) of a random placement of busy/idle micro-partitions.

The model of Birdshot §5: ``n`` nodes, ``s`` partitions per node, a fraction ``p`` of all
partitions *busy* (each with the same work), the rest idle. Partitions are placed on nodes
uniformly at random. With ``M`` the number of busy partitions on the most loaded node,

``LIF = M / (average busy partitions per node) - 1``.

Two readings of "placed at random" are offered (``model=``):

``"binomial"``
    The paper's appendix: each node's busy count is an independent ``Binomial(s, p)``, so
    ``P(M <= k) = F(k)^n`` exactly, with ``F`` the binomial CDF. The LIF is normalised by the
    *expected* mean ``p s`` (as the paper's derivation does; the realised mean varies a little
    from placement to placement). Computed exactly, in microseconds, for any size.
``"fixed-count"``
    What Birdshot's placement really does: exactly ``s`` partitions per node and exactly
    ``B = round(p n s)`` busy ones overall, so the busy counts are multivariate hypergeometric
    and the mean ``B / n`` is exact. Computed exactly by conditioning (see
    :func:`max_cdf`) where that is affordable, else by a seeded Monte Carlo with its standard
    error.

Birdshot's eq. 2 (:func:`lif_eq2`) is the first term of the extreme-value asymptotics of
``M``; :func:`eq2_bias_map` tabulates where it over- and underestimates the exact value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from grapeshot.model.errors import InputError, check_int, check_probability
from grapeshot.model.seed import SeedLike, as_generator
from grapeshot.theory import binomial_scalar

Model = Literal["binomial", "fixed-count"]
Method = Literal["exact", "monte-carlo", "asymptotic"]

#: The models :func:`expected_lif` knows, as the command line spells them.
MODELS: tuple[str, ...] = ("binomial", "fixed-count")
#: Quantiles of the LIF reported by default (median, 90th and 99th percentile).
DEFAULT_QUANTILES: tuple[float, ...] = (0.5, 0.9, 0.99)
#: Monte Carlo trials when the fixed-count model has to fall back to sampling.
DEFAULT_TRIALS = 10_000
#: Budget of the exact fixed-count route, in units of ``L log2 L`` summed over the ``k`` it
#: evaluates (``L`` the FFT length for that ``k``). One unit costs 5-10 ns on a 2-core
#: x86 machine, so the limit keeps the exact route under about a second; above it,
#: ``method="auto"`` samples instead.
EXACT_COST_LIMIT = 1e8
#: Probabilities of ``M <= k`` below this (or within this of 1) are taken as 0 (or 1) by the
#: fixed-count route, on rigorous bounds (negative association, union bound).
FIXED_COUNT_CUT = 1e-20
#: Bernstein exponent for the FFT length of the fixed-count route: aliased mass < 2 exp(-100).
_BERNSTEIN_C = 100.0
#: Values drawn per Monte Carlo chunk (bounds memory to ~32 MiB of int64 per chunk).
_MC_CHUNK_VALUES = 1 << 22
#: Largest count (nodes, partitions per node) the theory takes: the range of int64, in which
#: every kernel counts (and past which Python's floats overflow).
MAX_COUNT = (1 << 63) - 1
#: Budget of the binomial model's exact route, in values of ``k`` its walks visit (estimated
#: before any is visited, :func:`binomial_walk`): about a second interpreted. Above it the
#: answer is the normal approximation with its skewness term (:func:`_binomial_asymptotic`),
#: whose relative error is below ``asymptotic_error(n, sigma)`` (1e-8 or less there).
BINOMIAL_WALK_LIMIT = 2_000_000
#: Budget of the fixed-count Monte Carlo fallback, in counts drawn (``trials × n``; ~200 ns
#: each, so about 3 s).
MC_VALUE_LIMIT = 1 << 24
#: Slots (``n × s``) numpy's multivariate hypergeometric sampler takes ("marginals" method).
MC_MAX_SLOTS = 10**9 - 1
#: Nodes from which the fixed-count model beyond both budgets is answered by the binomial
#: model at ``p' = B / (n s)`` (its limit as ``n`` grows; E[LIF] within ~1e-4 relative and the
#: same quantiles from 1000 nodes on, in checks against the exact route).
ASYMPTOTIC_MIN_NODES = 1000
#: Work of each ``k`` the exact fixed-count route computes besides its FFT (tilt, Python
#: steps: ~200 µs), in units of ``L log2 L`` (~15 ns each).
FIXED_COUNT_UNITS_PER_K = 1.5e4
#: Largest ``s`` the exact fixed-count route plans for (its tables hold ``s + 1`` values).
_PLAN_MAX_PARTS = 1 << 22
#: Largest ``n s`` the exact fixed-count route plans for (scipy's hypergeometric in floats).
_PLAN_MAX_SLOTS = 1 << 53


# --------------------------------------------------------------------------------------------
# Validation: every message names the parameter as the command line spells it.


def _check_count(value: int, where: str) -> int:
    # Two checks, two messages: a count below 1 is not one; one above 2^63 - 1 is out of range.
    n = check_int(value, where)
    return check_int(
        n, where, maximum=MAX_COUNT, expected=f"an integer from 1 to {MAX_COUNT} (2^63 - 1)"
    )


def _check_nodes(nodes: int) -> int:
    return _check_count(nodes, "--nodes")


def _check_parts(parts_per_node: int) -> int:
    return _check_count(parts_per_node, "--parts-per-node")


def _check_busy(busy: float) -> float:
    return check_probability(busy, "--busy")


def _check_model(model: str) -> str:
    if model not in MODELS:
        raise InputError("--model", f"got {model!r}", "one of " + ", ".join(MODELS))
    return model


def _check_quantiles(quantiles: Sequence[float]) -> tuple[float, ...]:
    out = []
    for q in quantiles:
        try:
            x = float(q)
        except (TypeError, ValueError):
            raise InputError("quantiles", f"got {q!r}", "numbers in (0, 1)") from None
        if not 0.0 < x < 1.0:
            raise InputError("quantiles", f"got {q!r}", "numbers in (0, 1)")
        out.append(x)
    return tuple(out)


def _validate_seed(seed: SeedLike) -> None:
    """Refuse a bad seed up front (even when the result turns out exact and never uses it)."""
    if isinstance(seed, np.random.Generator):
        return
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise InputError("--seed", f"got {seed!r}", "a non-negative integer")


def _check_seed(seed: SeedLike) -> np.random.Generator:
    _validate_seed(seed)
    return as_generator(seed)


def _fixed_count_busy(nodes: int, parts_per_node: int, busy: float) -> int:
    """``B = round(p n s)`` (half to even, as Python rounds): the fixed-count busy total."""
    total = nodes * parts_per_node
    b = round(busy * total)
    if b == 0:
        raise InputError(
            "--busy",
            f"{busy!r} of {total} partitions rounds to 0 busy partitions",
            "at least one busy partition (raise --busy, --nodes or --parts-per-node)",
        )
    return min(b, total)


# --------------------------------------------------------------------------------------------
# Eq. 2


def lif_eq2(nodes: int, parts_per_node: int, busy: float) -> float:
    """Birdshot's eq. 2: ``E[LIF] ~ sqrt(2 ln(n) (1/p - 1) / s)``.

    The leading term of the extreme-value expansion of the maximum of ``n`` Binomial(s, p)
    counts (the paper's appendix, eq. A.2 without its ``K Y_n`` and ``log log n`` terms), with
    the natural logarithm. It is asymptotic in ``n`` and in ``p s``: see :func:`eq2_bias_map`
    for where it is not on the safe side.

    Parameters
    ----------
    nodes
        Number of nodes ``n`` (>= 1).
    parts_per_node
        Partitions per node ``s`` (>= 1).
    busy
        Fraction ``p`` of partitions that are busy, in ``(0, 1]``.

    Returns
    -------
    float
        The approximate expected LIF (dimensionless; 0.21 means the most loaded node has 21 %
        more busy partitions than the average).
    """
    n = _check_nodes(nodes)
    s = _check_parts(parts_per_node)
    p = _check_busy(busy)
    return math.sqrt(2.0 * math.log(n) * (1.0 / p - 1.0) / s)


# --------------------------------------------------------------------------------------------
# The fixed-count model's exact route


@dataclass(frozen=True)
class _FixedCountPlan:
    """What the exact fixed-count route will compute, and what it will cost."""

    nodes: int
    parts_per_node: int
    total_busy: int
    log_w: np.ndarray  # shape (s + 1,): log Binomial(s, p') pmf, p' = B / (n s)
    log_den: float  # log P(sum of n Binomial(s, p') = B)
    zero_below: int  # P(M <= k) < FIXED_COUNT_CUT (or 0) for every k < zero_below
    one_from: int  # P(M <= k) > 1 - FIXED_COUNT_CUT for every k >= one_from
    ks: np.ndarray  # the k evaluated by FFT, int64
    lambdas: np.ndarray  # tilt log(theta) per k
    lengths: np.ndarray  # FFT length per k

    @property
    def cost(self) -> float:
        """Work estimate in units of ``L log2 L`` (see :data:`EXACT_COST_LIMIT`)."""
        lengths = self.lengths.astype(float)
        return float(np.sum(lengths * np.log2(np.maximum(lengths, 2.0))))


def _tilted(log_w_k: np.ndarray, lam: float) -> tuple[np.ndarray, float]:
    """The tilted law ``v_j ∝ w_j e^{lam j}`` (shape (k+1,)) and ``log sum_j w_j e^{lam j}``."""
    a = log_w_k + lam * np.arange(log_w_k.shape[0])
    top = float(a.max())
    e = np.exp(a - top)
    total = float(e.sum())
    return e / total, top + math.log(total)


def _solve_tilt(log_w_k: np.ndarray, target_mean: float) -> tuple[float, float]:
    """A ``lam`` whose tilted law has mean ``target_mean`` (0 < target_mean < k), and its variance.

    The identity used by :func:`_fixed_count_log_cdf` holds for every ``lam``; this choice only
    puts the wanted coefficient at the centre of the tilted sum, where the FFT is most precise,
    so a mean within a thousandth of a standard deviation is plenty. Newton's method on the
    (increasing) mean, kept inside a bracket that bisection shrinks when a step leaves it.
    """
    j = np.arange(log_w_k.shape[0], dtype=float)
    lo, hi = -math.inf, math.inf
    lam = 0.0
    var = 0.0
    for _ in range(200):
        v, _ = _tilted(log_w_k, lam)
        mean = float(v @ j)
        var = max(float(v @ (j * j)) - mean * mean, 0.0)
        diff = mean - target_mean
        if abs(diff) <= 1e-3 * math.sqrt(var) + 1e-12:
            break
        if diff > 0.0:
            hi = lam
        else:
            lo = lam
        step = -diff / var if var > 0.0 else (-1.0 if diff > 0.0 else 1.0)
        new = lam + step
        if not lo < new < hi:
            if math.isinf(lo) or math.isinf(hi):
                new = lam + (-1.0 if diff > 0.0 else 1.0) * 2.0 * max(1.0, abs(lam))
            else:
                new = 0.5 * (lo + hi)
        lam = new
    return lam, var


def _fft_length(nodes: int, k: int, var: float) -> int:
    """FFT length that holds the n-fold sum of a law on ``0..k`` with variance ``var``.

    Either the whole support (``n k + 1``, no aliasing at all), or a length ``L`` past
    Bernstein's bound ``P(|S - E S| >= t) <= 2 exp(-t^2 / (2 (n var + k t / 3)))`` at
    ``t^2 / (2 (n var + k t / 3)) = C``: the wanted coefficient sits at ``E S``, so what wraps
    onto it lies at distance ``>= L`` and weighs less than ``2 e^{-C}``.
    """
    import scipy.fft  # only the fixed-count model needs it: `grapeshot lif` starts faster

    c = _BERNSTEIN_C
    t = c * k / 3.0 + math.sqrt((c * k / 3.0) ** 2 + 2.0 * c * nodes * var)
    length = min(nodes * k + 1, math.ceil(t) + 1)
    return int(scipy.fft.next_fast_len(max(length, k + 1), real=True))


def _hypergeom_tails(total: int, good: int, draws: int) -> tuple[np.ndarray, np.ndarray]:
    """``P(X <= k)`` and ``P(X > k)`` for ``k = 0 .. draws``, ``X ~ Hypergeometric``.

    The probabilities come from the ratio recurrence ``pmf(k+1) / pmf(k) = (good - k)
    (draws - k) / ((k + 1) (total - good - draws + k + 1))``, summed in logs outwards from the
    mode and normalised by their sum. scipy's ``cdf``/``sf`` cost O(k) each (O(s^2) for the
    table: seconds at s = 4096), and its ``logpmf`` loses digits to cancellation once
    ``total`` passes ~1e10 (at ``n = s = 1e6`` its probabilities sum to 0.9986).

    Parameters
    ----------
    total, good, draws
        Population ``n s``, busy ``B`` and draws ``s`` (``total <= 2^53``).

    Returns
    -------
    cdf, sf : ndarray of float64, shape (draws + 1,)
    """
    lo, hi = max(0, draws - (total - good)), min(draws, good)
    k = np.arange(lo, hi, dtype=np.float64)  # the step from k to k + 1
    rest = float(total - good - draws)  # the idle slots not drawn, when every draw is busy
    log_ratio = np.log(good - k) + np.log(draws - k) - np.log(k + 1.0) - np.log(rest + k + 1.0)
    mode = min(max((draws + 1) * (good + 1) // (total + 2), lo), hi)
    log_pmf = np.full(draws + 1, -np.inf)
    log_pmf[mode] = 0.0
    log_pmf[mode + 1 : hi + 1] = np.cumsum(log_ratio[mode - lo :])
    log_pmf[lo:mode] = -np.cumsum(log_ratio[: mode - lo][::-1])[::-1]
    pmf = np.exp(log_pmf)
    total_mass = float(pmf.sum())
    cdf = np.cumsum(pmf) / total_mass
    sf = np.append(np.cumsum(pmf[::-1])[::-1][1:], 0.0) / total_mass  # strictly above k
    return cdf, sf


class _OverBudget(Exception):
    """The exact fixed-count route would cost more than it may (raised before the work)."""


def _fixed_count_plan(
    nodes: int, parts_per_node: int, total_busy: int, limit: float | None = None
) -> _FixedCountPlan:
    """What the exact route computes for ``(n, s, B)``, and its cost.

    With ``limit`` (work units, :data:`EXACT_COST_LIMIT`), sizes whose tables or FFTs are
    certainly over it raise :class:`_OverBudget` before the tables are built: ``s`` above
    :data:`_PLAN_MAX_PARTS`, ``n s`` above :data:`_PLAN_MAX_SLOTS`, or a lower bound of the
    cost (every FFT is at least ``k + 1`` long) above ``limit``.
    """
    n, s, b = nodes, parts_per_node, total_busy
    if limit is not None and (s > _PLAN_MAX_PARTS or n * s > _PLAN_MAX_SLOTS):
        raise _OverBudget
    from scipy import stats  # imported here: the binomial model (the default) never needs it

    p_prime = b / (n * s)
    kk = np.arange(s + 1)
    mean = b / n
    # Pigeonhole: the fullest node holds at least ceil(B / n); and no more than min(s, B).
    floor_k = -(-b // n)
    top_k = min(s, b)
    if p_prime >= 1.0:
        empty = np.zeros(0)
        return _FixedCountPlan(n, s, b, empty, 0.0, s, s, empty.astype(np.int64), empty, empty)
    log_w = stats.binom.logpmf(kk, s, p_prime)
    log_den = float(stats.binom.logpmf(b, n * s, p_prime))
    # One node's busy count is Hypergeometric(n s, B, s). The counts are negatively associated,
    # so P(M <= k) <= P(X_1 <= k)^n; and P(M > k) <= n P(X_1 > k) by the union bound.
    cdf_h, sf_h = _hypergeom_tails(n * s, b, s)
    with np.errstate(divide="ignore"):
        log_cdf_h = np.log(cdf_h)
    small = (n * log_cdf_h < math.log(FIXED_COUNT_CUT)) | (kk < floor_k)
    zero_below = int(np.argmin(small)) if not small.all() else s + 1
    near_one = (n * sf_h < FIXED_COUNT_CUT) | (kk >= top_k)
    one_from = int(np.argmax(near_one))
    ks = np.arange(zero_below, one_from, dtype=np.int64)
    if limit is not None:
        fft = ks[ks * n != b].astype(float) + 1.0  # the closed-form k needs no FFT
        if float(np.sum(fft * np.log2(np.maximum(fft, 2.0)))) > limit:
            raise _OverBudget
    lambdas = np.zeros(ks.shape[0])
    lengths = np.zeros(ks.shape[0], dtype=np.int64)
    for i, k in enumerate(ks):
        k = int(k)
        if k * n == b:  # every node holds exactly B / n: closed form, no FFT
            lengths[i] = 1
            continue
        lam, var = _solve_tilt(log_w[: k + 1], mean)
        lambdas[i] = lam
        lengths[i] = _fft_length(n, k, var)
    return _FixedCountPlan(n, s, b, log_w, log_den, zero_below, one_from, ks, lambdas, lengths)


def _fixed_count_log_cdf(plan: _FixedCountPlan, index: int) -> float:
    """``log P(M <= k)`` for ``k = plan.ks[index]``.

    Draw the counts as i.i.d. ``Binomial(s, p')`` with ``p' = B / (n s)`` and condition on their
    sum being ``B``: that is exactly the multivariate hypergeometric law. So

    ``P(M <= k) = [x^B] (sum_{j<=k} w_j x^j)^n / P(sum = B)``,  ``w_j`` the Binomial(s, p') pmf.

    Tilting ``w_j -> v_j = w_j e^{lam j} / Z`` (a probability law on ``0..k`` with mean ``B/n``)
    turns the coefficient into ``Z^n e^{-lam B} P(sum of n draws of v = B)``, and that last
    probability is read off the n-th power of the discrete Fourier transform of ``v`` (one real
    FFT of length ``L``, see :func:`_fft_length`; at most ``2 e^{-100}`` of aliased mass).
    """
    n, b = plan.nodes, plan.total_busy
    k = int(plan.ks[index])
    log_w_k = plan.log_w[: k + 1]
    if k * n == b:
        return n * float(log_w_k[k]) - plan.log_den
    lam = float(plan.lambdas[index])
    length = int(plan.lengths[index])
    v, log_z = _tilted(log_w_k, lam)
    # Centre the law on j0 ~ B/n so the phases stay small and n * angle loses nothing.
    j0 = round(b / n)
    vec = np.zeros(length)
    vec[(np.arange(k + 1) - j0) % length] = v
    import scipy.fft

    spectrum = scipy.fft.rfft(vec)
    with np.errstate(under="ignore", over="ignore"):
        power = np.abs(spectrum) ** n * np.exp(1j * (n * np.angle(spectrum)))
    coeff = float(scipy.fft.irfft(power, length)[(b - n * j0) % length])
    if coeff <= 0.0:  # rounding noise on a probability far below FIXED_COUNT_CUT
        return -math.inf
    return min(n * log_z - lam * b + math.log(coeff) - plan.log_den, 0.0)


def _fixed_count_cdf(plan: _FixedCountPlan) -> np.ndarray:
    """``P(M <= k)`` for ``k = 0 .. s`` (shape (s + 1,)) from the plan."""
    s = plan.parts_per_node
    cdf = np.zeros(s + 1)
    cdf[plan.one_from :] = 1.0
    for i, k in enumerate(plan.ks):
        cdf[int(k)] = math.exp(_fixed_count_log_cdf(plan, i))
    # A CDF never decreases; enforce it against the last-digit noise of the FFT.
    return np.maximum.accumulate(cdf)


# --------------------------------------------------------------------------------------------
# Public: CDF of the maximum, expectation, Monte Carlo


def max_cdf(
    nodes: int, parts_per_node: int, busy: float, *, model: Model = "binomial"
) -> tuple[np.ndarray, np.ndarray, float]:
    """Exact distribution of ``M``, the busy partitions on the most loaded node.

    Parameters
    ----------
    nodes, parts_per_node, busy
        ``n`` (>= 1), ``s`` (>= 1) and ``p`` in ``(0, 1]``, as for :func:`expected_lif`.
    model
        ``"binomial"`` or ``"fixed-count"``. The fixed-count route is exact whatever the size
        here (no Monte Carlo fallback), so it may be slow for very large inputs.

    Returns
    -------
    k : ndarray of int64, shape (s + 1,)
        ``0, 1, ..., s``.
    cdf : ndarray of float64, shape (s + 1,)
        ``P(M <= k)``.
    mean_busy : float
        The normaliser of the LIF: ``p s`` (binomial) or ``B / n`` (fixed-count).
    """
    n = _check_nodes(nodes)
    s = _check_parts(parts_per_node)
    p = _check_busy(busy)
    model = _check_model(model)
    k = np.arange(s + 1, dtype=np.int64)
    if model == "binomial":
        if p == 1.0:
            return k, (k >= s).astype(float), float(s)
        from grapeshot.theory import binomial_max  # numba: only for whole distributions

        lo, log_f = binomial_max.binomial_log_cdf(s, p)
        cdf = np.zeros(s + 1)
        hi = lo + log_f.shape[0] - 1
        cdf[lo : hi + 1] = np.exp(n * log_f)
        cdf[hi + 1 :] = 1.0
        return k, cdf, p * s
    b = _fixed_count_busy(n, s, p)
    plan = _fixed_count_plan(n, s, b)
    return k, _fixed_count_cdf(plan), b / n


@dataclass(frozen=True)
class LifResult:
    """The expected LIF of one ``(n, s, p)`` under one model, with quantiles.

    Attributes
    ----------
    nodes, parts_per_node, busy, model
        The inputs.
    mean
        ``E[LIF]``: exact, or the Monte Carlo estimate when ``method == "monte-carlo"``.
    stderr
        Standard error of ``mean``; 0.0 when exact.
    quantiles
        ``{q: LIF_q}``: the smallest ``k`` with ``P(M <= k) >= q``, as ``k / mean_busy - 1``
        floored at 0 (from the sample's inverted empirical CDF when sampled).
    method
        ``"exact"``, ``"monte-carlo"`` or ``"asymptotic"`` (beyond the exact route's and
        Monte Carlo's budgets: see ``note``).
    mean_eq2
        Birdshot's eq. 2 for the same ``(n, s, p)``.
    note
        What the approximation is and why it was used (empty when exact or sampled).
    """

    nodes: int
    parts_per_node: int
    busy: float
    model: str
    mean: float
    stderr: float
    quantiles: dict[float, float] = field(default_factory=dict)
    method: str = "exact"
    mean_eq2: float = 0.0
    note: str = ""


def _mc_max(
    nodes: int,
    parts_per_node: int,
    busy: float,
    model: str,
    trials: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, float]:
    """Sample ``trials`` maxima (int64, shape (trials,)); also return the LIF's mean_busy."""
    n, s = nodes, parts_per_node
    chunk = max(1, min(trials, _MC_CHUNK_VALUES // n))
    out = np.empty(trials, dtype=np.int64)
    if model == "binomial":
        for start in range(0, trials, chunk):
            size = min(chunk, trials - start)
            out[start : start + size] = rng.binomial(s, busy, size=(size, n)).max(axis=1)
        return out, busy * s
    b = _fixed_count_busy(n, s, busy)
    colors = np.full(n, s, dtype=np.int64)
    for start in range(0, trials, chunk):
        size = min(chunk, trials - start)
        draw = rng.multivariate_hypergeometric(colors, b, size=size, method="marginals")
        out[start : start + size] = draw.max(axis=1)
    return out, b / n


def lif_monte_carlo(
    nodes: int,
    parts_per_node: int,
    busy: float,
    *,
    model: Model = "binomial",
    trials: int = DEFAULT_TRIALS,
    seed: SeedLike = 0,
) -> tuple[float, float]:
    """Monte Carlo estimate of ``E[LIF]``: ``(mean, standard error)``.

    Binomial model: ``trials x n`` independent Binomial(s, p) counts. Fixed-count model:
    ``trials`` multivariate hypergeometric draws of ``B = round(p n s)`` busy partitions over
    ``n`` nodes of ``s`` slots. Trials are drawn in chunks of about 4 M values to bound memory.

    Parameters
    ----------
    nodes, parts_per_node, busy, model
        As for :func:`expected_lif`.
    trials
        Number of independent placements sampled (>= 2).
    seed
        Non-negative integer or ``numpy.random.Generator``; the same seed gives the same
        estimate bit for bit.

    Returns
    -------
    mean : float
        Sample mean of the LIF.
    stderr : float
        Sample standard deviation (ddof=1) over ``sqrt(trials)``.
    """
    n = _check_nodes(nodes)
    s = _check_parts(parts_per_node)
    p = _check_busy(busy)
    model = _check_model(model)
    t = check_int(trials, "--trials", minimum=2)
    rng = _check_seed(seed)
    maxima, mean_busy = _mc_max(n, s, p, model, t, rng)
    lif = maxima / mean_busy - 1.0
    return float(lif.mean()), float(lif.std(ddof=1) / math.sqrt(t))


def binomial_walk(nodes: int, parts_per_node: int, busy: float) -> float:
    """Estimated values of ``k`` the exact binomial route visits for one ``(n, s, p)``.

    Each walk (``E[M]`` and every quantile) climbs from the mode to where ``n P(X > k)``
    drops below :data:`binomial_scalar.CUT` (``z = sqrt(2 ln(n / CUT))`` standard deviations
    up) and comes back down, so eight such spans bound the four walks of :func:`expected_lif`.
    The estimate is what the budget (:data:`BINOMIAL_WALK_LIMIT`) is checked against, before
    any walk starts.
    """
    sigma = math.sqrt(parts_per_node * busy * (1.0 - busy))
    z = math.sqrt(2.0 * (math.log(nodes) - math.log(binomial_scalar.CUT)))
    return 8.0 * z * sigma + 64.0


def _normal_max_moments(nodes: float) -> tuple[float, float]:
    """``E[Z]`` and ``E[Z^2]`` of ``Z``, the largest of ``n`` independent standard normals.

    The density ``n φ(x) Φ(x)^(n-1)`` integrated by the trapezoid rule on a grid of 1/2000
    from -10 to ``sqrt(2 ln n) + 10`` (beyond both ends the mass is below 1e-22): smooth and
    fast-decaying, so the rule converges far below double precision's last digit.
    """
    if nodes <= 1.0:
        return 0.0, 1.0
    from scipy import special  # only the asymptotic routes need it

    hi = math.sqrt(2.0 * math.log(nodes)) + 10.0
    x = np.linspace(-10.0, hi, round((hi + 10.0) * 2000.0) + 1)
    log_phi = -0.5 * x * x - 0.5 * math.log(2.0 * math.pi)
    density = nodes * np.exp(log_phi + (nodes - 1.0) * special.log_ndtr(x))
    weight = np.full(x.shape, x[1] - x[0])
    weight[0] = weight[-1] = 0.5 * (x[1] - x[0])
    return float(np.sum(weight * x * density)), float(np.sum(weight * x * x * density))


def asymptotic_error(nodes: int, sigma: float) -> float:
    """Bound on the relative error of the binomial asymptote: ``(0.05 ln n + 0.1) / sigma^2``.

    Found against the exact walk over ``n`` = 2 to 10^18 and ``p`` = 0.001 to 0.99
    (``tests/theory/test_budgets.py`` checks it on a grid); the asymptote serves only where
    ``sigma`` is in the thousands, so the bound is 1e-8 or less there.
    """
    return (0.05 * math.log(nodes) + 0.1) / (sigma * sigma)


def _binomial_asymptotic(
    n: int, s: int, p: float, quantiles: tuple[float, ...]
) -> tuple[float, dict]:
    """Binomial-model ``(E[LIF], quantiles)`` from the normal maximum with its skewness term.

    A node's count is ``mu + sigma (Z + g (Z^2 - 1) / 6)`` to first order (Cornish-Fisher,
    ``g = (1 - 2p) / sigma`` its skewness), so ``E[M] - mu = sigma E[Z_(n)] + (1 - 2p)
    (E[Z_(n)^2] - 1) / 6`` with ``Z_(n)`` the largest of ``n`` standard normals
    (:func:`_normal_max_moments`). Against the exact walk (n = 2 to 10^18, p = 0.001 to 0.99,
    sigma^2 = 100 to 2.5e7) its relative error is below :func:`asymptotic_error` (by a margin
    of 1.35 at worst; it falls as ``1 / sigma^2``). The ``q`` quantile of
    ``M`` is the smallest whole ``k >= mu + sigma (z + g (z^2 - 1) / 6) - 1/2`` (continuity
    correction) with ``Φ(z)^n = q``.
    """
    from scipy import special

    mu = p * s
    sigma = math.sqrt(mu * (1.0 - p))
    skew = (1.0 - 2.0 * p) / sigma
    e1, e2 = _normal_max_moments(float(n))
    mean = (sigma * e1 + (1.0 - 2.0 * p) * (e2 - 1.0) / 6.0) / mu
    frac = mu - math.floor(mu)  # k - mu is computed as ceil(frac + x) - frac: no cancellation
    quant = {}
    for q in quantiles:
        z = -float(special.ndtri(-math.expm1(math.log(q) / n)))  # Φ(z) = q^(1/n), upper tail
        x = sigma * (z + skew * (z * z - 1.0) / 6.0) - 0.5
        quant[q] = max(0.0, (math.ceil(frac + x) - frac) / mu)
    return mean, quant


def _binomial_exact(n: int, s: int, p: float, quantiles: tuple[float, ...]) -> tuple[float, dict]:
    if p == 1.0:  # every partition busy: every node holds s, no imbalance at all
        return 0.0, dict.fromkeys(quantiles, 0.0)
    if n == 1:  # one node: its count is the placement's mean, so every LIF is 0
        return 0.0, dict.fromkeys(quantiles, 0.0)
    mu = p * s
    if n * mu < binomial_scalar.CUT:
        # Something is busy somewhere only with probability ~n p s < 1e-30: the walk drops
        # terms below that absolute cut, i.e. all of E[M] (it read -1). E[M] is P(M >= 1)
        # to within a relative p s (P(M >= 2) is of order n (p s)^2).
        mean = -math.expm1(float(n) * float(s) * math.log1p(-p)) / mu - 1.0
        return mean, dict.fromkeys(quantiles, 0.0)  # M = 0: nothing busy, no imbalance
    mean = binomial_scalar.max_excess(float(n), s, p) / mu
    # A placement's busiest node never holds less than its average, so no LIF is below 0;
    # normalised by the expected mean p s, a quantile of M below p s (all idle: M = 0) is one
    # where the placement is balanced (or idle), LIF 0 rather than negative.
    qs = {
        q: max(0.0, binomial_scalar.max_quantile_k(float(n), s, p, q) / mu - 1.0) for q in quantiles
    }
    return mean, qs


def _binomial_route(
    n: int, s: int, p: float, quantiles: tuple[float, ...]
) -> tuple[float, dict, str, str]:
    """Binomial ``(E[LIF], quantiles, method, note)``: exact within budget, else asymptotic."""
    walk = binomial_walk(n, s, p)
    if p == 1.0 or n == 1 or walk <= BINOMIAL_WALK_LIMIT:
        return (*_binomial_exact(n, s, p, quantiles), "exact", "")
    mean, quant = _binomial_asymptotic(n, s, p, quantiles)
    sigma = math.sqrt(s * p * (1.0 - p))
    note = (
        f"normal approximation with its skewness term: the exact walk would visit about "
        f"{walk:.1e} values of k, beyond the budget of {BINOMIAL_WALK_LIMIT:.0e}; relative "
        f"error below (0.05 ln n + 0.1)/sigma^2 = {asymptotic_error(n, sigma):.0e}"
    )
    return mean, quant, "asymptotic", note


def _cdf_quantiles(cdf: np.ndarray, mean_busy: float, quantiles: tuple[float, ...]) -> dict:
    # Same tie rule as the binomial kernel: within QUANTILE_SLACK of q counts as reaching it.
    slack = 1.0 - binomial_scalar.QUANTILE_SLACK
    return {q: int(np.argmax(cdf >= q * slack)) / mean_busy - 1.0 for q in quantiles}


def _fixed_count_exact(
    n: int, s: int, p: float, quantiles: tuple[float, ...], *, force: bool
) -> tuple[float, dict, float] | None:
    """Exact fixed-count ``(E[LIF], quantiles, work)``, or None when over budget, not forced.

    ``work`` is what it took in :data:`EXACT_COST_LIMIT`'s units: the plan's FFTs, and
    :data:`FIXED_COUNT_UNITS_PER_K` for each ``k`` computed (its tilt, its Python steps).
    """
    b = _fixed_count_busy(n, s, p)
    mean_busy = b / n
    if n == 1 or b == n * s:  # one node holds all B, or every slot is busy: M = B / n exactly
        return 0.0, dict.fromkeys(quantiles, 0.0), 0.0
    try:
        plan = _fixed_count_plan(n, s, b, None if force else EXACT_COST_LIMIT)
    except _OverBudget:
        return None
    if not force and plan.cost > EXACT_COST_LIMIT:
        return None
    cdf = _fixed_count_cdf(plan)
    # E[M] - B/n = (k0 - B/n) + sum_{k0 <= k < s} P(M > k), k0 = floor(B/n); P(M <= k) = 0
    # below ceil(B/n), so no k < k0 term. Summed without forming E[M] to keep small LIFs exact.
    k0 = b // n
    excess = (k0 - mean_busy) + float(np.sum(1.0 - cdf[k0:s]))
    work = plan.cost + FIXED_COUNT_UNITS_PER_K * plan.ks.shape[0]
    return excess / mean_busy, _cdf_quantiles(cdf, mean_busy, quantiles), work


def expected_lif(
    nodes: int,
    parts_per_node: int,
    busy: float,
    *,
    model: Model = "binomial",
    quantiles: Sequence[float] = DEFAULT_QUANTILES,
    seed: SeedLike = 0,
    trials: int = DEFAULT_TRIALS,
    method: Literal["auto", "exact", "monte-carlo"] = "auto",
) -> LifResult:
    """Expected load imbalance factor of a random placement, exact where affordable.

    With ``method="auto"`` (what ``grapeshot lif`` uses) the answer comes within a budget:

    - binomial: exact while its walks visit at most :data:`BINOMIAL_WALK_LIMIT` values of
      ``k`` (:func:`binomial_walk`), else the normal approximation with its skewness term
      (``method == "asymptotic"``, relative error below :func:`asymptotic_error`);
    - fixed-count: exact while the plan costs at most :data:`EXACT_COST_LIMIT`, else Monte
      Carlo while ``trials × n <= MC_VALUE_LIMIT`` and ``n s <= MC_MAX_SLOTS``, else, from
      :data:`ASYMPTOTIC_MIN_NODES` nodes on, the binomial model at ``p' = B / (n s)``
      (``"asymptotic"``), else an InputError naming the limit.

    Parameters
    ----------
    nodes
        Number of nodes ``n`` (1 to :data:`MAX_COUNT`).
    parts_per_node
        Partitions per node ``s`` (1 to :data:`MAX_COUNT`).
    busy
        Fraction ``p`` of partitions that carry work, in ``(0, 1]``.
    model
        ``"binomial"`` (independent Binomial(s, p) busy counts, LIF normalised by ``p s``) or
        ``"fixed-count"`` (exactly ``B = round(p n s)`` busy partitions, LIF normalised by
        ``B / n``).
    quantiles
        Probabilities in ``(0, 1)`` at which to report quantiles of the LIF.
    seed
        Seed of the Monte Carlo fallback (non-negative integer or Generator). Unused when exact.
    trials
        Placements sampled by the Monte Carlo fallback (>= 2).
    method
        ``"auto"`` (within the budgets above), ``"exact"`` (always; may be slow) or
        ``"monte-carlo"`` (always sample; mostly for checking the exact route).

    Returns
    -------
    LifResult
        Mean, standard error (0 unless sampled), quantiles, the method used, eq. 2's value and
        a note on the approximation when there is one.

    Raises
    ------
    InputError
        On a bad value, naming the option as ``grapeshot lif`` spells it; when the
        fixed-count model has no busy partition (``round(p n s) == 0``); or when it is beyond
        every budget (naming the limit).
    """
    n = _check_nodes(nodes)
    s = _check_parts(parts_per_node)
    p = _check_busy(busy)
    model = _check_model(model)
    qs = _check_quantiles(quantiles)
    t = check_int(trials, "--trials", minimum=2)
    _validate_seed(seed)
    if method not in ("auto", "exact", "monte-carlo"):
        raise InputError("method", f"got {method!r}", "one of auto, exact, monte-carlo")
    eq2 = lif_eq2(n, s, p)
    if model == "fixed-count":
        _fixed_count_busy(n, s, p)  # refuse round(p n s) == 0 whatever the route
    if n == 1:  # one node: its load is the placement's mean, so every LIF is 0 exactly
        return LifResult(n, s, p, model, 0.0, 0.0, dict.fromkeys(qs, 0.0), "exact", eq2)

    def result(mean: float, stderr: float, quant: dict, how: str, note: str = "") -> LifResult:
        return LifResult(n, s, p, model, float(mean), float(stderr), quant, how, eq2, note)

    def sampled() -> LifResult:
        rng = _check_seed(seed)
        maxima, mean_busy = _mc_max(n, s, p, model, t, rng)
        lif = maxima / mean_busy - 1.0
        quant = {  # floored at 0 as the exact quantiles are (see _binomial_exact)
            q: max(0.0, float(np.quantile(maxima, q, method="inverted_cdf")) / mean_busy - 1.0)
            for q in qs
        }
        return result(lif.mean(), lif.std(ddof=1) / math.sqrt(t), quant, "monte-carlo")

    if method == "monte-carlo":
        return sampled()

    if model == "binomial":
        if method == "exact":
            mean, quant = _binomial_exact(n, s, p, qs)
            return result(mean, 0.0, quant, "exact")
        mean, quant, how, note = _binomial_route(n, s, p, qs)
        return result(mean, 0.0, quant, how, note)

    exact = _fixed_count_exact(n, s, p, qs, force=method == "exact")
    if exact is not None:
        return result(exact[0], 0.0, exact[1], "exact")
    # The exact route is over budget: sample if that is affordable, ...
    if n * s <= MC_MAX_SLOTS and t * n <= MC_VALUE_LIMIT:
        return sampled()
    # ... else, on many nodes, the binomial model at p' = B / (n s), fixed-count's limit ...
    b = _fixed_count_busy(n, s, p)
    if n >= ASYMPTOTIC_MIN_NODES:
        p_prime = b / (n * s)
        mean, quant, how, note = _binomial_route(n, s, p_prime, qs)
        note = (
            f"binomial model at p' = B/(n·s) = {p_prime:.6g}, the fixed-count model's limit on "
            f"many nodes (E[LIF] within ~1e-4 relative from {ASYMPTOTIC_MIN_NODES} nodes on): "
            f"the exact route costs over {EXACT_COST_LIMIT:.0e} and Monte Carlo over "
            f"{'its 1e9 slots' if n * s > MC_MAX_SLOTS else f'{MC_VALUE_LIMIT:,} values'}"
            + (f"; {note}" if note else "")
        )
        return result(mean, 0.0, quant, "asymptotic", note)
    # ... else refuse, naming the limit that bites.
    if n * s <= MC_MAX_SLOTS:
        raise InputError(
            "--trials",
            f"{t} trials × {n} nodes = {t * n:,} values, beyond the Monte Carlo budget of "
            f"{MC_VALUE_LIMIT:,} (the exact fixed-count route costs over {EXACT_COST_LIMIT:.0e})",
            f"--trials <= {MC_VALUE_LIMIT // n}",
        )
    raise InputError(
        "--parts-per-node",
        f"fixed-count on {n} nodes × {s} partitions is beyond the exact route's budget "
        f"({EXACT_COST_LIMIT:.0e}), Monte Carlo's limit of {MC_MAX_SLOTS + 1:.0e} slots, and "
        f"below the {ASYMPTOTIC_MIN_NODES} nodes from which the binomial model stands in",
        "--model binomial (the same E[LIF] within ~1e-4 at this size; wider quantiles on few "
        "nodes), or fewer partitions per node",
    )


#: Sum of sqrt(s) over the s asked of :func:`exact_lif` up to which the interpreted kernel is
#: used (about 0.1 s of work, a fifth of numba's import).
_INTERPRETED_WALK_BUDGET = 50_000.0


class BudgetExceeded(Exception):
    """A computation charged more work to a :class:`WorkBudget` than it allows."""


@dataclass
class WorkBudget:
    """Work a computation may do, in the exact fixed-count route's units (``L log2 L``).

    Attributes
    ----------
    limit
        Units allowed.
    spent
        Units charged so far.
    """

    limit: float
    spent: float = 0.0

    def charge(self, units: float) -> None:
        """Add ``units``; raise :class:`BudgetExceeded` once the total passes ``limit``."""
        self.spent += units
        if self.spent > self.limit:
            raise BudgetExceeded(self.spent)


#: Work charged per fixed-count evaluation besides its ``k`` (building its tables: the
#: binomial and hypergeometric laws over ``0..s``; ~2 ms), in units of ``L log2 L``.
FIXED_COUNT_EVALUATION_UNITS = 1.5e5


def exact_lif(
    nodes: int,
    parts_per_node: Sequence[int] | np.ndarray,
    busy: float,
    *,
    model: Model = "binomial",
    budget: WorkBudget | None = None,
) -> np.ndarray:
    """Exact ``E[LIF]`` for one ``(n, p)`` and many ``s`` (what the advisor scans).

    Parameters
    ----------
    nodes
        Number of nodes ``n`` (>= 1).
    parts_per_node
        Partitions per node, shape (m,), each >= 1.
    busy
        Fraction ``p`` of busy partitions, in ``(0, 1]``.
    model
        ``"binomial"`` (one numba loop, microseconds per ``s``) or ``"fixed-count"`` (the exact
        route per ``s``; ``inf`` where ``round(p n s) == 0``, i.e. no busy partition at all).
    budget
        Fixed-count only: charged each evaluation's work (its ``k``'s FFTs and steps plus
        :data:`FIXED_COUNT_EVALUATION_UNITS`); :class:`BudgetExceeded` once it is spent.

    Returns
    -------
    ndarray of float64, shape (m,)

    Raises
    ------
    InputError
        On bad input, or (fixed-count) when some ``s`` needs more than :data:`EXACT_COST_LIMIT`.
    BudgetExceeded
        When ``budget`` runs out.
    """
    n = _check_nodes(nodes)
    p = _check_busy(busy)
    model = _check_model(model)
    s_arr = np.asarray(parts_per_node)
    if s_arr.ndim != 1 or (s_arr.size and (not np.issubdtype(s_arr.dtype, np.integer))):
        raise InputError("--parts-per-node", f"got {parts_per_node!r}", "integers >= 1")
    if s_arr.size and s_arr.min() < 1:
        raise InputError("--parts-per-node", f"got {int(s_arr.min())}", "integers >= 1")
    s_arr = s_arr.astype(np.int64)
    if p == 1.0 or n == 1:
        return np.zeros(s_arr.shape[0])
    if model == "binomial":
        # The walk of one s visits ~sqrt(s) values of k. Interpreted, that is ~2 µs each:
        # below the budget the answer comes sooner than numba's import (both give the same
        # bits, tests/theory/test_binomial_paths.py).
        if float(np.sqrt(s_arr).sum()) <= _INTERPRETED_WALK_BUDGET:
            return np.array(
                [binomial_scalar.max_excess(float(n), int(s), p) / (p * int(s)) for s in s_arr]
            )
        from grapeshot.theory import binomial_max  # numba: thousands of s at a time

        return binomial_max.lif_many(float(n), s_arr, p)
    out = np.empty(s_arr.shape[0])
    for i, s in enumerate(s_arr):
        s = int(s)
        if round(p * n * s) == 0:
            out[i] = math.inf
            continue
        found = _fixed_count_exact(n, s, p, (), force=False)
        if found is None:
            raise InputError(
                "--model",
                f"fixed-count at --nodes {n} --parts-per-node {s} is beyond the exact route's "
                "budget",
                "--model binomial at this size (the two agree closely when n s is large)",
            )
        out[i] = found[0]
        if budget is not None:
            budget.charge(found[2] + FIXED_COUNT_EVALUATION_UNITS)
    return out


# --------------------------------------------------------------------------------------------
# Where eq. 2 is off


@dataclass(frozen=True)
class BiasMap:
    """Exact ``E[LIF]`` next to eq. 2 on a grid of ``(n, s, p)``.

    Attributes
    ----------
    nodes : ndarray of int64, shape (a,)
    parts_per_node : ndarray of int64, shape (b,)
    busy : ndarray of float64, shape (c,)
    model : str
    exact : ndarray of float64, shape (a, b, c)
        Exact ``E[LIF]`` (NaN where the fixed-count route is unaffordable or has no busy
        partition).
    eq2 : ndarray of float64, shape (a, b, c)
        Eq. 2 at the same points.
    """

    nodes: np.ndarray
    parts_per_node: np.ndarray
    busy: np.ndarray
    model: str
    exact: np.ndarray
    eq2: np.ndarray

    @property
    def relative_error(self) -> np.ndarray:
        """``eq2 / exact - 1``, shape (a, b, c): > 0 where eq. 2 overestimates (safe side),
        < 0 where it underestimates. NaN where the exact value is 0 or unknown."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.exact > 0, self.eq2 / self.exact - 1.0, np.nan)

    def to_markdown(self, busy_index: int | None = None) -> str:
        """A Markdown table per ``p``: rows ``n``, columns ``s``, cells ``exact / eq2 (err%)``."""
        err = self.relative_error
        blocks = []
        indices = range(self.busy.shape[0]) if busy_index is None else [busy_index]
        for c in indices:
            head = "| n \\ s | " + " | ".join(str(int(s)) for s in self.parts_per_node) + " |"
            rule = "|---|" + "---|" * self.parts_per_node.shape[0]
            lines = [f"p = {self.busy[c]:g} ({self.model}): exact / eq. 2 (eq. 2 error)", "", head]
            lines.append(rule)
            for a, n in enumerate(self.nodes):
                cells = []
                for b in range(self.parts_per_node.shape[0]):
                    x, y, e = self.exact[a, b, c], self.eq2[a, b, c], err[a, b, c]
                    cells.append("—" if np.isnan(e) else f"{x:.3f} / {y:.3f} ({e:+.0%})")
                lines.append(f"| {int(n)} | " + " | ".join(cells) + " |")
            blocks.append("\n".join(lines))
        return "\n\n".join(blocks)


def eq2_bias_map(
    nodes: Sequence[int] = (2, 16, 128, 1024, 10_000),
    parts_per_node: Sequence[int] = (4, 16, 64, 256, 1024),
    busy: Sequence[float] = (0.05, 0.25, 0.5, 0.75),
    *,
    model: Model = "binomial",
) -> BiasMap:
    """Tabulate exact ``E[LIF]`` and eq. 2 over a grid, to show where eq. 2 is off.

    Parameters
    ----------
    nodes, parts_per_node, busy
        Grid axes: ``n`` (>= 1), ``s`` (>= 1), ``p`` in ``(0, 1]``.
    model
        ``"binomial"`` (numba, the whole default grid in milliseconds) or ``"fixed-count"``
        (exact route per point; points above :data:`EXACT_COST_LIMIT` are left NaN rather than
        sampled, so the table holds no noise).

    Returns
    -------
    BiasMap
        Arrays of shape ``(len(nodes), len(parts_per_node), len(busy))``.
    """
    n_arr = np.array([_check_nodes(n) for n in nodes], dtype=np.int64)
    s_arr = np.array([_check_parts(s) for s in parts_per_node], dtype=np.int64)
    p_arr = np.array([_check_busy(p) for p in busy], dtype=float)
    model = _check_model(model)
    shape = (n_arr.shape[0], s_arr.shape[0], p_arr.shape[0])
    with np.errstate(divide="ignore"):
        eq2 = np.sqrt(
            2.0
            * np.log(n_arr)[:, None, None]
            * (1.0 / p_arr - 1.0)[None, None, :]
            / s_arr[None, :, None]
        )
    eq2 = np.broadcast_to(eq2, shape).copy()
    if model == "binomial":
        from grapeshot.theory import binomial_max

        exact = binomial_max.lif_grid(n_arr, s_arr, p_arr)
        return BiasMap(n_arr, s_arr, p_arr, model, exact, eq2)
    exact = np.full(shape, np.nan)
    for a, n in enumerate(n_arr):
        for b, s in enumerate(s_arr):
            for c, p in enumerate(p_arr):
                if round(p * n * s) == 0:
                    continue
                found = _fixed_count_exact(int(n), int(s), float(p), (), force=False)
                if found is not None:
                    exact[a, b, c] = found[0]
    return BiasMap(n_arr, s_arr, p_arr, model, exact, eq2)
