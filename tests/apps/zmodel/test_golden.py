"""Beatnik's own 1-rank regression states, reproduced on the owned nodes within 1e-12."""

from __future__ import annotations

import numpy as np
import pytest

from grapeshot.apps.zmodel.model import run_serial
from grapeshot.apps.zmodel.params import ZModelParams
from grapeshot.apps.zmodel.views import read_view


@pytest.mark.parametrize(
    ("order", "subdir", "boundary"),
    [
        ("low", "low_order", "periodic"),
        ("low", "low_order", "free"),
        ("high", "high_order_exact", "free"),
        ("high", "high_order_exact", "periodic"),
    ],
)
def test_beatnik_regression_state(views_dir, order, subdir, boundary):
    params = ZModelParams(mesh=64, order=order, boundary=boundary, steps=5, beatnik_compat=True)
    z, w = run_serial(params)
    n = params.nodes
    tag = boundary[0]
    for name, ours in (("z", z), ("w", w)):
        ref = read_view(views_dir / subdir / f"{name}_64_{tag}_r0.1.view")
        assert ref.shape == (68, 68, 3 if name == "z" else 2)
        mine = np.moveaxis(ours, 0, -1)[2 : 2 + n, 2 : 2 + n]
        diff = np.abs(mine - ref[2 : 2 + n, 2 : 2 + n]).max()
        assert diff < 1e-12, (name, diff)


def test_without_compat_the_periodic_state_differs(views_dir):
    """Beatnik's quirks Q1-Q2 matter: the corrected periodic spacing gives another state."""
    params = ZModelParams(mesh=64, order="low", boundary="periodic", steps=5)
    z, _ = run_serial(params)
    ref = read_view(views_dir / "low_order" / "z_64_p_r0.1.view")
    n = params.nodes
    assert (
        np.abs(np.moveaxis(z, 0, -1)[2 : 2 + n, 2 : 2 + n] - ref[2 : 2 + n, 2 : 2 + n]).max() > 1e-6
    )
