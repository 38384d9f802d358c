"""TreeMatchLB theorem 1 against the paper's Table 1, including its row-2 misprint."""

from __future__ import annotations

import math

import pytest

from grapeshot.model.errors import InputError
from grapeshot.theory.theorem1 import Theorem1Result, theorem1


def percent(x: float, digits: int) -> float:
    """``x`` as a percentage rounded to the digits the paper prints."""
    return round(100.0 * x, digits)


# (n, m, alpha, a, b) -> printed p %, q % and the decimals printed for each.
TABLE_1 = [
    ((64, 128, 0.05, 50, 100), (14.2, 1), (100.0, 0)),
    ((32, 16, 0.1, 75, 125), (0.6, 1), (94.8, 1)),  # q misprinted, see below
    ((64, 8, 0.1, 60, 140), (1.4, 1), (40.4, 1)),
    ((64, 256, 0.05, 100, 130), (0.02, 2), (99.7, 1)),
]


def test_rows_1_and_4_reproduce_to_the_printed_digits() -> None:
    for row in (0, 3):
        args, (p_pct, p_dig), (q_pct, q_dig) = TABLE_1[row]
        r = theorem1(*args)
        assert percent(r.p, p_dig) == p_pct
        assert percent(r.q, q_dig) == q_pct


def test_row_3_p_rounds_and_q_is_within_one_printed_unit() -> None:
    """Row 3: q = 40.47 % by the formula, printed 40.4 %: truncated, not rounded.

    (The printed digit is what Φ(2.45) from a normal table gives: x = 2.449... rounded to two
    decimals yields q = 40.43 %. The formula is not bent to match it.)
    """
    args, (p_pct, p_dig), (q_pct, _) = TABLE_1[2]
    r = theorem1(*args)
    assert percent(r.p, p_dig) == p_pct
    assert r.q == pytest.approx(0.40472, abs=1e-5)
    assert q_pct == 40.4 and math.floor(1000 * r.q) / 10 == q_pct  # printed: its truncation
    assert percent(r.q, 1) == 40.5


def test_row_2_as_printed_gives_53_percent_not_94_8() -> None:
    args, (p_pct, p_dig), (q_pct, q_dig) = TABLE_1[1]
    r = theorem1(*args)
    assert percent(r.p, p_dig) == p_pct  # p = 0.558 % -> 0.6 %: p is right
    assert percent(r.q, q_dig) == 53.3  # but q is not 94.8 %
    assert percent(r.q, q_dig) != q_pct


def test_row_2_is_reproduced_by_m_32() -> None:
    """m = 32 (528 pairs) gives q = 94.80 %; p does not involve m, so the whole row matches."""
    r = theorem1(32, 32, 0.1, 75, 125)
    assert percent(r.p, 1) == 0.6
    assert percent(r.q, 1) == 94.8
    assert 32 * 33 // 2 == 528
    # No other node count reproduces the printed q; the other inputs all move p off 0.6 %.
    matches = [m for m in range(1, 200) if percent(theorem1(32, m, 0.1, 75, 125).q, 1) == 94.8]
    assert matches == [32]


def test_formula_pieces() -> None:
    n, m, alpha, a, b = 64, 8, 0.1, 60, 140
    x = alpha * math.sqrt(6 * n) / 2 * (b + a) / (b - a)
    p = 2 * (1 - 0.5 * (1 + math.erf(x / math.sqrt(2))))
    r = theorem1(n, m, alpha, a, b)
    assert r.p == pytest.approx(p, rel=1e-12)
    assert r.q == pytest.approx(1 - (1 - p) ** (m * (m + 1) / 2), rel=1e-12)
    assert isinstance(r, Theorem1Result)


def test_properties_stated_in_the_paper() -> None:
    # p decreases with n and with alpha.
    assert theorem1(128, 8, 0.1, 60, 140).p < theorem1(64, 8, 0.1, 60, 140).p
    assert theorem1(64, 8, 0.2, 60, 140).p < theorem1(64, 8, 0.1, 60, 140).p
    # If b = r a, p depends on r only.
    assert theorem1(64, 8, 0.1, 50, 100).p == pytest.approx(theorem1(64, 8, 0.1, 70, 140).p)
    # alpha = 0: every pair "differs by more than 0".
    assert theorem1(64, 8, 0.0, 60, 140) == Theorem1Result(1.0, 1.0)
    # One node: one (self-)pair, so q = p.
    r = theorem1(64, 1, 0.1, 60, 140)
    assert r.q == pytest.approx(r.p, rel=1e-12)


def test_tiny_p_keeps_its_digits() -> None:
    """p = 2 sf(x) and q = -expm1(N log1p(-p)) hold up where 1 - Phi(x) rounds to 0."""
    r = theorem1(64, 4, 0.5, 75, 125)  # x = 19.6: 1 - Phi(x) is 0 in doubles, sf(x) ~ 1e-85
    x = 0.5 * math.sqrt(6 * 64) / 2 * 200 / 50
    assert r.p == pytest.approx(math.erfc(x / math.sqrt(2)), rel=1e-12)
    assert 0.0 < r.p < 1e-80
    assert r.q == pytest.approx(10 * r.p, rel=1e-12)  # 4 nodes: 4 * 5 / 2 = 10 pairs


@pytest.mark.parametrize(
    ("args", "where"),
    [
        ((0, 8, 0.1, 60, 140), "--chares-per-node"),
        ((64, 0, 0.1, 60, 140), "--nodes"),
        ((64, 8, -0.1, 60, 140), "--alpha"),
        ((64, 8, float("nan"), 60, 140), "--alpha"),
        ((64, 8, 0.1, -1, 140), "--a"),
        ((64, 8, 0.1, 60, 60), "--b"),
        ((64, 8, 0.1, 140, 60), "--b"),
        ((64, 8, 0.1, 60, float("inf")), "--b"),
    ],
)
def test_bad_input_names_the_option(args: tuple, where: str) -> None:
    with pytest.raises(InputError, match=f"^{where}:"):
        theorem1(*args)
