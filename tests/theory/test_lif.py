"""The load imbalance factor: exact routes against brute force, Monte Carlo and the paper."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from grapeshot.model.errors import InputError
from grapeshot.theory import lif as lif_mod
from grapeshot.theory.lif import (
    eq2_bias_map,
    exact_lif,
    expected_lif,
    lif_eq2,
    lif_monte_carlo,
    max_cdf,
)

# --------------------------------------------------------------------------------------------
# Slow references: enumerate every outcome.


def brute_binomial(n: int, s: int, p: float) -> np.ndarray:
    """P(M = k), k = 0..s, by enumerating all (s+1)^n busy-count vectors."""
    pmf = stats.binom.pmf(np.arange(s + 1), s, p)
    out = np.zeros(s + 1)
    for counts in itertools.product(range(s + 1), repeat=n):
        out[max(counts)] += np.prod(pmf[list(counts)])
    return out


def brute_fixed_count(n: int, s: int, b: int) -> np.ndarray:
    """P(M = k), k = 0..s, by enumerating every choice of b busy slots among n*s."""
    out = np.zeros(s + 1)
    for chosen in itertools.combinations(range(n * s), b):
        out[np.bincount(np.array(chosen) // s, minlength=n).max()] += 1
    return out / out.sum()


def lif_from_pmf(pmf: np.ndarray, mean_busy: float) -> float:
    return float(np.arange(pmf.shape[0]) @ pmf / mean_busy - 1.0)


def assert_is_cdf(cdf: np.ndarray) -> None:
    """A CDF of a count on 0..s: within [0, 1], never decreasing, ending at 1."""
    assert np.all(cdf >= 0.0) and np.all(cdf <= 1.0)
    assert np.all(np.diff(cdf) >= 0.0)
    assert cdf[-1] == pytest.approx(1.0, abs=1e-15)


# --------------------------------------------------------------------------------------------
# Eq. 2


def test_eq2_is_the_papers_formula_with_natural_log() -> None:
    assert lif_eq2(10_000, 100, 0.5) == pytest.approx(math.sqrt(2 * math.log(10_000) / 100))
    assert lif_eq2(1, 50, 0.3) == 0.0
    assert lif_eq2(64, 50, 1.0) == 0.0


def test_eq2_reproduces_figure_4_statement() -> None:
    """Fig. 4: with p = 0.6 and E(LIF) = 0.21 fixed, s grows logarithmically with n."""
    p, target = 0.6, 0.21

    def s_needed(n: int) -> float:
        return 2 * math.log(n) * (1 / p - 1) / target**2

    for n in (32, 256, 4096):
        assert lif_eq2(n, round(s_needed(n)), p) == pytest.approx(target, rel=0.01)
    # Logarithmic: squaring n doubles s (s = 30.2 ln n).
    assert s_needed(32**2) == pytest.approx(2 * s_needed(32))
    assert s_needed(32) == pytest.approx(104.8, abs=0.1)


# --------------------------------------------------------------------------------------------
# Exact against brute-force enumeration


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("s", [1, 2, 4, 5])
@pytest.mark.parametrize("p", [0.2, 0.5, 0.9])
def test_binomial_exact_matches_enumeration(n: int, s: int, p: float) -> None:
    pmf = brute_binomial(n, s, p)
    k, cdf, mean_busy = max_cdf(n, s, p, model="binomial")
    np.testing.assert_array_equal(k, np.arange(s + 1))
    assert_is_cdf(cdf)
    np.testing.assert_allclose(cdf, np.cumsum(pmf), atol=1e-13)
    assert mean_busy == pytest.approx(p * s)
    result = expected_lif(n, s, p, quantiles=(0.25, 0.5, 0.9))
    assert result.method == "exact" and result.stderr == 0.0
    assert result.mean == pytest.approx(lif_from_pmf(pmf, p * s), abs=1e-12)
    for q, value in result.quantiles.items():
        k_q = int(np.argmax(np.cumsum(pmf) >= q - 1e-12))
        # One node is always balanced; and no placement's LIF is below 0 (k_q < p s is a
        # quantile where hardly anything is busy: M = 0, an idle placement).
        assert value == (0.0 if n == 1 else pytest.approx(max(0.0, k_q / (p * s) - 1.0)))


@pytest.mark.parametrize(
    ("n", "s", "b"), [(2, 3, 2), (2, 5, 5), (3, 3, 4), (3, 4, 5), (4, 3, 6), (3, 5, 2), (2, 6, 9)]
)
def test_fixed_count_exact_matches_enumeration(n: int, s: int, b: int) -> None:
    pmf = brute_fixed_count(n, s, b)
    p = b / (n * s)
    _, cdf, mean_busy = max_cdf(n, s, p, model="fixed-count")
    assert_is_cdf(cdf)
    np.testing.assert_allclose(cdf, np.cumsum(pmf), atol=1e-12)
    assert mean_busy == pytest.approx(b / n)
    result = expected_lif(n, s, p, model="fixed-count")
    assert result.method == "exact"
    assert result.mean == pytest.approx(lif_from_pmf(pmf, b / n), abs=1e-12)


def test_binomial_exact_matches_direct_scipy_sum_at_scale() -> None:
    """n = 10,000: the numba kernel against sum_k (1 - F(k)^n) with scipy's binomial sf."""
    n, s, p = 10_000, 1000, 0.3
    k = np.arange(s)
    with np.errstate(divide="ignore"):  # sf(0) rounds to 1 here: log1p(-1) = -inf, exact
        direct = np.sum(-np.expm1(n * np.log1p(-stats.binom.sf(k, s, p)))) / (p * s) - 1.0
    assert expected_lif(n, s, p).mean == pytest.approx(direct, rel=1e-10)


