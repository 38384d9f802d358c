"""Birdshot's random placement: Canary's shuffled slot list, uniform over partitions and seeds.

Both shuffles are held to the same statistics: the default two-level bucket shuffle
(:mod:`grapeshot.place.shuffle`, also with its bucket level forced on at small sizes) and
``shuffle="numpy"``, the ``rng.permutation`` of the placements from before the bucket shuffle.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from grapeshot.model.errors import InputError
from grapeshot.place.birdshot import place_birdshot
from grapeshot.place.quota import quotas
from grapeshot.place.shuffle import bucket_bits_for, chunk_words, shuffled_runs
from tests.place.test_conformance import assert_counts_match_quotas

CASES = [((16, 16), [4] * 8), ((13, 17), [1, 2, 3]), ((5, 6, 7), [8] * 9), ((2, 2), [1] * 7)]


@pytest.mark.parametrize(("parts_shape", "cores"), CASES)
@pytest.mark.parametrize("seed", [0, 1, 2**40])
def test_numpy_shuffle_is_the_placement_from_before_the_bucket_shuffle(
    parts_shape, cores, seed
) -> None:
    # The construction, bit for bit: node k repeated quota[k] times, in node order, shuffled by
    # a single rng.permutation of the seed's stream (grapeshot's placements up to 0.1.0).
    q = quotas(math.prod(parts_shape), cores)
    slots = np.repeat(np.arange(len(cores), dtype=np.int32), q)
    expected = np.random.default_rng(seed).permutation(slots)
    got = place_birdshot(parts_shape, np.array(cores), seed=seed, shuffle="numpy")
    assert got.dtype == np.int32
    assert got.tobytes() == expected.tobytes()


def reference_shuffled_runs(values, runs, rng: np.random.Generator, bucket_bits: int) -> list:
    """The bucket shuffle in plain Python, one word and one swap at a time."""
    items = [int(v) for v, r in zip(values, runs, strict=True) for _ in range(int(r))]
    n = len(items)
    chunk = chunk_words(n)
    words: list[int] = []

    def refill() -> None:
        words[:] = [int(w) for w in rng.integers(0, 1 << 64, size=chunk, dtype=np.uint64)]

    refill()
    if bucket_bits == 0:
        buckets = [items]
    else:
        per_word = 64 // bucket_bits
        fields = []
        while len(fields) < n:
            for w in words:
                fields += [
                    (w >> (bucket_bits * t)) & ((1 << bucket_bits) - 1) for t in range(per_word)
                ]
            if len(fields) < n:
                refill()
        buckets = [[] for _ in range(1 << bucket_bits)]
        for item, b in zip(items, fields[:n], strict=False):
            buckets[b].append(item)
        refill()
    halves = [h for w in words for h in (w & 0xFFFFFFFF, w >> 32)]
    out = []
    for bucket in buckets:
        for i in range(len(bucket) - 1, 0, -1):
            r = i + 1
            while True:  # Lemire: high word of x * r, rejecting low words below 2**32 mod r
                if not halves:
                    refill()
                    halves = [h for w in words for h in (w & 0xFFFFFFFF, w >> 32)]
                x = halves.pop(0)
                if (x * r) & 0xFFFFFFFF >= (1 << 32) % r:
                    break
            j = (x * r) >> 32
            bucket[i], bucket[j] = bucket[j], bucket[i]
        out += bucket
    return out


@pytest.mark.parametrize(("parts_shape", "cores"), CASES)
@pytest.mark.parametrize("seed", [0, 1, 2**40])
def test_bucket_shuffle_is_the_documented_construction(parts_shape, cores, seed) -> None:
    q = quotas(math.prod(parts_shape), cores)
    nodes = np.arange(len(cores), dtype=np.int32)
    got = place_birdshot(parts_shape, np.array(cores), seed=seed, shuffle="buckets")
    assert got.dtype == np.int32
    assert got.tolist() == reference_shuffled_runs(nodes, q, np.random.default_rng(seed), 0)
    for bits in (1, 3, 7):
        fast = shuffled_runs(nodes, q, np.random.default_rng(seed), bucket_bits=bits)
        slow = reference_shuffled_runs(nodes, q, np.random.default_rng(seed), bits)
        assert fast.tolist() == slow


def test_bucket_count_depends_on_the_size_alone() -> None:
    assert bucket_bits_for(1) == 0
    assert bucket_bits_for(1 << 17) == 0
    assert bucket_bits_for((1 << 17) + 1) == 1
    assert bucket_bits_for(100_000_000) == 10
    assert bucket_bits_for(1 << 40) == 12


def test_a_large_placement_uses_both_levels_and_keeps_the_quotas() -> None:
    # 360,000 partitions: 4 buckets, several chunks of words.
    cores = np.array([1, 2, 3, 4] * 25)
    got = place_birdshot((600, 600), cores, seed=5, shuffle="buckets")
    assert bucket_bits_for(got.size) == 2
    assert_counts_match_quotas(got, cores)
    np.testing.assert_array_equal(got, place_birdshot((600, 600), cores, seed=5, shuffle="buckets"))
    assert not np.array_equal(got, place_birdshot((600, 600), cores, seed=6, shuffle="buckets"))


@pytest.mark.parametrize(
    ("parts_shape", "shuffle"),
    [((600, 600), "numpy"), ((2048, 2048), "numpy"), ((2049, 2048), "buckets")],
)
def test_auto_keeps_the_former_placements_up_to_2_to_the_22_partitions(
    parts_shape, shuffle
) -> None:
    # 2048 x 2048 = 2**22 partitions is the largest "auto" leaves to rng.permutation.
    cores = np.full(1000, 4)
    got = place_birdshot(parts_shape, cores, seed=3)
    np.testing.assert_array_equal(got, place_birdshot(parts_shape, cores, seed=3, shuffle=shuffle))


def test_generators_of_every_kind_give_uniform_words() -> None:
    # random_raw is used where it equals next_uint64; MT19937's raw words are 32-bit, so it
    # must go through integers(): the high halves would otherwise all be zero.
    for bit_generator in (np.random.MT19937, np.random.PCG64, np.random.Philox):
        got = shuffled_runs(
            np.arange(4, dtype=np.int32),
            np.full(4, 5000),
            np.random.Generator(bit_generator(3)),
            bucket_bits=2,
        )
        assert np.array_equal(np.bincount(got), [5000] * 4)
        # each quarter of the list holds each node about a quarter of the time
        for quarter in got.reshape(4, -1):
            assert np.all(np.abs(np.bincount(quarter, minlength=4) - 1250) < 200)


def test_an_unknown_shuffle_is_refused() -> None:
    with pytest.raises(InputError, match="shuffle"):
        place_birdshot((4, 4), [1, 1], seed=0, shuffle="fisher-yates")


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


#: The shuffles under test: the two of place_birdshot, and the bucket shuffle with its bucket
#: level forced on (at these sizes it has a single bucket; "auto" is "numpy" here).
HOW = ["numpy", "buckets", "buckets-forced"]


def placements_over_seeds(parts_shape: tuple[int, ...], cores, how: str) -> np.ndarray:
    """``(N_SEEDS, P)``: the placement made with each seed ``0 .. N_SEEDS - 1``."""
    if how == "buckets-forced":
        q = quotas(math.prod(parts_shape), cores)
        nodes = np.arange(len(cores), dtype=np.int32)
        return np.stack(
            [
                shuffled_runs(nodes, q, np.random.default_rng(s), bucket_bits=2)
                for s in range(N_SEEDS)
            ]
        )
    return np.stack(
        [place_birdshot(parts_shape, cores, seed=s, shuffle=how) for s in range(N_SEEDS)]
    )


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("cores", [[1, 1, 1, 1], [1, 2, 1, 1], [3, 1, 4]])
def test_each_partition_lands_on_each_node_in_proportion_to_its_quota(cores, how) -> None:
    parts_shape = (4, 5)
    n_parts = math.prod(parts_shape)
    q = quotas(n_parts, cores)
    runs = placements_over_seeds(parts_shape, np.array(cores), how)
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


@pytest.mark.parametrize("how", HOW)
def test_neighbouring_partitions_share_a_node_as_often_as_any_pair(how) -> None:
    # A random permutation has no spatial structure: partitions 0 and 1 (grid neighbours) end
    # up on the same node with probability sum q(q-1) / (P(P-1)), as any two partitions do.
    cores = np.array([1, 2, 1, 1])
    parts_shape = (4, 5)
    n_parts = math.prod(parts_shape)
    q = quotas(n_parts, cores)
    runs = placements_over_seeds(parts_shape, cores, how)
    p_same = float((q * (q - 1)).sum() / (n_parts * (n_parts - 1)))
    for a, b in [(0, 1), (0, 5), (7, 19)]:
        same = int(np.sum(runs[:, a] == runs[:, b]))
        assert stats.binomtest(same, N_SEEDS, p_same).pvalue > P_FLOOR


@pytest.mark.parametrize("bucket_bits", [0, 1, 3])
def test_every_permutation_is_equally_likely(bucket_bits) -> None:
    # Five distinct items: each of the 120 orders should come up N / 120 times over N seeds.
    # Pearson's statistic on the 120 counts is then chi-square with 119 degrees of freedom.
    n_seeds = 6_000
    items = np.arange(5, dtype=np.int32)
    seen: dict[bytes, int] = {}
    for s in range(n_seeds):
        order = shuffled_runs(items, np.ones(5), np.random.default_rng(s), bucket_bits=bucket_bits)
        seen[order.tobytes()] = seen.get(order.tobytes(), 0) + 1
    assert len(seen) == 120
    counts = np.array(list(seen.values()))
    chi2 = float(((counts - n_seeds / 120) ** 2).sum() / (n_seeds / 120))
    assert stats.chi2.sf(chi2, 119) > P_FLOOR, f"chi2 = {chi2:.1f} on 119 dof"
