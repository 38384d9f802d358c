"""Every theory answer comes within a stated budget: exactly, by an asymptotic formula that
says so, or by a refusal naming the limit. Budgets are in work units estimated before the
work, so these tests check which route answers (never how long it took)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from grapeshot.model.errors import InputError
from grapeshot.theory import advisor as advisor_mod
from grapeshot.theory import binomial_scalar
from grapeshot.theory import lif as lif_mod
from grapeshot.theory.advisor import advise
from grapeshot.theory.lif import (
    BudgetExceeded,
    WorkBudget,
    binomial_walk,
    exact_lif,
    expected_lif,
)

QS = (0.5, 0.9, 0.99)


def test_normal_max_moments_match_closed_forms() -> None:
    e1, e2 = lif_mod._normal_max_moments(2.0)
    assert e1 == pytest.approx(1 / math.sqrt(math.pi), rel=1e-12)  # E max of 2: 1/sqrt(pi)
    assert e2 == pytest.approx(1.0, rel=1e-10)  # max² + min² = X² + Y²
    e1, _ = lif_mod._normal_max_moments(3.0)
    assert e1 == pytest.approx(1.5 / math.sqrt(math.pi), rel=1e-12)
    assert lif_mod._normal_max_moments(1.0) == (0.0, 1.0)


@pytest.mark.parametrize("n", [2, 24, 1000, 10**6, 10**12, 10**18])
@pytest.mark.parametrize("p", [0.5, 0.1, 0.01, 0.99])
@pytest.mark.parametrize("s", [10**5, 10**7])
def test_binomial_asymptote_is_within_its_stated_error(n: int, p: float, s: int) -> None:
    """The asymptote's relative error is below (0.05 ln n + 0.1) / sigma^2, as its note says."""
    exact_mean, exact_q = lif_mod._binomial_exact(n, s, p, QS)
    mean, quant = lif_mod._binomial_asymptotic(n, s, p, QS)
    sigma = math.sqrt(s * p * (1 - p))
    assert abs(mean / exact_mean - 1.0) < lif_mod.asymptotic_error(n, sigma)
    for q in QS:  # whole counts: within one partition of the exact quantile
        assert abs(quant[q] - exact_q[q]) <= 1.0 / (p * s) + 1e-15


def test_huge_binomial_answers_asymptotically_and_says_so() -> None:
    n, s, p = 4, 4_611_686_018_427_387_904, 0.5
    assert binomial_walk(n, s, p) > lif_mod.BINOMIAL_WALK_LIMIT
    r = expected_lif(n, s, p)
    assert r.method == "asymptotic" and "normal approximation" in r.note
    sigma, mu = math.sqrt(s * p * (1 - p)), p * s
    e1, _ = lif_mod._normal_max_moments(4.0)
    assert r.mean == pytest.approx(sigma * e1 / mu, rel=1e-12)
    assert all(v > 0 for v in r.quantiles.values())


def test_within_budget_the_binomial_route_is_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    n, s, p = 10_000, 10**6, 0.3
    r = expected_lif(n, s, p)
    assert r.method == "exact" and r.note == ""
    monkeypatch.setattr(lif_mod, "BINOMIAL_WALK_LIMIT", binomial_walk(n, s, p) - 1)
    a = expected_lif(n, s, p)
    assert a.method == "asymptotic"
    assert a.mean == pytest.approx(r.mean, rel=lif_mod.asymptotic_error(n, math.sqrt(s * p * 0.7)))


def test_the_walk_stops_on_few_nodes() -> None:
    """n = 2 needs F(k) < 1e-15, below what 1 - sf resolves: the walk stops on the pmf bound
    (before, it went on to k = 0: 5e8 steps here). E[max of 2] - mu = sigma / sqrt(pi)."""
    s, p = 10**9, 0.5
    assert binomial_walk(2, s, p) <= lif_mod.BINOMIAL_WALK_LIMIT
    sigma = math.sqrt(s * p * (1 - p))
    excess = binomial_scalar.max_excess(2.0, s, p)
    assert excess == pytest.approx(
        sigma / math.sqrt(math.pi), rel=lif_mod.asymptotic_error(2, sigma)
    )


