"""A static strategy's options after its name: ``--strategy birdshot:shuffle=numpy``.

The option reaches the strategy (the same placement as calling it with the keyword), every
command that takes ``--strategy`` accepts it, and every malformed spec is one
:class:`InputError` naming the option, fuzzed.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grapeshot.apps.zmodel.cutoff import place_parts
from grapeshot.model.errors import InputError
from grapeshot.place.birdshot import place_birdshot
from grapeshot.place.static import get_static_strategy, parse_strategy
from grapeshot.sim.sweep import check_strategy
from tests.cli.helpers import run_cli

CORES = np.array([4, 8, 4, 2, 6])


@pytest.mark.parametrize("shuffle", ["auto", "numpy", "buckets"])
def test_the_option_reaches_birdshot(shuffle: str) -> None:
    got = get_static_strategy(f"birdshot:shuffle={shuffle}")((40, 30), CORES, seed=7)
    want = place_birdshot((40, 30), CORES, seed=7, shuffle=shuffle)
    assert np.array_equal(got, want)


def test_the_two_shuffles_are_told_apart_by_name() -> None:
    # Below AUTO_NUMPY_MAX the default is the numpy shuffle; the bucket one differs.
    plain = get_static_strategy("birdshot")((64, 64), CORES, seed=1)
    numpy_ = get_static_strategy("birdshot:shuffle=numpy")((64, 64), CORES, seed=1)
    buckets = get_static_strategy("birdshot: shuffle = buckets")((64, 64), CORES, seed=1)
    assert np.array_equal(plain, numpy_)
    assert not np.array_equal(numpy_, buckets)
    assert np.array_equal(np.bincount(numpy_), np.bincount(buckets))  # the same quotas


def test_a_name_without_options_is_the_registered_function() -> None:
    assert get_static_strategy("geometric") is get_static_strategy("geometric")
    assert parse_strategy("sfc") == ("sfc", {})


@pytest.mark.parametrize(
    ("spec", "where", "says"),
    [
        ("birdshot:shuffle=bogus", "--strategy birdshot: shuffle", "one of: auto, numpy, buckets"),
        ("geometric:shuffle=numpy", "--strategy geometric", "no options"),
        ("birdshot:seed=3", "--strategy birdshot", "one of: shuffle"),
        ("birdshot:shuffle", "--strategy birdshot", "key=value"),
        ("birdshot:", "--strategy birdshot:", "birdshot:key=value"),
        ("bird:shuffle=numpy", "--strategy", "one of: geometric"),
    ],
)
def test_a_bad_spec_names_what_is_wrong(spec: str, where: str, says: str) -> None:
    with pytest.raises(InputError) as err:
        get_static_strategy(spec)
    assert err.value.where == where
    assert says in str(err.value)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_any_text_is_a_strategy_or_one_input_error(spec: str) -> None:
    try:
        fn = get_static_strategy(spec)
    except InputError as err:
        assert str(err).startswith("--strategy")
    else:
        assert callable(fn)


def test_check_strategy_and_the_zmodel_take_options() -> None:
    assert check_strategy("birdshot:shuffle=buckets") == "birdshot:shuffle=buckets"
    assert check_strategy("greedy") == "greedy"
    with pytest.raises(InputError, match="unknown strategy 'nope:x=1'"):
        check_strategy("nope:x=1")
    with pytest.raises(InputError, match="shuffle: got 'x'"):
        check_strategy("birdshot:shuffle=x")
    got = place_parts("birdshot:shuffle=buckets", (16, 16), (2, 2), seed=3)
    assert np.array_equal(
        got, place_birdshot((16, 16), np.ones(4, np.int64), seed=3, shuffle="buckets")
    )


def test_place_command_records_the_spec_and_refuses_a_bad_one(capsys) -> None:
    common = ("place", "--synthetic", "dambreak:parts=24x24,steps=2", "--machine", "ec2-c4.8xlarge")
    r = run_cli(capsys, *common, "--nodes", "4", "--strategy", "birdshot:shuffle=buckets", "--json")
    assert r.code == 0, r.err
    assert r.json()["strategy"] == "birdshot:shuffle=buckets"
    r = run_cli(capsys, *common, "--strategy", "birdshot:shuffle=nope")
    assert r.code == 2
    assert (
        r.error == "--strategy birdshot: shuffle: got 'nope'; expected one of: auto, numpy, buckets"
    )


def test_simulate_command_takes_the_spec(capsys) -> None:
    r = run_cli(
        capsys, "simulate", "--synthetic", "dambreak:parts=16x16,steps=2", "--machine",
        "ec2-c4.8xlarge", "--nodes", "2", "--strategy", "birdshot:shuffle=numpy,geometric",
        "--json", "--no-figure",
    )  # fmt: skip
    assert r.code == 0, r.err
    assert "birdshot:shuffle=numpy" in r.out
