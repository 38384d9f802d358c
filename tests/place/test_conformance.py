"""The conformance suite every static placement strategy passes (STYLE 11).

Every test here is parametrised over the registry, so a strategy added to
``STATIC_STRATEGIES`` is held to the same contract without touching this file: every partition
on a valid node, per-node counts equal to the shared quotas (proportional to cores within one)
for equal and heterogeneous cores, node counts that do and do not divide the grid, more nodes
than partitions, one node, 2D and 3D; bit-for-bit determinism under a seed; and the same
InputError for the same bad input. The quota rule itself is checked against an exact
fraction-arithmetic reference.
"""

from __future__ import annotations

import inspect
import math
from fractions import Fraction

import numpy as np
import pytest

from grapeshot.model.errors import InputError
from grapeshot.place.quota import quotas
from grapeshot.place.static import STATIC_STRATEGIES, get_static_strategy

#: Strategies whose placement depends on the seed; every other one must ignore it.
RANDOMISED = {"birdshot"}

STRATEGIES = sorted(STATIC_STRATEGIES)

#: (parts_shape, cores) covering the cases every strategy must handle.
CASES = {
    "2d-equal-divides": ((16, 16), [4] * 8),
    "2d-equal-not-dividing": ((13, 17), [4] * 7),
    "2d-heterogeneous": ((20, 30), [1, 2, 4, 8, 3]),
    "2d-thin": ((1, 50), [1, 2, 3]),
    "3d-equal-divides": ((8, 8, 8), [2] * 16),
    "3d-equal-not-dividing": ((5, 7, 9), [8] * 11),
    "3d-heterogeneous": ((6, 10, 7), [1, 3, 2, 5, 4, 1, 7]),
    "2d-more-nodes-than-parts": ((3, 4), [2] * 20),
    "3d-more-nodes-than-parts-heterogeneous": ((2, 2, 2), [1, 2, 3] * 5),
    "2d-one-node": ((9, 11), [16]),
    "3d-one-node": ((3, 4, 5), [1]),
    "one-partition": ((1, 1), [4, 4, 4]),
}


# --- named invariant checkers (imported by the per-strategy test modules) ---------------------


def assert_places_every_partition(node_of: np.ndarray, parts_shape: tuple, n_nodes: int) -> None:
    """``node_of`` is int32 of shape ``(prod(parts_shape),)`` with every entry a valid node."""
    assert isinstance(node_of, np.ndarray)
    assert node_of.dtype == np.int32
    assert node_of.shape == (math.prod(parts_shape),)
    assert node_of.min() >= 0
    assert node_of.max() < n_nodes


def assert_counts_match_quotas(node_of: np.ndarray, cores) -> None:
    """Per-node counts are the shared quotas, hence within one of ``P * cores[i] / C``."""
    cores = np.asarray(cores)
    counts = np.bincount(node_of, minlength=cores.size)
    np.testing.assert_array_equal(counts, quotas(node_of.size, cores))
    exact = node_of.size * cores / cores.sum()
    assert np.all(np.abs(counts - exact) < 1.0)


# --- every strategy, every case ----------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("name", STRATEGIES)
def test_every_partition_on_a_valid_node_with_its_quota(name: str, case: str) -> None:
    parts_shape, cores = CASES[case]
    node_of = STATIC_STRATEGIES[name](parts_shape, np.array(cores), seed=11)
    assert_places_every_partition(node_of, parts_shape, len(cores))
    assert_counts_match_quotas(node_of, cores)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("name", STRATEGIES)
def test_same_seed_same_placement_bit_for_bit(name: str, case: str) -> None:
    parts_shape, cores = CASES[case]
    fn = STATIC_STRATEGIES[name]
    first = fn(parts_shape, np.array(cores), seed=2024)
    again = fn(parts_shape, np.array(cores), seed=2024)
    # A Generator made from the same integer is the same stream (as_generator's contract).
    from_generator = fn(parts_shape, np.array(cores), seed=np.random.default_rng(2024))
    assert first.tobytes() == again.tobytes()
    assert first.tobytes() == from_generator.tobytes()


