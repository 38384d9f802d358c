"""Operators, boundary ghosts, Riesz transform, kernels, views and FFT reshape plans."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grapeshot.apps.zmodel import operators as op
from grapeshot.apps.zmodel.fft import apply_reshape_local, config_knobs, plan_reshape
from grapeshot.apps.zmodel.kernels import br_all_pairs, image_offsets
from grapeshot.apps.zmodel.mesh import block_bounds, dims_create, make_block
from grapeshot.apps.zmodel.params import ZModelParams
from grapeshot.apps.zmodel.views import read_view, to_view_array, write_view
from grapeshot.model.errors import InputError


def _grid(n: int, h: float):
    x = (np.arange(n + 4) - 2) * h
    return np.meshgrid(x, x, indexing="ij")


def test_differences_exact_on_quartics_and_laplacian_on_quadratics():
    h = 0.1
    x, y = _grid(9, h)
    f = (x**4 + 2 * x**3 * y - y**4 + x * y)[None]
    d1 = op.d1(f, h)[0]
    exact = (4 * x**3 + 6 * x**2 * y + y)[2:-2, 2:-2]
    assert np.abs(d1 - exact).max() < 1e-10
    g = (3 * x**2 - 2 * y**2 + x * y + x)[None]
    assert np.abs(op.laplacian(g, h, h) - 2.0).max() < 1e-10


def test_riesz_of_cos_is_sin_and_mean_is_dropped():
    n = 32
    x = np.arange(n) * 2 * np.pi / n
    w = np.zeros((2, n, n))
    w[0] = np.cos(3 * x)[:, None] + 5.0
    assert np.abs(op.riesz_serial(w) - np.sin(3 * x)[:, None]).max() < 1e-12
    k = op.wavenumbers(8)
    assert k[4] == 0 and list(k[:4]) == [0, 1, 2, 3]


def test_free_boundary_extrapolation_exact_for_linear_fields():
    p = ZModelParams(mesh=9, boundary="free")
    blk = make_block(p, 1, 0)
    x, y = _grid(9, 1.0)
    f = (2 * x - 3 * y + 1)[None].copy()
    truth = f.copy()
    f[:, :2, :] = f[:, -2:, :] = f[:, :, :2] = f[:, :, -2:] = np.nan
    op.fill_halo(f, op.serial_exchange(False), blk.edges(), False)
    assert np.allclose(f, truth)


def test_periodic_halo_wraps_and_shifts_positions():
    p = ZModelParams(mesh=9, boundary="periodic")
    blk = make_block(p, 1, 0)
    n = p.nodes
    f = np.zeros((3, n + 4, n + 4))
    f[0, 2:-2, 2:-2] = np.arange(n)[:, None] * p.spacing
    be = op.seam_shift(p.length, blk.edges())
    op.fill_halo(f, op.serial_exchange(True), blk.edges(), True, be)
    assert np.allclose(np.diff(f[0, :, 5]), p.spacing)


def test_block_decomposition_is_beatniks():
    assert dims_create(4) == (2, 2) and dims_create(8) == (4, 2) and dims_create(2) == (2, 1)
    assert block_bounds(63, 2, 0) == (0, 32) and block_bounds(63, 2, 1) == (32, 63)
    p = ZModelParams(mesh=64, boundary="free")
    b3 = make_block(p, 4, 3)
    assert (b3.i0, b3.i1, b3.j0, b3.j1) == (32, 64, 32, 64) and b3.cells_local == (31, 31)
    with pytest.raises(InputError, match="--mesh"):
        make_block(ZModelParams(mesh=6), 16, 15)


def test_br_kernel_matches_a_numpy_reference():
    rng = np.random.default_rng(3)
    pts, s = rng.random((40, 3)), rng.standard_normal((40, 3))
    offs = image_offsets(True, 2.0)
    out = np.zeros((40, 3))
    br_all_pairs(pts, pts, s, offs, 0.01, out)
    ref = np.zeros((40, 3))
    for o in offs:
        d = pts[:, None, :] - pts[None, :, :] - o
        r2 = (d * d).sum(-1) + 0.01
        ref += (np.cross(s[None, :, :], d) / (r2**1.5)[..., None]).sum(1)
    assert np.abs(out - ref).max() < 1e-10


def test_flat_sheet_br_equals_smoothed_low_order_velocity():
    """Spec §2.3: on a flat sheet the BR normal velocity is -1/2 e^{-delta k} (R w)^.

    The periodic sum keeps only the 9 nearest images, which costs about 1.5% on one
    wavelength per box at 32^2 (it halves with the mesh spacing).
    """
    from grapeshot.apps.zmodel.mesh import initial_state
    from grapeshot.apps.zmodel.model import SerialBackend, strength_factor

    p = ZModelParams(mesh=33, order="high", magnitude=0.0)
    be = SerialBackend(p)
    z, _ = initial_state(p, be.block)
    x = z[0, 2:-2, 2:-2]
    k = 2 * np.pi
    # omega = w2 z_1 - w1 z_2 with z_1 = e_x, z_2 = e_y and w = (cos kx, 0)
    omega = np.stack([0 * x, -np.cos(k * x), 0 * x])
    u = be.br(np.ascontiguousarray(z[:, 2:-2, 2:-2]), omega * strength_factor(p, be.block))
    expect = -0.5 * np.exp(-np.sqrt(p.eps_eff) * k) * np.sin(k * x)
    assert np.abs(u[2] - expect).max() < 0.02 * np.abs(expect).max()
    assert np.abs(u[:2]).max() < 1e-12


def test_view_round_trip_and_refusals(tmp_path):
    a = np.arange(2 * 3 * 4, dtype=float).reshape(2, 3, 4)
    write_view(tmp_path / "a.view", a)
    assert np.array_equal(read_view(tmp_path / "a.view"), a)
    (tmp_path / "bad.view").write_bytes(b"\x01" * 30)
    with pytest.raises(InputError, match=r"bad\.view"):
        read_view(tmp_path / "bad.view")
    padded = np.zeros((3, 67, 67))
    assert to_view_array(padded, (63, 63)).shape == (68, 68, 3)


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=200))
def test_view_parser_fuzz(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("v") / "f.view"
    path.write_bytes(data)
    try:
        arr = read_view(path)
    except InputError as exc:
        assert "f.view" in str(exc)
    else:
        assert arr.size * 8 + 24 == len(data)


@pytest.mark.parametrize("ranks", [1, 2, 3, 4, 6])
def test_reshape_plans_move_every_value(ranks):
    n1, n2 = 11, 7
    rng = np.random.default_rng(ranks)
    full = rng.random((n1, n2))
    src = [(*block_bounds(n1, ranks, r), 0, n2) for r in range(ranks)]
    dst = [(0, n1, *block_bounds(n2, ranks, r)) for r in range(ranks)]
    plans = [plan_reshape(src, dst, r) for r in range(ranks)]
    data = [full[b[0] : b[1], b[2] : b[3]] for b in src]
    out = apply_reshape_local(plans, data)
    for b, o in zip(dst, out, strict=True):
        assert np.array_equal(o, full[b[0] : b[1], b[2] : b[3]])


def test_fft_config_knobs_follow_table_1():
    rows = [config_knobs(c) for c in range(8)]
    assert [(r["alltoall"], r["pencils"], r["reorder"]) for r in rows] == [
        (a, p, o) for a in (False, True) for p in (False, True) for o in (False, True)
    ]


@pytest.mark.parametrize(
    ("field", "value"),
    [("order", "mid"), ("mesh", 3), ("cutoff", -1.0), ("fft_config", 8), ("init", "cos")],
)
def test_params_refuse_bad_values(field, value):
    with pytest.raises(InputError, match=f"--{field.replace('_', '-')}"):
        ZModelParams(**{field: value})


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=20))
def test_spatial_parts_option_fuzz(text):
    from grapeshot.cli.zmodel import _parts

    try:
        got = _parts(text)
    except InputError as exc:
        assert exc.where == "--spatial-parts"
    else:
        assert len(got) == 2 and min(got) >= 1