@pytest.mark.parametrize(
    ("n", "s", "p"), [(2, 3, 0.0001), (2, 10, 0.5), (3, 1, 0.01), (30, 2, 0.01), (1, 7, 0.5)]
)
@pytest.mark.parametrize("model", ["binomial", "fixed-count"])
def test_no_lif_quantile_is_negative(n: int, s: int, p: float, model: str) -> None:
    if model == "fixed-count" and round(p * n * s) == 0:
        return  # refused: no busy partition
    for method in ("auto", "monte-carlo"):
        r = expected_lif(n, s, p, model=model, quantiles=(0.01, *QS), method=method, trials=500)
        assert min(r.quantiles.values()) >= 0.0, (method, r.quantiles)
        if n == 1:
            assert set(r.quantiles.values()) == {0.0}


def test_walkthrough_lif_of_an_idle_placement_is_zero() -> None:
    """lif --nodes 2 --parts-per-node 3 --busy 0.0001: most placements have nothing busy."""
    r = expected_lif(2, 3, 0.0001)
    assert r.quantiles == {0.5: 0.0, 0.9: 0.0, 0.99: 0.0}
    assert r.mean == pytest.approx(0.9997, abs=1e-4)  # E[M] / (p s) - 1, as before


# --------------------------------------------------------------------------------------------
# Fixed-count: exact, then Monte Carlo, then the binomial model at p' (n >= 1000), then refuse


def test_fixed_count_beyond_both_budgets_on_many_nodes_is_the_binomial_limit() -> None:
    """The walkthrough's case: n s = 1e9 slots, over Monte Carlo's limit and the exact cost."""
    r = expected_lif(10_000, 100_000, 0.01, model="fixed-count")
    assert r.method == "asymptotic" and "p' = B/(n·s)" in r.note
    b = round(0.01 * 10_000 * 100_000)
    p_prime = b / (10_000 * 100_000)
    mean, quant = lif_mod._binomial_exact(10_000, 100_000, p_prime, QS)
    assert r.mean == mean and r.quantiles == quant


