from __future__ import annotations

import numpy as np
import pytest

from grapeshot.model.errors import InputError
from grapeshot.model.synthetic import KINDS, describe_kinds, parse_spec, synthetic_workload


def test_parse_spec_defaults_and_values() -> None:
    kind, params = parse_spec("binary:parts=16x8,busy=0.25,steps=3")
    assert kind == "binary"
    assert params["parts"] == (16, 8) and params["busy"] == 0.25 and params["steps"] == 3
    assert params["mode"] == "redraw"


@pytest.mark.parametrize(
    ("spec", "pattern"),
    [
        ("tornado:parts=4x4", r"unknown kind 'tornado'"),
        ("binary:parts=4x4,colour=red", r"unknown key 'colour'"),
        ("binary:busy=1.5", r"busy: got '1.5'; expected a number in \(0, 1\]"),
        ("binary:busy=0", r"busy: got '0'"),
        ("binary:parts=4", r"parts: got '4'"),
        ("binary:parts=4x-4", r"parts: got '4x-4'"),
        ("uniform:a=100,b=50", r"b: got 50.0 < a"),
        ("dambreak:steps=0", r"steps: got '0'"),
        ("binary:parts=4x4,cells=2x2x2", r"cells: got 3 values"),
        ("binary:steps", r"key=value"),
    ],
)
def test_bad_specs(spec: str, pattern: str) -> None:
    with pytest.raises(InputError, match=pattern):
        synthetic_workload(spec)


def test_describe_kinds_lists_every_key() -> None:
    text = describe_kinds()
    for name, kind in KINDS.items():
        assert name in text
        for key in kind.keys:
            assert key in text


def test_binary_busy_fraction_and_determinism() -> None:
    w = synthetic_workload("binary:parts=20x20,busy=0.3,steps=4,seed=5")
    assert np.all((w.cost > 0).sum(axis=1) == 120)
    again = synthetic_workload("binary:parts=20x20,busy=0.3,steps=4,seed=5")
    other = synthetic_workload("binary:parts=20x20,busy=0.3,steps=4,seed=6")
    assert np.array_equal(w.cost, again.cost)
    assert not np.array_equal(w.cost, other.cost)
    # Redrawn each step.
    assert not np.array_equal(w.cost[0], w.cost[1])


def test_binary_move_band_moves_one_column_per_step() -> None:
    w = synthetic_workload("binary:parts=10x4,busy=0.3,steps=3,mode=move")
    busy = (w.cost > 0).reshape(3, 10, 4)
    cols = [np.flatnonzero(b.all(axis=1)) for b in busy]
    assert all(len(c) == 3 for c in cols)
    assert set((cols[0] + 1) % 10) == set(cols[1])


def test_uniform_range_in_seconds() -> None:
    w = synthetic_workload("uniform:parts=32x32,a=50,b=100,steps=3")
    assert 0.050 <= w.cost.min() and w.cost.max() <= 0.100
    assert w.cost.mean() == pytest.approx(0.075, rel=0.02)


def test_dambreak_conserves_water_and_moves_the_hot_spots() -> None:
    w = synthetic_workload("dambreak:parts=32x32,steps=80,cells=8")
    wet = w.cost.sum(axis=1) / 1e-6
    total = np.prod(w.domain_shape)
    # The column is 0.25 x 0.8 of the domain; clipping the wave at the ceiling loses little.
    assert wet[0] == pytest.approx(0.2 * total, rel=1e-9)
    assert np.all(np.abs(wet / wet[0] - 1) < 0.05)
    first = w.cost[:20].sum(axis=0)
    last = w.cost[-20:].sum(axis=0)
    k = w.n_parts // 10
    top_first = set(np.argsort(first)[-k:])
    top_last = set(np.argsort(last)[-k:])
    assert len(top_first & top_last) / k < 0.5
    # Most of the domain is dry at the start: the load is concentrated.
    assert (w.cost[0] > 0).mean() < 0.3


def test_dambreak_3d_is_uniform_along_depth() -> None:
    w = synthetic_workload("dambreak:parts=8x8x4,steps=5")
    cost = w.cost.reshape(5, 8, 8, 4)
    assert np.allclose(cost, cost[..., :1])
