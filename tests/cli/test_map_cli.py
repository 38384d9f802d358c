"""``grapeshot map``: the scripted interface (JSON), the human view, one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from grapeshot.apps.commbench import commbench_matrix
from grapeshot.model.topology import parse_tleaf
from grapeshot.place.treematch import mapping_cost
from tests.cli.helpers import run_cli

TLEAF = "tleaf 3 4 1000 2 100 4 10"


@pytest.fixture
def mtx(tmp_path):
    m = commbench_matrix(50, seed=1)
    path = tmp_path / "a.mtx"
    scipy.io.mmwrite(path, sp.coo_matrix(m + m.T), symmetry="symmetric")
    return path


def test_json_of_the_issue(capsys, mtx) -> None:
    r = run_cli(
        capsys, "map", "--matrix", str(mtx), "--tleaf", TLEAF, "--strategy", "treematch", "--json"
    )
    assert r.code == 0, r.err
    out = r.json()
    assert set(out) >= {"core_of", "seconds", "cost"}
    assert set(out["cost"]) == {"hop_bytes", "sum_com", "max_com"}
    core = np.asarray(out["core_of"])
    assert core.shape == (50,) and core.min() >= 0 and core.max() < 32
    assert np.bincount(core, minlength=32).max() == 2  # ceil(50 / 32), balanced
    m = commbench_matrix(50, seed=1)
    assert out["cost"] == pytest.approx(mapping_cost(m + m.T, parse_tleaf(TLEAF), core))


def test_oversub_and_other_strategies(capsys, mtx) -> None:
    for strategy in ("packed", "round-robin", "metis", "scotch", "kahip"):
        r = run_cli(
            capsys,
            "map",
            "--matrix",
            str(mtx),
            "--tleaf",
            TLEAF,
            "--oversub",
            "4",
            "--strategy",
            strategy,
            "--json",
        )
        assert r.code == 0, r.err
        assert r.json()["oversub"] == 4 and r.json()["strategy"] == strategy


def test_all_strategies_table_and_file(capsys, mtx, tmp_path) -> None:
    out = tmp_path / "res.json"
    r = run_cli(
        capsys,
        "map",
        "--matrix",
        str(mtx),
        "--tleaf",
        TLEAF,
        "--strategy",
        "all",
        "--out",
        str(out),
    )
    assert r.code == 0, r.err
    assert "treematch" in r.out and "packed" in r.out
    saved = json.loads(out.read_text())
    assert {s["strategy"] for s in saved["strategies"]} >= {"treematch", "packed"}


def test_machine_instead_of_tleaf(capsys, mtx) -> None:
    r = run_cli(
        capsys, "map", "--matrix", str(mtx), "--machine", "plafrim", "--nodes", "4", "--json"
    )
    assert r.code == 0, r.err
    assert max(r.json()["core_of"]) < 32


@pytest.mark.parametrize(
    ("args", "where"),
    [
        (["--tleaf", "tleaf 2 4 1"], "--tleaf: levels"),
        (["--tleaf", TLEAF, "--oversub", "1"], "--oversub"),
        (["--tleaf", TLEAF, "--strategy", "magic"], "--strategy"),
        ([], "--tleaf/--machine"),
        (["--tleaf", TLEAF, "--machine", "plafrim"], "--tleaf/--machine"),
        (["--tleaf", TLEAF, "--nodes", "3"], "--nodes"),
        (["--tleaf", TLEAF, "--seed", "-2"], "seed"),
    ],
)
def test_errors_are_one_line_exit_2(capsys, mtx, args, where) -> None:
    r = run_cli(capsys, "map", "--matrix", str(mtx), *args)
    assert r.code == 2
    assert r.error.startswith(where)
    assert "Traceback" not in r.err


def test_bad_matrix_file_is_one_line(capsys, tmp_path) -> None:
    bad = tmp_path / "bad.mtx"
    bad.write_text("%%MatrixMarket matrix coordinate real general\n3 4 0\n")
    r = run_cli(capsys, "map", "--matrix", str(bad), "--tleaf", TLEAF)
    assert r.code == 2 and r.error.startswith(f"{bad} line 2")
    r = run_cli(capsys, "map", "--matrix", str(tmp_path / "none.mtx"), "--tleaf", TLEAF)
    assert r.code == 2 and "cannot read" in r.error


def test_help_explains(capsys) -> None:
    r = run_cli(capsys, "map", "--help")
    assert r.code == 0
    assert "tleaf" in r.out and "SUM_COM" in r.out and "--oversub" in r.out


def test_workload_mode_compares_strategies(capsys) -> None:
    r = run_cli(
        capsys,
        "map",
        "--synthetic",
        "uniform:parts=16x16,steps=2",
        "--machine",
        "plafrim",
        "--nodes",
        "4",
        "--strategy",
        "all",
        "--json",
    )
    assert r.code == 0, r.err
    out = r.json()
    names = [row["strategy"] for row in out["strategies"]]
    assert {"treematch", "packed", "treematch-lb", "geometric"} <= set(names)
    for row in out["strategies"]:
        assert row["hop_bytes"] >= row["bytes_cut"] >= 0 and row["simulated_time"] > 0
    assert out["best"]["hop_bytes"] in names and out["best"]["simulated_time"] in names


@pytest.mark.parametrize(
    ("args", "where"),
    [
        (["--synthetic", "uniform:parts=8x8,steps=2"], "--machine"),
        (
            ["--synthetic", "uniform:parts=8x8,steps=2", "--machine", "plafrim", "--tleaf", TLEAF],
            "--tleaf",
        ),
        (
            [
                "--synthetic",
                "uniform:parts=8x8,steps=2",
                "--machine",
                "plafrim",
                "--strategy",
                "magic",
            ],
            "--strategy",
        ),
        ([], "--matrix"),
    ],
)
def test_workload_mode_errors(capsys, args, where) -> None:
    r = run_cli(capsys, "map", *args)
    assert r.code == 2 and r.error.startswith(where)
