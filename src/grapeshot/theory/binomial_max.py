"""Numba kernels for the maximum of ``n`` i.i.d. Binomial(s, p) counts.

These are the hot loops behind :func:`grapeshot.theory.lif.expected_lif` (binomial model) and
the partitions-per-node advisor, which evaluates the exact expectation for thousands of ``s``.

Two ways to the distribution of one node's busy count ``X ~ Binomial(s, p)``, both built on the
ratio recurrence ``pmf(k+1) / pmf(k) = (s - k) / (k + 1) * p / (1 - p)`` from the mode:

* the expectation and quantile kernels (:func:`max_excess`, :func:`max_quantile_k`, and the
  loops over many ``s`` or a grid) start from the mode's probability by Loader's saddle-point
  formula (:func:`binomial_pmf`, full relative precision, no ``lgamma`` of large arguments),
  climb to where ``n P(X > k) < CUT`` and walk down from there, accumulating the upper tail
  ``sf`` from small to large and stopping once the terms fall below ``CUT``: only the ``k`` that
  matter are visited, so one ``E[LIF]`` costs microseconds at any ``n``;
* :func:`binomial_window` / :func:`binomial_log_cdf` (the whole CDF, for
  :func:`grapeshot.theory.lif.max_cdf`) keep a window around the mode down to :data:`TAIL`
  relative weight and normalise it by its sum; the mass outside is below ``~1e-37``.

Either way ``log F(k) = log P(X <= k)`` is formed without cancellation (``log1p(-sf)`` with the
upper tail summed from the top down where ``F`` is near 1) and ``P(M <= k) = exp(n log F(k))``.

The kernels take ``p`` strictly inside ``(0, 1)``; the degenerate ``p == 1`` (every partition
busy, ``M == s``) is handled by the caller.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

#: Relative weight (to the mode's) below which :func:`binomial_window` drops probabilities.
TAIL = 1e-40
#: Absolute size below which a term of the expectation (or ``n`` times a tail) is dropped.
CUT = 1e-30
#: Relative slack with which a CDF value counts as reaching a quantile level (ties).
QUANTILE_SLACK = 1e-12

_LN_2PI = math.log(2.0 * math.pi)
_LN_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_S0 = 1.0 / 12.0
_S1 = 1.0 / 360.0
_S2 = 1.0 / 1260.0
_S3 = 1.0 / 1680.0
_S4 = 1.0 / 1188.0


@njit(cache=True)
def _mode(s: int, p: float) -> int:
    m = math.floor((s + 1) * p)
    return min(max(m, 0), s)


@njit(cache=True)
def binomial_window(s: int, p: float) -> tuple[int, np.ndarray]:
    """Return ``(lo, pmf)``: Binomial(s, p) probabilities for ``k = lo .. lo + len(pmf) - 1``.

    Parameters
    ----------
    s
        Number of trials (partitions per node), ``>= 1``.
    p
        Success probability (busy fraction), ``0 < p < 1``.

    Returns
    -------
    lo : int
        First ``k`` held.
    pmf : ndarray of float64, shape (hi - lo + 1,)
        Normalised probabilities; values below ``TAIL`` times the mode's are cut off.
    """
    r = p / (1.0 - p)
    mode = _mode(s, p)
    # First pass: find the window bounds without allocating s + 1 values.
    w = 1.0
    k = mode
    while k < s:
        w = w * (s - k) / (k + 1) * r
        if w < TAIL:
            break
        k += 1
    hi = k
    w = 1.0
    k = mode
    while k > 0:
        w = w * k / (s - k + 1) / r
        if w < TAIL:
            break
        k -= 1
    lo = k
    pmf = np.empty(hi - lo + 1)
    pmf[mode - lo] = 1.0
    for j in range(mode, hi):
        pmf[j + 1 - lo] = pmf[j - lo] * (s - j) / (j + 1) * r
    for j in range(mode, lo, -1):
        pmf[j - 1 - lo] = pmf[j - lo] * j / (s - j + 1) / r
    # Sum from both tails inwards (small to large) to keep the total's rounding minimal.
    total = 0.0
    i = 0
    j = hi - lo
    while i <= j:
        if pmf[i] <= pmf[j]:
            total += pmf[i]
            i += 1
        else:
            total += pmf[j]
            j -= 1
    pmf /= total
    return lo, pmf


@njit(cache=True)
def binomial_log_cdf(s: int, p: float) -> tuple[int, np.ndarray]:
    """Return ``(lo, logF)`` with ``logF[i] = log P(X <= lo + i)`` for ``X ~ Binomial(s, p)``.

    ``logF`` has the window's shape; for ``k < lo`` the true value is below ``log(1e-37)`` and for
    ``k >= lo + len(logF) - 1`` it is 0 to double precision.
    """
    lo, pmf = binomial_window(s, p)
    m = pmf.shape[0]
    cdf = np.empty(m)
    sf = np.empty(m)
    acc = 0.0
    for i in range(m):
        acc += pmf[i]
        cdf[i] = acc
    acc = 0.0
    for i in range(m - 1, -1, -1):
        sf[i] = acc  # P(X > lo + i): the mass strictly above, summed from the top down
        acc += pmf[i]
    log_f = np.empty(m)
    for i in range(m):
        if cdf[i] < 0.5:
            log_f[i] = math.log(cdf[i])
        else:
            log_f[i] = math.log1p(-sf[i])
    return lo, log_f


@njit(cache=True)
def _stirlerr(n: float) -> float:
    """``log(n!) - log(sqrt(2 pi n) (n/e)^n)``, the error of Stirling's formula (Loader 2000)."""
    if n <= 15.0:
        return math.lgamma(n + 1.0) - (n + 0.5) * math.log(n) + n - _LN_SQRT_2PI
    nn = n * n
    if n > 500.0:
        return (_S0 - _S1 / nn) / n
    if n > 80.0:
        return (_S0 - (_S1 - _S2 / nn) / nn) / n
    if n > 35.0:
        return (_S0 - (_S1 - (_S2 - _S3 / nn) / nn) / nn) / n
    return (_S0 - (_S1 - (_S2 - (_S3 - _S4 / nn) / nn) / nn) / nn) / n


