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

from grapeshot.model.errors import InputError, check_positive_int, check_probability
from grapeshot.model.seed import SeedLike, as_generator
from grapeshot.theory import binomial_scalar

Model = Literal["binomial", "fixed-count"]
Method = Literal["exact", "monte-carlo"]

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


# --------------------------------------------------------------------------------------------
# Validation: every message names the parameter as the command line spells it.


def _check_nodes(nodes: int) -> int:
    return check_positive_int(nodes, "--nodes")


def _check_parts(parts_per_node: int) -> int:
    return check_positive_int(parts_per_node, "--parts-per-node")


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


def _fixed_count_plan(nodes: int, parts_per_node: int, total_busy: int) -> _FixedCountPlan:
    from scipy import stats  # imported here: the binomial model (the default) never needs it

    n, s, b = nodes, parts_per_node, total_busy
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
    hyp = stats.hypergeom(n * s, b, s)
    with np.errstate(divide="ignore"):
        log_cdf_h = np.log(hyp.cdf(kk))
    sf_h = hyp.sf(kk)
    small = (n * log_cdf_h < math.log(FIXED_COUNT_CUT)) | (kk < floor_k)
    zero_below = int(np.argmin(small)) if not small.all() else s + 1
    near_one = (n * sf_h < FIXED_COUNT_CUT) | (kk >= top_k)
    one_from = int(np.argmax(near_one))
    ks = np.arange(zero_below, one_from, dtype=np.int64)
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
        (from the sample's inverted empirical CDF when sampled).
    method
        ``"exact"`` or ``"monte-carlo"``.
    mean_eq2
        Birdshot's eq. 2 for the same ``(n, s, p)``.
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
    t = check_positive_int(trials, "--trials", minimum=2)
    rng = _check_seed(seed)
    maxima, mean_busy = _mc_max(n, s, p, model, t, rng)
    lif = maxima / mean_busy - 1.0
    return float(lif.mean()), float(lif.std(ddof=1) / math.sqrt(t))


def _binomial_exact(n: int, s: int, p: float, quantiles: tuple[float, ...]) -> tuple[float, dict]:
    if p == 1.0:  # every partition busy: every node holds s, no imbalance at all
        return 0.0, dict.fromkeys(quantiles, 0.0)
    mu = p * s
    # n == 1: the "maximum" is the one node's count, whose mean is p s exactly.
    mean = 0.0 if n == 1 else binomial_scalar.max_excess(float(n), s, p) / mu
    qs = {q: binomial_scalar.max_quantile_k(float(n), s, p, q) / mu - 1.0 for q in quantiles}
    return mean, qs


def _cdf_quantiles(cdf: np.ndarray, mean_busy: float, quantiles: tuple[float, ...]) -> dict:
    # Same tie rule as the binomial kernel: within QUANTILE_SLACK of q counts as reaching it.
    slack = 1.0 - binomial_scalar.QUANTILE_SLACK
    return {q: int(np.argmax(cdf >= q * slack)) / mean_busy - 1.0 for q in quantiles}


def _fixed_count_exact(
    n: int, s: int, p: float, quantiles: tuple[float, ...], *, force: bool
) -> tuple[float, dict] | None:
    """Exact fixed-count ``(E[LIF], quantiles)``, or None when over budget and not forced."""
    b = _fixed_count_busy(n, s, p)
    mean_busy = b / n
    if n == 1 or b == n * s:  # one node holds all B, or every slot is busy: M = B / n exactly
        return 0.0, dict.fromkeys(quantiles, 0.0)
    plan = _fixed_count_plan(n, s, b)
    if not force and plan.cost > EXACT_COST_LIMIT:
        return None
    cdf = _fixed_count_cdf(plan)
    # E[M] - B/n = (k0 - B/n) + sum_{k0 <= k < s} P(M > k), k0 = floor(B/n); P(M <= k) = 0
    # below ceil(B/n), so no k < k0 term. Summed without forming E[M] to keep small LIFs exact.
    k0 = b // n
    excess = (k0 - mean_busy) + float(np.sum(1.0 - cdf[k0:s]))
    return excess / mean_busy, _cdf_quantiles(cdf, mean_busy, quantiles)


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

    Parameters
    ----------
    nodes
        Number of nodes ``n`` (>= 1).
    parts_per_node
        Partitions per node ``s`` (>= 1).
    busy
        Fraction ``p`` of partitions that carry work, in ``(0, 1]``.
    model
        ``"binomial"`` (independent Binomial(s, p) busy counts, LIF normalised by ``p s``;
        always exact) or ``"fixed-count"`` (exactly ``B = round(p n s)`` busy partitions, LIF
        normalised by ``B / n``; exact when the estimated cost is below
        :data:`EXACT_COST_LIMIT`, else sampled).
    quantiles
        Probabilities in ``(0, 1)`` at which to report quantiles of the LIF.
    seed
        Seed of the Monte Carlo fallback (non-negative integer or Generator). Unused when exact.
    trials
        Placements sampled by the Monte Carlo fallback (>= 2).
    method
        ``"auto"`` (exact when affordable), ``"exact"`` (always; may be slow) or
        ``"monte-carlo"`` (always sample; mostly for checking the exact route).

    Returns
    -------
    LifResult
        Mean, standard error (0 when exact), quantiles, the method used and eq. 2's value.

    Raises
    ------
    InputError
        On a bad value, naming the option as ``grapeshot lif`` spells it, or when the
        fixed-count model has no busy partition (``round(p n s) == 0``).
    """
    n = _check_nodes(nodes)
    s = _check_parts(parts_per_node)
    p = _check_busy(busy)
    model = _check_model(model)
    qs = _check_quantiles(quantiles)
    t = check_positive_int(trials, "--trials", minimum=2)
    _validate_seed(seed)
    if method not in ("auto", "exact", "monte-carlo"):
        raise InputError("method", f"got {method!r}", "one of auto, exact, monte-carlo")
    eq2 = lif_eq2(n, s, p)

    def result(mean: float, stderr: float, quant: dict, how: str) -> LifResult:
        return LifResult(n, s, p, model, float(mean), float(stderr), quant, how, eq2)

    if method == "monte-carlo":
        rng = _check_seed(seed)
        maxima, mean_busy = _mc_max(n, s, p, model, t, rng)
        lif = maxima / mean_busy - 1.0
        quant = {
            q: float(np.quantile(maxima, q, method="inverted_cdf")) / mean_busy - 1.0 for q in qs
        }
        return result(lif.mean(), lif.std(ddof=1) / math.sqrt(t), quant, "monte-carlo")

    if model == "binomial":
        mean, quant = _binomial_exact(n, s, p, qs)
        return result(mean, 0.0, quant, "exact")

    exact = _fixed_count_exact(n, s, p, qs, force=method == "exact")
    if exact is None:  # the exact route is over budget: sample instead
        return expected_lif(
            n, s, p, model="fixed-count", quantiles=qs, seed=seed, trials=t, method="monte-carlo"
        )
    return result(exact[0], 0.0, exact[1], "exact")


#: Sum of sqrt(s) over the s asked of :func:`exact_lif` up to which the interpreted kernel is
#: used (about 0.1 s of work, a fifth of numba's import).
_INTERPRETED_WALK_BUDGET = 50_000.0


def exact_lif(
    nodes: int,
    parts_per_node: Sequence[int] | np.ndarray,
    busy: float,
    *,
    model: Model = "binomial",
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

    Returns
    -------
    ndarray of float64, shape (m,)

    Raises
    ------
    InputError
        On bad input, or (fixed-count) when some ``s`` needs more than :data:`EXACT_COST_LIMIT`.
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