@pytest.mark.parametrize(("n", "s", "p"), [(1000, 100, 0.01), (3000, 30, 0.05), (10_000, 100, 0.5)])
def test_the_binomial_limit_is_close_to_the_exact_fixed_count(
    n: int, s: int, p: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    exact = expected_lif(n, s, p, model="fixed-count")
    assert exact.method == "exact"
    monkeypatch.setattr(lif_mod, "EXACT_COST_LIMIT", 1.0)
    monkeypatch.setattr(lif_mod, "MC_VALUE_LIMIT", 1)
    approx = expected_lif(n, s, p, model="fixed-count")
    assert approx.method == "asymptotic"
    assert approx.mean == pytest.approx(exact.mean, rel=2e-4)
    assert approx.quantiles == pytest.approx(exact.quantiles, abs=1.5 / (p * s))


def test_fixed_count_refusals_name_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    # Few nodes, n s beyond Monte Carlo's slots: refused, suggesting the binomial model.
    with pytest.raises(InputError, match=r"^--parts-per-node: .*1e\+09 slots.*--model binomial"):
        expected_lif(2, 4_611_686_018_427_387_904, 0.5, model="fixed-count")
    # Few nodes, exact over budget, too many trials asked for: refused naming --trials.
    monkeypatch.setattr(lif_mod, "EXACT_COST_LIMIT", 1.0)
    with pytest.raises(InputError, match=r"^--trials: .*expected --trials <= 559240$"):
        expected_lif(30, 16, 0.5, model="fixed-count", trials=10**6)
    assert expected_lif(30, 16, 0.5, model="fixed-count").method == "monte-carlo"


def test_the_plan_refuses_before_building_tables() -> None:
    with pytest.raises(lif_mod._OverBudget):
        lif_mod._fixed_count_plan(2, 1 << 40, 1 << 40, lif_mod.EXACT_COST_LIMIT)
    with pytest.raises(lif_mod._OverBudget):  # lower bound: every FFT at least k + 1 long
        lif_mod._fixed_count_plan(2, 1 << 21, 1 << 21, lif_mod.EXACT_COST_LIMIT)


@pytest.mark.parametrize("where", ["--nodes", "--parts-per-node"])
def test_counts_beyond_int64_are_refused(where: str) -> None:
    args = {"--nodes": (10**20, 4), "--parts-per-node": (4, 10**20)}[where]
    with pytest.raises(InputError, match=f"^{where}: got 10+; expected an integer from 1 to"):
        expected_lif(*args, 0.5)


# --------------------------------------------------------------------------------------------
# The advisor


def test_binomial_scan_beyond_budget_bisects(monkeypatch: pytest.MonkeyPatch) -> None:
    scanned = advise(50, 0.4, 0.1, cores_per_node=8)
    assert scanned.search == "scan"
    monkeypatch.setattr(advisor_mod, "ADVISE_WALK_LIMIT", 0.0)
    bisected = advise(50, 0.4, 0.1, cores_per_node=8)
    assert bisected.search == "bisection"
    # E[LIF] decreases with s here, so bisection finds the same smallest s.
    assert (bisected.parts_per_node, bisected.parts_per_core) == (
        scanned.parts_per_node,
        scanned.parts_per_core,
    )
    assert bisected.mean_exact == scanned.mean_exact


def test_walkthrough_binomial_advice_comes_by_bisection() -> None:
    """n = 10,000, p = 0.5, target 0.01: the full scan of ~260,000 s is beyond the budget."""
    assert advisor_mod.scan_walk(10_000, 0.5, 1, 1 << 18) > advisor_mod.ADVISE_WALK_LIMIT
    advice = advise(10_000, 0.5, 0.01)
    assert advice.search == "bisection" and advice.parts_per_node == 148_348
    assert (
        exact_lif(10_000, [148_347, 148_348], 0.5).tolist()[1]
        <= 0.01
        < exact_lif(10_000, [148_347], 0.5)[0]
    )


def test_fixed_count_scan_beyond_budget_is_refused_with_the_binomial_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(advisor_mod, "ADVISE_FIXED_COUNT_LIMIT", 1e6)
    binomial = advise(16, 0.4, 0.3).parts_per_node
    with pytest.raises(InputError) as info:
        advise(16, 0.4, 0.3, model="fixed-count")
    message = str(info.value)
    assert message.startswith("--model: fixed-count needs E[LIF] exactly for every s")
    assert "budget of 1e+06" in message and f"it answers s = {binomial} here" in message


def test_exact_lif_charges_its_budget() -> None:
    budget = WorkBudget(1e12)
    exact_lif(16, [4, 8], 0.4, model="fixed-count", budget=budget)
    assert budget.spent >= 2 * lif_mod.FIXED_COUNT_EVALUATION_UNITS
    with pytest.raises(BudgetExceeded):
        exact_lif(16, [4, 8, 16], 0.4, model="fixed-count", budget=WorkBudget(1.0))


def test_in_budget_fixed_count_advice_is_unchanged() -> None:
    """Small fixed-count scans run as before (every smaller s checked)."""
    n, p = 2, 0.5
    values = {s: expected_lif(n, s, p, model="fixed-count").mean for s in range(1, 41)}
    advice = advise(n, p, 0.12, model="fixed-count")
    assert advice.search == "scan"
    assert values[advice.parts_per_node] <= 0.12
    assert all(values[s] > 0.12 for s in range(1, advice.parts_per_node))
    np.testing.assert_equal(advice.mean_exact, values[advice.parts_per_node])


def test_almost_nothing_busy_is_not_lost_to_the_walks_cut() -> None:
    """n p s below the walk's absolute cut (1e-30): E[M] is P(M >= 1), not dropped (it read
    E[LIF] = -1). At most one partition is busy: the busiest node holds n times the mean."""
    below = expected_lif(4, 2, 1e-31)
    above = expected_lif(4, 2, 1e-29)  # the walk's own route
    assert below.mean == pytest.approx(3.0, rel=1e-12) and above.mean == pytest.approx(3.0)
    assert below.quantiles == dict.fromkeys(QS, 0.0)
    assert expected_lif(2**62, 2, 1e-300).mean == pytest.approx(2.0**62 - 1.0)


@pytest.mark.parametrize(("n", "s"), [(10**6, 10**6), (4000, 2000)])
def test_hypergeometric_tails_hold_at_any_population(n: int, s: int) -> None:
    """scipy's hypergeometric logpmf loses digits once n s passes ~1e10 (its probabilities
    summed to 0.9986 at n = s = 1e6 and the plan read every k as impossible); the recurrence
    keeps the CDF a CDF and its mode at B / n."""
    b = round(0.3 * n * s)
    cdf, sf = lif_mod._hypergeom_tails(n * s, b, s)
    assert cdf[-1] == pytest.approx(1.0, abs=1e-12) and np.all(np.diff(cdf) >= -1e-15)
    np.testing.assert_allclose(cdf[:-1] + sf[:-1], 1.0, atol=1e-12)
    assert abs(int(np.argmax(np.diff(cdf, prepend=0.0))) - b / n) <= 1
    if n * s < 10**9:  # where scipy is accurate, the two agree
        from scipy import stats

        k = np.arange(s + 1)
        ref = stats.hypergeom.cdf(k, n * s, b, s)
        keep = ref > 1e-200
        np.testing.assert_allclose(cdf[keep], ref[keep], rtol=1e-8)