@njit(cache=True)
def _bd0(x: float, np_: float) -> float:
    """``x log(x / np) + np - x`` without cancellation when ``x`` is close to ``np`` (Loader)."""
    if abs(x - np_) < 0.1 * (x + np_):
        v = (x - np_) / (x + np_)
        total = (x - np_) * v
        ej = 2.0 * x * v
        v = v * v
        j = 1
        while j < 1000:
            ej *= v
            nxt = total + ej / (2 * j + 1)
            if nxt == total:
                return nxt
            total = nxt
            j += 1
        return total
    return x * math.log(x / np_) + np_ - x


@njit(cache=True)
def binomial_pmf(k: int, s: int, p: float) -> float:
    """``P(X = k)`` for ``X ~ Binomial(s, p)``, ``0 < p < 1``, to full relative precision.

    Loader's saddle-point form (the algorithm behind R's ``dbinom``): no ``lgamma`` of large
    arguments, so the result keeps ~15 significant digits even for ``s`` in the millions.
    """
    q = 1.0 - p
    if k == 0:
        if p < 0.1:
            return math.exp(-_bd0(float(s), s * q) - s * p)
        return math.exp(s * math.log1p(-p))
    if k == s:
        if q < 0.1:
            return math.exp(-_bd0(float(s), s * p) - s * q)
        return math.exp(s * math.log(p))
    x = float(k)
    n = float(s)
    lc = _stirlerr(n) - _stirlerr(x) - _stirlerr(n - x) - _bd0(x, n * p) - _bd0(n - x, n * q)
    lf = _LN_2PI + math.log(x) + math.log1p(-x / n)
    return math.exp(lc - 0.5 * lf)


@njit(cache=True)
def _upper_start(n: float, s: int, p: float) -> tuple[int, float]:
    """Return ``(top, pmf(top))``: the ``k`` above which ``n P(X > k)`` is below ``CUT``.

    Climbs from the mode with the ratio recurrence; past the mode the ratio is below 1, so
    the tail above ``top`` is at most ``pmf(top) * r / (1 - r)``, which is what is tested.
    """
    r = p / (1.0 - p)
    k = _mode(s, p)
    w = binomial_pmf(k, s, p)
    while k < s:
        ratio = (s - k) / (k + 1) * r
        if ratio < 1.0 and n * w * ratio / (1.0 - ratio) < CUT:
            break
        w = w * ratio
        k += 1
    return k, w


