"""Physics checks: linear growth rates, conservation of sum w, a flat interface at rest."""

from __future__ import annotations

import math

import numpy as np
import pytest

from grapeshot.apps.zmodel.mesh import node_coords
from grapeshot.apps.zmodel.model import run_serial
from grapeshot.apps.zmodel.params import ZModelParams


def _mode_amplitude(p: ZModelParams, z: np.ndarray) -> float:
    n = p.nodes
    c = np.cos(2 * np.pi * node_coords(p, np.arange(n)) / p.modes)
    mode = np.outer(c, c)
    return float((z[2, 2 : 2 + n, 2 : 2 + n] * mode).sum() / (mode * mode).sum())


@pytest.mark.parametrize(
    ("order", "mesh", "steps", "tol"), [("low", 65, 50, 1e-3), ("high", 33, 25, 5e-3)]
)
def test_single_mode_growth_rate(order, mesh, steps, tol):
    """Spec §10.3: low order sqrt(A g k), high order sqrt(A g k exp(-delta k)), mu = 0."""
    p = ZModelParams(mesh=mesh, order=order, magnitude=1e-8, mu=0.0, steps=steps)
    z, _ = run_serial(p)
    sigma = math.acosh(_mode_amplitude(p, z) / 1e-8) / (steps * p.dt)
    k = math.sqrt(2) * 2 * math.pi / p.modes
    delta = math.sqrt(p.eps_eff) if order == "high" else 0.0
    theory = math.sqrt(p.atwood * p.g * k * math.exp(-delta * k))
    assert abs(sigma / theory - 1) < tol, (sigma, theory)


def test_viscous_growth_rate_low_order():
    """With mu = dx the growth rate is the root of s^2 + mu k^2 s - A g k = 0."""
    p = ZModelParams(mesh=65, order="low", magnitude=1e-8, mu=1.0, steps=50)
    z, _ = run_serial(p)
    k = math.sqrt(2) * 2 * math.pi
    mu = p.mu_eff
    s1 = 0.5 * (-mu * k * k + math.sqrt(mu**2 * k**4 + 4 * p.atwood * p.g * k))
    s2 = 0.5 * (-mu * k * k - math.sqrt(mu**2 * k**4 + 4 * p.atwood * p.g * k))
    t = 50 * p.dt
    # w(0) = 0: a(t) = a0 (s1 e^{s2 t} - s2 e^{s1 t})/(s1 - s2)... with zdot(0)=0
    expect = (s1 * math.exp(s2 * t) - s2 * math.exp(s1 * t)) / (s1 - s2)
    assert abs(_mode_amplitude(p, z) / 1e-8 / expect - 1) < 3e-3


@pytest.mark.parametrize("order", ["low", "medium", "high"])
def test_sum_w_conserved_periodic(order):
    p = ZModelParams(mesh=17, order=order, magnitude=0.05, steps=10)
    _, w = run_serial(p)
    n = p.nodes
    assert np.abs(w[:, 2 : 2 + n, 2 : 2 + n].sum(axis=(1, 2))).max() < 1e-11


@pytest.mark.parametrize("boundary", ["periodic", "free"])
@pytest.mark.parametrize("order", ["low", "high"])
def test_flat_interface_stays_at_rest(order, boundary):
    p = ZModelParams(mesh=17, order=order, boundary=boundary, magnitude=0.0, steps=5)
    z, w = run_serial(p)
    n = p.nodes
    assert np.all(z[2, 2 : 2 + n, 2 : 2 + n] == 0.0)
    assert np.all(w[:, 2 : 2 + n, 2 : 2 + n] == 0.0)


def test_symmetry_of_the_cos_interface_is_kept():
    p = ZModelParams(mesh=33, order="low", boundary="free", steps=5)
    z, _ = run_serial(p)
    h = z[2, 2:-2, 2:-2]
    assert np.abs(h - h.T).max() < 1e-13
    assert np.abs(h - h[::-1, :]).max() < 1e-12