def test_fixed_count_fft_length_leaves_no_aliasing() -> None:
    """Doubling every FFT length of the exact fixed-count route changes nothing."""
    n, s, b = 2000, 50, 30_000
    plan = lif_mod._fixed_count_plan(n, s, b)
    assert np.any(plan.lengths < n * plan.ks + 1)  # the bounded-length path is exercised
    doubled = lif_mod._FixedCountPlan(
        **{**plan.__dict__, "lengths": np.array([2 * x + 1 for x in plan.lengths])}
    )
    np.testing.assert_allclose(
        lif_mod._fixed_count_cdf(plan), lif_mod._fixed_count_cdf(doubled), rtol=1e-9, atol=1e-13
    )


def test_fixed_count_approaches_binomial_for_large_n_s() -> None:
    fixed = expected_lif(10_000, 100, 0.5, model="fixed-count")
    assert fixed.method == "exact"
    assert fixed.mean == pytest.approx(expected_lif(10_000, 100, 0.5).mean, rel=1e-5)


# --------------------------------------------------------------------------------------------
# Exact against Monte Carlo (200,000 placements each)

MC_TRIALS = 200_000


@pytest.mark.parametrize(("n", "s", "p"), [(16, 32, 0.3), (100, 8, 0.5), (50, 100, 0.05)])
def test_binomial_exact_agrees_with_monte_carlo(n: int, s: int, p: float) -> None:
    exact = expected_lif(n, s, p).mean
    mean, stderr = lif_monte_carlo(n, s, p, model="binomial", trials=MC_TRIALS, seed=7)
    assert stderr > 0.0
    assert abs(mean - exact) < 3 * stderr


@pytest.mark.parametrize(("n", "s", "p"), [(8, 16, 0.3), (100, 8, 0.25), (30, 64, 0.6)])
def test_fixed_count_exact_agrees_with_monte_carlo(n: int, s: int, p: float) -> None:
    exact = expected_lif(n, s, p, model="fixed-count")
    assert exact.method == "exact"
    mean, stderr = lif_monte_carlo(n, s, p, model="fixed-count", trials=MC_TRIALS, seed=11)
    assert abs(mean - exact.mean) < 3 * stderr