@pytest.mark.parametrize("name", STRATEGIES)
def test_seed_changes_only_the_randomised_strategies(name: str) -> None:
    fn = STATIC_STRATEGIES[name]
    placements = [fn((12, 10), np.full(6, 4), seed=s).tobytes() for s in range(5)]
    if name in RANDOMISED:
        assert len(set(placements)) == len(placements)
    else:
        assert len(set(placements)) == 1


def test_randomised_names_are_registered() -> None:
    assert RANDOMISED <= set(STATIC_STRATEGIES)


@pytest.mark.parametrize("name", STRATEGIES)
def test_accepts_lists_tuples_and_numpy_integers(name: str) -> None:
    fn = STATIC_STRATEGIES[name]
    reference = fn((6, 9), np.array([2, 3, 1]), seed=5)
    variants = [
        ([6, 9], [2, 3, 1]),
        (np.array([6, 9]), (2, 3, 1)),
        ((np.int64(6), np.int32(9)), np.array([2, 3, 1], dtype=np.int32)),
        ((6, 9), np.array([2, 3, 1], dtype=np.uint8)),
    ]
    for parts_shape, cores in variants:
        np.testing.assert_array_equal(fn(parts_shape, cores, seed=5), reference)


@pytest.mark.parametrize("name", STRATEGIES)
def test_does_not_modify_the_callers_cores(name: str) -> None:
    cores = np.array([3, 1, 2, 2])
    STATIC_STRATEGIES[name]((7, 5), cores, seed=1)
    np.testing.assert_array_equal(cores, [3, 1, 2, 2])


# --- invalid input -----------------------------------------------------------------------------

#: id -> (parts_shape, cores, seed, the field the error must name).
BAD_INPUTS = {
    "zero-nodes": ((4, 4), [], 0, "cores"),
    "zero-cores": ((4, 4), [4, 0, 4], 0, "cores"),
    "negative-cores": ((4, 4), [-2], 0, "cores"),
    "too-many-cores": ((4, 4), np.array([4, 2**63], dtype=np.uint64), 0, "cores"),
    "float-cores": ((4, 4), [4.0, 4.0], 0, "cores"),
    "bool-cores": ((4, 4), [True, True], 0, "cores"),
    "2d-cores": ((4, 4), [[4, 4]], 0, "cores"),
    "scalar-cores": ((4, 4), 4, 0, "cores"),
    "empty-grid-2d": ((0, 4), [4], 0, "parts_shape"),
    "empty-grid-3d": ((4, 0, 4), [4], 0, "parts_shape"),
    "negative-extent": ((4, -4), [4], 0, "parts_shape"),
    "no-axes": ((), [4], 0, "parts_shape"),
    "one-axis": ((16,), [4], 0, "parts_shape"),
    "four-axes": ((2, 2, 2, 2), [4], 0, "parts_shape"),
    "float-extent": ((4.5, 4), [4], 0, "parts_shape"),
    "integral-float-extent": ((4.0, 4), [4], 0, "parts_shape"),
    "string-extent": (("4", 4), [4], 0, "parts_shape"),
    "bool-extent": ((True, 4), [4], 0, "parts_shape"),
    "bare-int-shape": (16, [4], 0, "parts_shape"),
    "string-shape": ("44", [4], 0, "parts_shape"),
    "none-shape": (None, [4], 0, "parts_shape"),
    "2d-array-shape": (np.array([[4, 4]]), [4], 0, "parts_shape"),
    "none-seed": ((4, 4), [4], None, "seed"),
    "negative-seed": ((4, 4), [4], -1, "seed"),
    "float-seed": ((4, 4), [4], 1.5, "seed"),
    "string-seed": ((4, 4), [4], "1", "seed"),
}


@pytest.mark.parametrize("bad", sorted(BAD_INPUTS))
@pytest.mark.parametrize("name", STRATEGIES)
def test_invalid_input_raises_input_error_naming_the_field(name: str, bad: str) -> None:
    parts_shape, cores, seed, where = BAD_INPUTS[bad]
    with pytest.raises(InputError) as info:
        STATIC_STRATEGIES[name](parts_shape, cores, seed=seed)
    assert info.value.where == where
    assert str(info.value).startswith(f"{where}: ")


