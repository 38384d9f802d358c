"""Numba kernels for the maximum of ``n`` i.i.d. Binomial(s, p) counts, over many ``s``.

The scalar kernels (:func:`max_excess`, :func:`max_quantile_k`, :func:`binomial_pmf`) are the
functions of :mod:`grapeshot.theory.binomial_scalar` compiled as they are; this module adds the
loops over many ``s`` or a grid (:func:`lif_many`, :func:`lif_grid`: the advisor evaluates the
exact expectation for thousands of ``s``) and the whole CDF:
:func:`binomial_window` / :func:`binomial_log_cdf` (for :func:`grapeshot.theory.lif.max_cdf`)
keep a window around the mode down to :data:`TAIL` relative weight and normalise it by its
sum; the mass outside is below ``~1e-37``. ``log F(k)`` is formed as in the scalar kernels.
"""

from __future__ import annotations

import math
import types

import numpy as np
from numba import njit

from grapeshot.theory import binomial_scalar

#: Relative weight (to the mode's) below which :func:`binomial_window` drops probabilities.
TAIL = 1e-40

_SCALAR = ("_mode", "_stirlerr", "_bd0", "binomial_pmf", "_upper_start", "max_excess",
           "max_quantile_k")  # fmt: skip


def _compile_scalar_kernels() -> dict[str, object]:
    """numba versions of :mod:`binomial_scalar`'s functions, calling each other compiled.

    Each function is rebuilt over a copy of that module's globals in which its callees are
    already the compiled dispatchers (numba resolves globals when it first compiles).
    """
    scope = dict(vars(binomial_scalar))
    for name in _SCALAR:
        fn = getattr(binomial_scalar, name)
        rebuilt = types.FunctionType(fn.__code__, scope, name, fn.__defaults__)
        rebuilt.__doc__ = fn.__doc__
        scope[name] = njit(cache=True)(rebuilt)
    return {name: scope[name] for name in _SCALAR}


_kernels = _compile_scalar_kernels()
_mode = _kernels["_mode"]
binomial_pmf = _kernels["binomial_pmf"]
max_excess = _kernels["max_excess"]
max_quantile_k = _kernels["max_quantile_k"]


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
