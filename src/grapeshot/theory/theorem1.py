"""Theorem 1 of TreeMatchLB: how likely some pair of nodes is imbalanced without global balancing.

``m`` nodes each hold ``n`` chares whose durations are i.i.d. uniform on ``[a, b]``. By the central
limit theorem a node's total is ``N(n (a+b)/2, n (b-a)^2/12)``; the difference of two nodes,
relative to the mean ``n (a+b)/2``, exceeds ``alpha`` with probability

``p = 2 - 2 Phi(alpha sqrt(6 n) / 2 * (b + a) / (b - a))``,

and the paper takes the ``m (m + 1) / 2`` pairs as independent:

``q = 1 - (1 - p)^(m (m + 1) / 2)``.

The pair count is the paper's (it includes the ``m`` pairs of a node with itself; the distinct
pairs number ``m (m - 1) / 2``). It is kept as printed: this module reproduces the theorem, it
does not amend it. ``p`` is computed as ``2 sf(x)`` and ``q`` as ``-expm1(N log1p(-p))`` so
neither loses digits when ``p`` is tiny.

Table 1 of the paper, row 2 (n = 32, m = 16, alpha = 0.1, [75, 125]) prints ``q = 94.8 %``, but
its own inputs give 53.3 %; ``m = 32`` (528 pairs) gives 94.80 %, and ``p`` (0.56 %, printed
0.6 %) does not depend on ``m``, so ``m = 32`` is the one-input change that reproduces the whole
row: the printed ``m`` is most likely a misprint.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from grapeshot.model.errors import InputError, check_number
from grapeshot.theory.lif import _check_count


@dataclass(frozen=True)
class Theorem1Result:
    """Probabilities of theorem 1, as fractions in [0, 1].

    Attributes
    ----------
    p
        Probability that a given pair of nodes has a load ratio differing by more than alpha.
    q
        Probability that at least one of the ``m (m + 1) / 2`` pairs does.
    """

    p: float
    q: float


def theorem1(chares_per_node: int, nodes: int, alpha: float, a: float, b: float) -> Theorem1Result:
    """Evaluate TreeMatchLB's theorem 1.

    A closed form: it answers in constant time for any input in range.

    Parameters
    ----------
    chares_per_node
        ``n``, chares per node (1 to 2^63 - 1; the CLT behind the theorem wants ``n`` above
        ~30).
    nodes
        ``m``, nodes in the run (1 to 2^63 - 1).
    alpha
        Imbalance ratio threshold (>= 0; 0.05 means 5 % of a node's mean load).
    a, b
        Bounds of the uniform chare duration, any time unit, ``0 <= a < b``.

    Returns
    -------
    Theorem1Result
        ``p`` and ``q`` as fractions.

    Raises
    ------
    InputError
        On a bad value, naming the ``grapeshot theorem1`` option.
    """
    n = _check_count(chares_per_node, "--chares-per-node")
    m = _check_count(nodes, "--nodes")
    al = check_number(alpha, "--alpha", low=0.0, high_open=True, expected="a finite number >= 0")
    lo = check_number(
        a, "--a", low=0.0, high_open=True, expected="a finite number >= 0 (a duration)"
    )
    hi = check_number(b, "--b", low_open=True, high_open=True, expected="a finite number > --a")
    if hi <= lo:
        raise InputError(
            "--b", f"got {b!r} with --a {a!r}", "b > a (a uniform law on [a, b] needs width)"
        )
    # (b + a) / (b - a) on halves (exact scalings, the same bits): b + a may overflow where
    # both are finite. alpha = 0 is x = 0 whatever the ratio (never 0 * inf).
    half_sum, half_width = hi / 2.0 + lo / 2.0, hi / 2.0 - lo / 2.0
    x = 0.0 if al == 0.0 else al * math.sqrt(6.0 * n) / 2.0 * half_sum / half_width
    # 2·(1 − Φ(x)) = erfc(x/√2): the standard library's, without importing scipy.stats.
    p = float(math.erfc(x / math.sqrt(2.0)))
    pairs = m * (m + 1) / 2.0
    q = 1.0 if p >= 1.0 else float(-math.expm1(pairs * math.log1p(-p)))
    return Theorem1Result(p=p, q=q)
