"""The maximum of ``n`` i.i.d. Binomial(s, p) counts, one ``(n, s, p)`` at a time, in Python.

The scalar kernels behind :func:`grapeshot.theory.lif.expected_lif` (binomial model):
``E[M] - p s`` and the quantiles of ``M``. They are plain Python so that ``grapeshot lif``
answers without importing numba (half a second of start-up for microseconds of work);
:mod:`grapeshot.theory.binomial_max` compiles the very same functions with numba for the loops
over many ``s`` (the advisor, the bias map), and a test checks the two agree bit for bit.

The distribution of one node's busy count ``X ~ Binomial(s, p)`` is walked with the ratio
recurrence ``pmf(k+1) / pmf(k) = (s - k) / (k + 1) * p / (1 - p)``, starting from the mode's
probability by Loader's saddle-point formula (:func:`binomial_pmf`, full relative precision,
no ``lgamma`` of large arguments); only the ``k`` that matter are visited (see
:func:`max_excess`), so one ``E[LIF]`` costs microseconds compiled, well under a millisecond
interpreted, at any ``n``. ``log F(k) = log P(X <= k)`` is formed without cancellation
(``log1p(-sf)`` with the upper tail summed from the top down where ``F`` is near 1) and
``P(M <= k) = exp(n log F(k))``.

Only ``math`` is used, whose functions compile to the same C library calls under numba. The
kernels take ``p`` strictly inside ``(0, 1)``; the degenerate ``p == 1`` is the caller's.
"""

from __future__ import annotations

import math

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

#: Stirling's error for n = 1 .. 15, where its series is not accurate enough; a table (made
#: here, once) rather than ``lgamma`` calls, so that numba and CPython, whose ``lgamma``
#: implementations differ in the last bits, read the same numbers.
_STIRLERR_SMALL = tuple(
    math.lgamma(n + 1.0) - (n + 0.5) * math.log(n) + n - _LN_SQRT_2PI for n in range(1, 16)
)


def _mode(s: int, p: float) -> int:
    m = math.floor((s + 1) * p)
    return min(max(m, 0), s)


def _stirlerr(n: float) -> float:
    """``log(n!) - log(sqrt(2 pi n) (n/e)^n)``, the error of Stirling's formula (Loader 2000).

    ``n`` is a whole number >= 1 (a count of trials or successes).
    """
    if n <= 15.0:
        return _STIRLERR_SMALL[int(n) - 1]
    nn = n * n
    if n > 500.0:
        return (_S0 - _S1 / nn) / n
    if n > 80.0:
        return (_S0 - (_S1 - _S2 / nn) / nn) / n
    if n > 35.0:
        return (_S0 - (_S1 - (_S2 - _S3 / nn) / nn) / nn) / n
    return (_S0 - (_S1 - (_S2 - (_S3 - _S4 / nn) / nn) / nn) / nn) / n


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


def max_excess(n: float, s: int, p: float) -> float:
    """Return ``E[M] - p s`` for ``M`` the maximum of ``n`` i.i.d. Binomial(s, p).

    ``E[M] = sum_{k=0}^{s-1} P(M > k)``. Split at ``k0 = floor(p s)`` so that nothing of size
    ``p s`` is subtracted at the end (which would cost digits when the imbalance is small)::

        E[M] - p s = (k0 - p s) - sum_{k < k0} F(k)^n + sum_{k0 <= k < s} (1 - F(k)^n)

    with ``1 - F^n = -expm1(n log1p(-sf))`` and the upper tail ``sf(k) = P(X > k)`` summed from
    the top down. The walk starts where ``n sf < CUT`` (terms above it are below ``CUT``) and
    stops below ``k0`` once ``F(k)^n < CUT`` (each further term is smaller still), so only the
    ``k`` that matter are visited. ``1 - sf`` cannot resolve ``F(k)`` below ~1e-16, so on few
    nodes (``n = 2`` needs ``F < 1e-15``) the walk also stops on the bound
    ``F(k) <= pmf(k) / (1 - pmf(k-1)/pmf(k))`` (the lower tail shrinks at least geometrically
    below the mode); without it, it walked down to ``k = 0`` (minutes at ``s = 1e8``).
    """
    mu = p * s
    k0 = math.floor(mu)
    r = p / (1.0 - p)
    top, w = _upper_start(n, s, p)
    acc = 0.0
    sf = 0.0  # P(X > k); the mass above `top` is below CUT / n and left out
    k = top
    log_cut = math.log(CUT)
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
                q = k / ((s - k + 1) * r)  # pmf(k - 1) / pmf(k), below 1 under the mode
                if q < 1.0 and (w <= 0.0 or n * math.log(w / (1.0 - q)) < log_cut):
                    break
        sf += w
        if k > 0:
            w = w * k / (s - k + 1) / r
        k -= 1
    return (k0 - mu) + acc


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