@njit(cache=True)
def max_excess(n: float, s: int, p: float) -> float:
    """Return ``E[M] - p s`` for ``M`` the maximum of ``n`` i.i.d. Binomial(s, p).

    ``E[M] = sum_{k=0}^{s-1} P(M > k)``. Split at ``k0 = floor(p s)`` so that nothing of size
    ``p s`` is subtracted at the end (which would cost digits when the imbalance is small)::

        E[M] - p s = (k0 - p s) - sum_{k < k0} F(k)^n + sum_{k0 <= k < s} (1 - F(k)^n)

    with ``1 - F^n = -expm1(n log1p(-sf))`` and the upper tail ``sf(k) = P(X > k)`` summed from
    the top down. The walk starts where ``n sf < CUT`` (terms above it are below ``CUT``) and
    stops below ``k0`` once ``F(k)^n < CUT`` (each further term is smaller still), so only the
    ``k`` that matter are visited.
    """
    mu = p * s
    k0 = math.floor(mu)
    r = p / (1.0 - p)
    top, w = _upper_start(n, s, p)
    acc = 0.0
    sf = 0.0  # P(X > k); the mass above `top` is below CUT / n and left out
    k = top
    while k >= 0:
        if k <= s - 1:
            if sf >= 1.0:
                break  # F(k) is 0 to double precision here and below
            lf = n * math.log1p(-sf)
            if k >= k0:
                acc += -math.expm1(lf)
            else:
                term = math.exp(lf)
                acc -= term
                if term < CUT:
                    break
        sf += w
        if k > 0:
            w = w * k / (s - k + 1) / r
        k -= 1
    return (k0 - mu) + acc


@njit(cache=True)
def lif_many(n: float, s_values: np.ndarray, p: float) -> np.ndarray:
    """Exact ``E[LIF] = E[M] / (p s) - 1`` for each ``s`` in ``s_values`` (int64, shape (m,))."""
    out = np.empty(s_values.shape[0])
    for i in range(s_values.shape[0]):
        s = s_values[i]
        out[i] = max_excess(n, s, p) / (p * s)
    return out


@njit(cache=True)
def lif_grid(nodes: np.ndarray, s_values: np.ndarray, busy: np.ndarray) -> np.ndarray:
    """Exact binomial-model ``E[LIF]`` on a grid, shape (len(nodes), len(s_values), len(busy)).

    ``busy`` values equal to 1 give 0 (every partition busy, no imbalance).
    """
    out = np.zeros((nodes.shape[0], s_values.shape[0], busy.shape[0]))
    for a in range(nodes.shape[0]):
        for b in range(s_values.shape[0]):
            for c in range(busy.shape[0]):
                p = busy[c]
                if p < 1.0 and nodes[a] > 1:
                    s = s_values[b]
                    out[a, b, c] = max_excess(float(nodes[a]), s, p) / (p * s)
    return out


@njit(cache=True)
def max_quantile_k(n: float, s: int, p: float, q: float) -> int:
    """Smallest ``k`` with ``P(M <= k) = F(k)^n >= q``, for ``0 < q < 1``.

    Walks down from the top of the distribution while ``F(k)^n >= q`` still holds. A CDF value
    within ``QUANTILE_SLACK`` (relative) of ``q`` counts as reaching it: exact ties such as
    ``F(2) = 1/2`` for Binomial(5, 1/2) must not be lost to the last bit.
    """
    r = p / (1.0 - p)
    target = math.log(q) - QUANTILE_SLACK
    top, w = _upper_start(n, s, p)
    sf = 0.0
    k = top
    # At `top`, n sf < CUT, so F(top)^n > 1 - CUT >= q.
    while k > 0:
        sf += w  # now P(X > k - 1)
        if sf >= 1.0 or n * math.log1p(-sf) < target:
            return k
        w = w * k / (s - k + 1) / r
        k -= 1
    return 0