def test_monte_carlo_is_deterministic_under_a_seed() -> None:
    a = lif_monte_carlo(64, 16, 0.4, model="binomial", trials=2000, seed=3)
    b = lif_monte_carlo(64, 16, 0.4, model="binomial", trials=2000, seed=3)
    c = lif_monte_carlo(64, 16, 0.4, model="binomial", trials=2000, seed=4)
    assert a == b and a != c
    f1 = lif_monte_carlo(64, 16, 0.4, model="fixed-count", trials=2000, seed=3)
    f2 = lif_monte_carlo(64, 16, 0.4, model="fixed-count", trials=2000, seed=3)
    assert f1 == f2
    g = lif_monte_carlo(
        64, 16, 0.4, model="binomial", trials=2000, seed=np.random.default_rng(3)
    )  # a Generator is taken as the stream itself: the same draws as seed 3
    assert g == a


def test_monte_carlo_chunks_do_not_change_the_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunking bounds memory only: the draws come off the stream in the same order."""
    whole = lif_monte_carlo(40, 8, 0.5, trials=3000, seed=5)
    monkeypatch.setattr(lif_mod, "_MC_CHUNK_VALUES", 40 * 7)  # chunks of 7 trials
    assert lif_monte_carlo(40, 8, 0.5, trials=3000, seed=5) == whole


def test_fixed_count_falls_back_to_monte_carlo_over_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lif_mod, "EXACT_COST_LIMIT", 0.0)
    r = expected_lif(30, 16, 0.5, model="fixed-count", trials=5000, seed=1)
    assert r.method == "monte-carlo" and r.stderr > 0.0
    exact = expected_lif(30, 16, 0.5, model="fixed-count", method="exact")
    assert exact.method == "exact" and exact.stderr == 0.0
    assert abs(r.mean - exact.mean) < 4 * r.stderr
    again = expected_lif(30, 16, 0.5, model="fixed-count", trials=5000, seed=1)
    assert again == r


# --------------------------------------------------------------------------------------------
# Quantiles, edges


@pytest.mark.parametrize("model", ["binomial", "fixed-count"])
@pytest.mark.parametrize(("n", "s", "p"), [(2, 10, 0.5), (300, 40, 0.2), (5000, 200, 0.7)])
def test_quantiles_are_monotone_and_bracket_the_mean(model: str, n: int, s: int, p: float) -> None:
    qs = (0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999)
    r = expected_lif(n, s, p, model=model, quantiles=qs)
    values = [r.quantiles[q] for q in qs]
    assert values == sorted(values)
    assert values[0] <= r.mean <= values[-1]
    _, cdf, mean_busy = max_cdf(n, s, p, model=model)
    for q in qs:  # LIF_q = k_q / mean_busy - 1 with k_q the smallest k where P(M <= k) >= q,
        # floored at 0 (the binomial model's p s can exceed a low quantile of M)
        k_q = int(np.argmax(cdf >= q * (1 - 1e-12)))
        assert r.quantiles[q] == pytest.approx(max(0.0, k_q / mean_busy - 1.0), abs=1e-12)


@pytest.mark.parametrize("model", ["binomial", "fixed-count"])
def test_everything_busy_or_one_node_is_balanced(model: str) -> None:
    assert expected_lif(100, 8, 1.0, model=model).mean == 0.0
    assert expected_lif(100, 8, 1.0, model=model).quantiles[0.99] == 0.0
    assert expected_lif(1, 8, 0.5, model=model).mean == 0.0
    assert expected_lif(1, 8, 0.5, model="fixed-count").quantiles[0.5] == 0.0


def test_result_carries_inputs_and_eq2() -> None:
    r = expected_lif(256, 64, 0.4)
    assert (r.nodes, r.parts_per_node, r.busy, r.model) == (256, 64, 0.4, "binomial")
    assert r.mean_eq2 == lif_eq2(256, 64, 0.4)
    assert set(r.quantiles) == {0.5, 0.9, 0.99}


@pytest.mark.parametrize(
    ("kwargs", "where"),
    [
        ({"nodes": 0}, "--nodes"),
        ({"nodes": 2.5}, "--nodes"),
        ({"parts_per_node": 0}, "--parts-per-node"),
        ({"busy": 0.0}, "--busy"),
        ({"busy": 1.5}, "--busy"),
        ({"busy": float("nan")}, "--busy"),
        ({"model": "poisson"}, "--model"),
        ({"trials": 1}, "--trials"),
        ({"quantiles": (0.5, 1.0)}, "quantiles"),
    ],
)
def test_bad_input_names_the_option(kwargs: dict, where: str) -> None:
    args = {"nodes": 8, "parts_per_node": 4, "busy": 0.5, **kwargs}
    n, s, p = args.pop("nodes"), args.pop("parts_per_node"), args.pop("busy")
    with pytest.raises(InputError, match=f"^{where}:"):
        expected_lif(n, s, p, **args)


def test_bad_seed_and_empty_fixed_count() -> None:
    with pytest.raises(InputError, match=r"^--seed:"):
        lif_monte_carlo(8, 4, 0.5, trials=10, seed=-1)
    with pytest.raises(InputError, match=r"^--seed:"):
        expected_lif(8, 4, 0.5, seed=None)  # refused even though the answer is exact
    with pytest.raises(InputError, match=r"^--busy:.*rounds to 0 busy"):
        expected_lif(2, 3, 0.01, model="fixed-count")


# --------------------------------------------------------------------------------------------
# Where eq. 2 is off


def test_eq2_bias_map_has_both_over_and_under_estimates() -> None:
    bias = eq2_bias_map()
    err = bias.relative_error
    assert err.shape == (5, 5, 4)
    assert np.nanmax(err) > 0.5 and np.nanmin(err) < -0.2
    # Few busy partitions per node on many nodes: eq. 2 promises too little imbalance.
    under = expected_lif(10_000, 16, 0.05)
    assert under.mean_eq2 < 0.8 * under.mean  # exact 6.02, eq. 2 4.68
    # Many busy partitions per node: eq. 2 is on the safe side.
    over = expected_lif(1024, 256, 0.5)
    assert over.mean_eq2 > 1.1 * over.mean
    assert "| 10000 |" in bias.to_markdown()


def test_eq2_overestimates_two_nodes_by_the_gaussian_factor() -> None:
    """n = 2: E[max] - mean = E|X1 - X2| / 2 -> sigma / sqrt(pi); eq. 2 has sqrt(2 ln 2) sigma."""
    r = expected_lif(2, 4096, 0.5)
    assert r.mean_eq2 / r.mean == pytest.approx(math.sqrt(2 * math.log(2) * math.pi), rel=0.01)


def test_fixed_count_bias_map_small_grid() -> None:
    bias = eq2_bias_map((2, 16), (4, 16), (0.25, 0.5), model="fixed-count")
    assert np.all(np.isfinite(bias.exact))
    binomial = eq2_bias_map((2, 16), (4, 16), (0.25, 0.5))
    np.testing.assert_allclose(bias.eq2, binomial.eq2)
    # Same ballpark as the binomial model, not the same numbers (exact B, exact mean).
    np.testing.assert_allclose(bias.exact, binomial.exact, rtol=0.25)


def test_exact_lif_vector_matches_scalar() -> None:
    s = np.array([1, 7, 64, 500])
    vec = exact_lif(300, s, 0.3)
    np.testing.assert_allclose(vec, [expected_lif(300, int(x), 0.3).mean for x in s], rtol=1e-14)
    with pytest.raises(InputError, match=r"^--parts-per-node:"):
        exact_lif(300, np.array([0, 4]), 0.3)