# --- the registry ------------------------------------------------------------------------------


def test_registry_holds_the_four_static_strategies() -> None:
    assert set(STATIC_STRATEGIES) == {"geometric", "cyclic", "sfc", "birdshot"}
    for name, fn in STATIC_STRATEGIES.items():
        assert get_static_strategy(name) is fn


@pytest.mark.parametrize("name", STRATEGIES)
def test_every_strategy_has_the_common_signature(name: str) -> None:
    params = inspect.signature(STATIC_STRATEGIES[name]).parameters
    assert list(params)[:3] == ["parts_shape", "cores", "seed"]
    assert params["seed"].kind is inspect.Parameter.KEYWORD_ONLY
    assert params["seed"].default is inspect.Parameter.empty
    # Options beyond the common three (birdshot's shuffle) are keyword-only with a default,
    # so the registry calls every strategy the same way.
    for extra in list(params)[3:]:
        assert params[extra].kind is inspect.Parameter.KEYWORD_ONLY
        assert params[extra].default is not inspect.Parameter.empty


@pytest.mark.parametrize("bad_name", ["random", "Birdshot", "", None, ["sfc"]])
def test_unknown_strategy_raises_input_error_listing_the_valid_ones(bad_name) -> None:
    with pytest.raises(InputError) as info:
        get_static_strategy(bad_name)
    assert info.value.where == "--strategy"
    assert repr(bad_name) in info.value.problem
    for name in STATIC_STRATEGIES:
        assert name in info.value.expected


# --- the quota rule ----------------------------------------------------------------------------


def reference_quotas(n_items: int, cores: list[int]) -> list[int]:
    """Largest remainder in exact fractions: floor shares, extras by remainder, ties low id."""
    total = sum(cores)
    shares = [Fraction(n_items * c, total) for c in cores]
    base = [math.floor(s) for s in shares]
    by_remainder = sorted(range(len(cores)), key=lambda i: (-(shares[i] - base[i]), i))
    for i in by_remainder[: n_items - sum(base)]:
        base[i] += 1
    return base


def test_quotas_match_the_exact_reference_on_random_machines() -> None:
    rng = np.random.default_rng(0)
    for _ in range(500):
        n = int(rng.integers(1, 40))
        top = int(rng.choice([2, 5, 65, 10_000]))
        cores = rng.integers(1, top, size=n)
        n_items = int(rng.integers(1, 3 * n * 10 + 2))
        got = quotas(n_items, cores)
        assert got.dtype == np.int64
        assert got.tolist() == reference_quotas(n_items, cores.tolist())


@pytest.mark.parametrize(
    ("n_items", "cores", "expected"),
    [
        (5, [1, 1, 1], [2, 2, 1]),  # equal remainders: extras to the lower ids
        (1, [1, 1, 1, 1], [1, 0, 0, 0]),  # more nodes than items
        (3, [7, 7, 7, 7, 7], [1, 1, 1, 0, 0]),
        (7, [1, 2, 4], [1, 2, 4]),  # proportional exactly
        (10, [1, 2, 4], [1, 3, 6]),  # 1.43, 2.86, 5.71: one extra, to the largest remainder
        (16, [3], [16]),
    ],
)
def test_quotas_known_values(n_items: int, cores: list[int], expected: list[int]) -> None:
    assert quotas(n_items, cores).tolist() == expected


def test_quotas_stay_exact_beyond_int64_products() -> None:
    # n_items * cores[i] overflows int64 here; the rule must still be exact.
    cores = [2**30, 3, 2**29 + 1]
    n_items = 2**40 + 7
    assert quotas(n_items, cores).tolist() == reference_quotas(n_items, cores)


@pytest.mark.parametrize("n_items", [0, -3, 2.0, True, None, "4"])
def test_quotas_reject_a_bad_item_count(n_items) -> None:
    with pytest.raises(InputError) as info:
        quotas(n_items, [4, 4])
    assert info.value.where == "n_items"
