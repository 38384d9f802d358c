"""The scalar binomial kernels give the same bits interpreted (``grapeshot lif``) and compiled."""

from __future__ import annotations

import numpy as np

from grapeshot.theory import binomial_max, binomial_scalar


def test_interpreted_and_compiled_kernels_agree_bit_for_bit() -> None:
    rng = np.random.default_rng(7)
    cases = [(n, s, p) for n in (2.0, 3.0, 32.0, 1000.0, 1e6) for s in (1, 2, 7, 15, 16, 64, 999)
             for p in (0.01, 0.3, 0.6, 0.97)]  # fmt: skip
    for _ in range(300):
        n, s = float(rng.integers(2, 10**5)), int(rng.integers(1, 5000))
        cases.append((n, s, float(rng.uniform(0.001, 0.999))))
    for n, s, p in cases:
        assert binomial_scalar.max_excess(n, s, p) == binomial_max.max_excess(n, s, p), (n, s, p)
        for q in (0.5, 0.99):
            assert binomial_scalar.max_quantile_k(n, s, p, q) == binomial_max.max_quantile_k(
                n, s, p, q
            ), (n, s, p, q)
        for k in (0, s // 3, s // 2, s):
            assert binomial_scalar.binomial_pmf(k, s, p) == binomial_max.binomial_pmf(k, s, p)
    # The compiled loop over many s is the same kernel again.
    s_values = np.arange(1, 400, dtype=np.int64)
    many = binomial_max.lif_many(32.0, s_values, 0.6)
    one = [binomial_scalar.max_excess(32.0, int(s), 0.6) / (0.6 * s) for s in s_values]
    assert np.array_equal(many, np.array(one))
