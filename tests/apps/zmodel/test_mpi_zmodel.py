"""Real MPI ranks: distributed runs equal the one-process run; the CLI writes Beatnik views."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from tests.mpi_harness import run_mpi


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_distributed_runs_equal_the_serial_run(ranks):
    proc = run_mpi(ranks, ["-m", "tests.apps.zmodel.mpi_zmodel"], work=30)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(result) == 21
    for name, (dz, dw, moves) in result.items():
        dynamic = (
            "cutoff-free-reactive",
            "cutoff-periodic-treematch-lb",
            "cutoff-free-reactive-lp",
        )
        if name in dynamic and ranks == 3:
            # uneven parts on 3 ranks: the dynamic strategies did move micro-partitions
            assert moves > 0, name
        assert dz < 1e-12 and dw < 1e-12, (name, dz, dw)
        if name.startswith("cutoff"):
            # canonical summation order: bit-for-bit whatever the placement and rank count
            assert dz == 0.0 and dw == 0.0, name


@pytest.mark.mpi
def test_cli_on_4_ranks_writes_views_equal_to_beatnik(views_dir, tmp_path):
    from grapeshot.apps.zmodel.views import read_view

    args = [
        "-m",
        "grapeshot.cli.main",
        "zmodel",
        "--order",
        "low",
        "--boundary",
        "free",
        "--mesh",
        "64",
        "--steps",
        "5",
        "--beatnik-compat",
        "--write-views",
        str(tmp_path),
        "--json",
    ]
    proc = run_mpi(4, args, work=15)
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["ranks"] == 4 and summary["dims"] == [2, 2]
    ref = read_view(views_dir / "low_order" / "z_64_f_r0.1.view")[2:66, 2:66]
    for r in range(4):
        v = read_view(tmp_path / f"z_64_f_r{r}.4.view")
        bi, bj = divmod(r, 2)
        assert v.shape[2] == 3 and v.shape[0] in (36, 37)
        mine = v[2:34, 2:34]
        assert np.abs(mine - ref[32 * bi : 32 * bi + 32, 32 * bj : 32 * bj + 32]).max() < 1e-12


@pytest.mark.mpi
def test_cli_refuses_bad_options_with_exit_2():
    proc = run_mpi(1, ["-m", "grapeshot.cli.main", "zmodel", "--mesh", "3"], check=False)
    assert proc.returncode == 2
    assert "--mesh" in proc.stderr and "Traceback" not in proc.stderr
    assert sys.executable
    cutoff = ["--order", "high", "--solver", "cutoff", "--mesh", "8", "--steps", "1"]
    for extra, option in (
        (["--spatial-strategy", "birdshot", "--spatial-interval", "3"], "--spatial-interval"),
        (["--exchange", "pigeon"], "--exchange"),
    ):
        args = ["-m", "grapeshot.cli.main", "zmodel", *cutoff, *extra]
        proc = run_mpi(1, args, check=False)
        assert proc.returncode == 2, proc.stderr
        assert option in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.mpi
def test_cli_trace_and_vtk_on_2_ranks(tmp_path):
    import h5py

    from grapeshot.model.workload_file import load_workload

    trace, vtk = tmp_path / "t.h5", tmp_path / "vtk"
    args = ["-m", "grapeshot.cli.main", "zmodel", "--order", "high", "--solver", "cutoff",
            "--mesh", "16", "--steps", "4", "--boundary", "free", "--init", "single",
            "--magnitude", "0.1", "--modes", "9", "--cutoff", "0.3", "--spatial-parts", "4,4",
            "--spatial-strategy", "reactive", "--spatial-interval", "1", "--exchange", "rsn",
            "--trace", str(trace), "--vtk", str(vtk),
            "--vtk-every", "2", "--json"]  # fmt: skip
    proc = run_mpi(2, args, work=15)
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["spatial_parts"] == [4, 4] and summary["ranks"] == 2
    assert summary["exchange"] == "rsn" and summary["spatial_moves"] >= 0
    assert summary["phase_seconds"]["br"] > 0 and summary["phase_seconds"]["migration"] > 0
    wl = load_workload(trace)
    assert wl.parts_shape == (4, 4) and wl.n_steps == 4 and wl.app == "zmodel"
    assert np.all(wl.work.sum(axis=1) == 16 * 16)
    with h5py.File(trace) as f:
        assert f["zmodel/phase_times"].shape == (4, 2, 5)
        assert np.all(f["zmodel/rank_points"][()].sum(axis=1) == 256)
    frames = sorted(p.name for p in vtk.glob("*.vts"))
    assert frames == ["surface_00000.vts", "surface_00002.vts", "surface_00004.vts"]
    assert (vtk / "surface.pvd").read_text().count("<DataSet") == 3


def _refuse(token: str):
    raise AssertionError(f"{token} is not JSON")


@pytest.mark.mpi
def test_cli_says_once_when_the_run_blows_up():
    """The defaults' low-order run ends non-finite at mesh 32: one warning with what to try,
    none of numpy's overflow warnings, and standard JSON (``null``, not ``NaN``); a stable
    run warns of nothing."""
    base = ["-m", "grapeshot.cli.main", "zmodel", "--mesh", "32", "--json"]
    proc = run_mpi(2, base, work=15)
    assert "grapeshot zmodel: warning: the interface is not finite" in proc.stderr
    assert "--order medium or high" in proc.stderr
    assert "RuntimeWarning" not in proc.stderr and "Traceback" not in proc.stderr
    assert json.loads(proc.stdout, parse_constant=_refuse)["max_height"] is None
    proc = run_mpi(1, [*base, "--steps", "10"], work=15)
    assert "warning" not in proc.stderr
    assert np.isfinite(json.loads(proc.stdout)["max_height"])
