"""Birdshot's random placement: Canary's shuffled slot list, uniform over partitions and seeds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from grapeshot.place.birdshot import place_birdshot
from grapeshot.place.quota import quotas
from tests.place.test_conformance import assert_counts_match_quotas


@pytest.mark.parametrize(
    ("parts_shape", "cores"),
    [((16, 16), [4] * 8), ((13, 17), [1, 2, 3]), ((5, 6, 7), [8] * 9), ((2, 2), [1] * 7)],
)
@pytest.mark.parametrize("seed", [0, 1, 2**40])
def test_is_one_permutation_of_the_quota_slot_list(parts_shape, cores, seed) -> None:
    # The construction, bit for bit: node k repeated quota[k] times, in node order, shuffled by
    # a single rng.permutation of the seed's stream.
    q = quotas(math.prod(parts_shape), cores)
    slots = np.repeat(np.arange(len(cores), dtype=np.int32), q)
    expected = np.random.default_rng(seed).permutation(slots)
    got = place_birdshot(parts_shape, np.array(cores), seed=seed)
    assert got.dtype == np.int32
    assert got.tobytes() == expected.tobytes()


def test_a_shared_generator_advances_between_placements() -> None:
    rng = np.random.default_rng(9)
    first = place_birdshot((8, 8), np.full(4, 2), seed=rng)
    second = place_birdshot((8, 8), np.full(4, 2), seed=rng)
    assert not np.array_equal(first, second)
    replay = np.random.default_rng(9)
    np.testing.assert_array_equal(first, place_birdshot((8, 8), np.full(4, 2), seed=replay))
    np.testing.assert_array_equal(second, place_birdshot((8, 8), np.full(4, 2), seed=replay))


def test_different_seeds_give_different_placements() -> None:
    placements = {place_birdshot((10, 10), np.full(5, 4), seed=s).tobytes() for s in range(200)}
    assert len(placements) == 200


#: Seeds of the statistical tests: fixed, so each test always sees the same draws, and the
#: bounds below are far enough out (p < 1e-6) that no stream change can plausibly cross them.
N_SEEDS = 4000
P_FLOOR = 1e-6


def placements_over_seeds(parts_shape: tuple[int, ...], cores) -> np.ndarray:
    """``(N_SEEDS, P)``: the placement made with each seed ``0 .. N_SEEDS - 1``."""
    return np.stack([place_birdshot(parts_shape, cores, seed=s) for s in range(N_SEEDS)])


@pytest.mark.parametrize("cores", [[1, 1, 1, 1], [1, 2, 1, 1], [3, 1, 4]])
def test_each_partition_lands_on_each_node_in_proportion_to_its_quota(cores) -> None:
    parts_shape = (4, 5)
    n_parts = math.prod(parts_shape)
    q = quotas(n_parts, cores)
    runs = placements_over_seeds(parts_shape, np.array(cores))
    for run in runs[:50]:
        assert_counts_match_quotas(run, cores)
    # observed[p, k]: how many seeds put partition p on node k; uniform shuffling gives
    # N_SEEDS * quota[k] / P in every cell (1/n per node on equal nodes).
    observed = np.stack([np.bincount(runs[:, p], minlength=len(cores)) for p in range(n_parts)])
    expected = N_SEEDS * np.outer(np.ones(n_parts), q / n_parts)
    # Per seed, the indicator table is one draw without replacement: its standardised
    # covariance is (P/(P-1)) (I - J/P) (x) (I - sqrt(pi) sqrt(pi)^T), so Pearson's statistic
    # over many seeds is P/(P-1) times a chi-square with (P-1)(n-1) degrees of freedom.
    chi2 = float(((observed - expected) ** 2 / expected).sum()) * (n_parts - 1) / n_parts
    dof = (n_parts - 1) * (len(cores) - 1)
    assert stats.chi2.sf(chi2, dof) > P_FLOOR, f"scaled chi2 = {chi2:.1f} on {dof} dof"
    # And no single cell strays beyond 5.3 binomial standard deviations (two-sided 1e-7).
    p_node = q / n_parts
    sd = np.sqrt(N_SEEDS * p_node * (1 - p_node))
    assert np.all(np.abs(observed - expected) <= 5.3 * sd)


def test_neighbouring_partitions_share_a_node_as_often_as_any_pair() -> None:
    # A random permutation has no spatial structure: partitions 0 and 1 (grid neighbours) end
    # up on the same node with probability sum q(q-1) / (P(P-1)), as any two partitions do.
    cores = np.array([1, 2, 1, 1])
    parts_shape = (4, 5)
    n_parts = math.prod(parts_shape)
    q = quotas(n_parts, cores)
    runs = placements_over_seeds(parts_shape, cores)
    p_same = float((q * (q - 1)).sum() / (n_parts * (n_parts - 1)))
    for a, b in [(0, 1), (0, 5), (7, 19)]:
        same = int(np.sum(runs[:, a] == runs[:, b]))
        assert stats.binomtest(same, N_SEEDS, p_same).pvalue > P_FLOOR
