"""The partitions-per-node advisor returns the smallest s, checked by brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from grapeshot.model.errors import InputError
from grapeshot.theory import advisor as advisor_mod
from grapeshot.theory.advisor import Advice, advise, parts_per_node_eq2
from grapeshot.theory.lif import expected_lif


def reference_lif(n: int, s: int, p: float) -> float:
    """Binomial-model E[LIF] straight from scipy: sum_k (1 - F(k)^n) / (p s) - 1."""
    k = np.arange(s)
    with np.errstate(divide="ignore"):
        return float(np.sum(-np.expm1(n * np.log1p(-stats.binom.sf(k, s, p)))) / (p * s) - 1.0)


def assert_is_smallest(values: dict[int, float], answer: int, target: float) -> None:
    """``answer`` meets the target and every smaller key does not."""
    assert values[answer] <= target
    assert all(values[s] > target for s in range(1, answer))


@pytest.mark.parametrize(
    ("n", "p", "target"), [(16, 0.3, 0.3), (128, 0.6, 0.21), (1000, 0.05, 1.0), (2, 0.5, 0.1)]
)
def test_binomial_answer_is_the_smallest_s(n: int, p: float, target: float) -> None:
    advice = advise(n, p, target)
    values = {s: reference_lif(n, s, p) for s in range(1, advice.parts_per_node + 1)}
    assert_is_smallest(values, advice.parts_per_node, target)
    assert advice.mean_exact == pytest.approx(values[advice.parts_per_node], rel=1e-9)


def test_fixed_count_answer_is_the_smallest_s_where_lif_is_not_monotone() -> None:
    """Fixed-count E[LIF] wobbles with s (n = 2, p = 1/2: s = 3 is worse than s = 2)."""
    n, p = 2, 0.5
    values = {s: expected_lif(n, s, p, model="fixed-count").mean for s in range(1, 41)}
    assert values[3] > values[2]  # not monotone: a bisection could skip the answer
    for target in (values[2], values[6] * 1.001, values[11], 0.12):
        advice = advise(n, p, target, model="fixed-count")
        assert_is_smallest(values, advice.parts_per_node, target)


def test_gallop_overshoot_is_scanned_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gallop lands on a power of two; the scan must find the smaller answer below it."""
    monkeypatch.setattr(advisor_mod, "_BLOCK", 5)  # several scan blocks
    n, p = 50, 0.4
    target = reference_lif(n, 37, p) * (1 + 1e-9)  # 37: between the gallop's 32 and 64
    advice = advise(n, p, target)
    assert advice.parts_per_node == 37


def test_cores_per_node_gives_the_smallest_multiple() -> None:
    n, p, target, cores = 64, 0.3, 0.25, 12
    advice = advise(n, p, target, cores_per_node=cores)
    k = advice.parts_per_core
    assert k is not None and advice.mean_exact_per_core is not None
    assert reference_lif(n, k * cores, p) <= target
    assert all(reference_lif(n, j * cores, p) > target for j in range(1, k))
    assert k * cores >= advice.parts_per_node
    assert advise(n, p, target).parts_per_core is None


def test_eq2_answer_is_the_formula() -> None:
    advice = advise(10_000, 0.5, 0.05)
    assert advice.parts_per_node_eq2 == math.ceil(2 * math.log(10_000) * 1.0 / 0.05**2)
    assert parts_per_node_eq2(10_000, 0.5, 0.05) == advice.parts_per_node_eq2
    # Here eq. 2 is on the safe side: it asks for more partitions than needed.
    assert advice.parts_per_node < advice.parts_per_node_eq2
    # With few busy partitions per node on many nodes it asks for too few.
    few = advise(10_000, 0.05, 3.0)
    assert few.parts_per_node > few.parts_per_node_eq2


def test_large_case_n_10000_target_0_05() -> None:
    advice = advise(10_000, 0.5, 0.05, cores_per_node=36)
    assert advice.parts_per_node == 5932
    assert advice.parts_per_core == 165
    assert advice.mean_exact == pytest.approx(reference_lif(10_000, 5932, 0.5), rel=1e-9)
    assert reference_lif(10_000, 5931, 0.5) > 0.05


def test_balanced_edge_cases() -> None:
    assert advise(1, 0.3, 0.05) == Advice(1, None, 0.0, 1)
    assert advise(100, 1.0, 0.0, cores_per_node=8) == Advice(1, 1, 0.0, 1, 0.0)
    assert advise(100, 0.5, 100.0).parts_per_node == 1  # any s will do


@pytest.mark.parametrize(
    ("args", "kwargs", "where"),
    [
        ((0, 0.5, 0.1), {}, "--nodes"),
        ((8, 0.0, 0.1), {}, "--busy"),
        ((8, 1.2, 0.1), {}, "--busy"),
        ((8, 0.5, 0.0), {}, "--target-lif"),
        ((8, 0.5, -0.1), {}, "--target-lif"),
        ((8, 0.5, float("nan")), {}, "--target-lif"),
        ((8, 0.5, 0.1), {"cores_per_node": 0}, "--cores-per-node"),
        ((8, 0.5, 0.1), {"model": "exact"}, "--model"),
        ((10_000, 0.5, 1e-6), {}, "--target-lif"),  # would need ~1.8e12 partitions per node
    ],
)
def test_bad_input_names_the_option(args: tuple, kwargs: dict, where: str) -> None:
    with pytest.raises(InputError, match=f"^{where}:"):
        advise(*args, **kwargs)
