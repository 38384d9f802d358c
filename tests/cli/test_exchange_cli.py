"""``grapeshot exchange``: simulate in-process, run for real under mpiexec, refuse bad input."""

from __future__ import annotations

import json

import pytest

from tests.cli.helpers import run_cli
from tests.mpi_harness import run_mpi

KEYS = {"algorithm", "phases", "schedule_seconds", "comm_seconds", "bytes"}


def test_simulate_prints_every_algorithm(capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(
        capsys,
        "exchange",
        "--pattern",
        "regular:d=16,unit=512,seed=1",
        "--algorithms",
        "all",
        "--simulate",
        "cm5",
        "--repeat",
        "3",
        "--json",
    )
    assert res.code == 0, res.err
    doc = res.json()
    assert doc["mode"] == "simulate" and doc["nodes"] == 32
    rows = {r["algorithm"]: r for r in doc["algorithms"]}
    assert set(rows) == {"ac", "lp", "rsn", "rsnh", "drsn", "nbx", "alltoallv", "neighbor"}
    for r in rows.values():
        assert KEYS <= set(r) and r["bytes"] == 32 * 16 * 512 and r["comm_seconds"] > 0
        assert r["total_seconds"] == pytest.approx(r["schedule_seconds"] + 3 * r["comm_seconds"])
    assert rows["lp"]["phases"] == 31 and 16 <= rows["rsn"]["phases"] <= 21
    assert rows["rsn"]["comm_seconds"] < rows["ac"]["comm_seconds"]


def test_simulate_on_a_torus_with_a_pattern_file(capsys, tmp_path) -> None:
    f = tmp_path / "p.txt"
    f.write_text("ranks 4\n0 1 1000\n1 2 2000\n3 0 10\n")
    res = run_cli(
        capsys,
        "exchange",
        "--pattern",
        str(f),
        "--algorithms",
        "rsn,ac",
        "--simulate",
        "bluewaters-xe6",
        "--nodes",
        "4",
        "--json",
    )
    assert res.code == 0, res.err
    assert [r["algorithm"] for r in res.json()["algorithms"]] == ["rsn", "ac"]
    assert res.json()["summary"]["bytes"] == 3010


def test_simulate_with_a_per_message_cpu_cost(capsys) -> None:
    def comm(overhead: str) -> dict[str, float]:
        res = run_cli(
            capsys, "exchange", "--pattern", "regular:n=16,d=8,unit=64,seed=1",
            "--algorithms", "ac,rsn", "--simulate", "bluewaters-xe6", "--nodes", "16",
            "--overhead", overhead, "--json",
        )  # fmt: skip
        assert res.code == 0, res.err
        assert res.json()["overhead"] == float(overhead)
        return {r["algorithm"]: r["comm_seconds"] for r in res.json()["algorithms"]}

    res = run_cli(capsys, "exchange", "--pattern", "regular:d=4", "--simulate", "cm5",
                  "--overhead=-1")  # fmt: skip
    assert res.code == 2 and "'--overhead'" in res.err
    free, costly = comm("0"), comm("5e-6")
    # 8 messages out and 8 in per rank, at 5 us apiece on the rank's CPU
    assert all(costly[a] >= free[a] + 8 * 5e-6 for a in free)


@pytest.mark.parametrize(
    ("args", "where"),
    [
        (
            ["--pattern", "regular:d=4", "--algorithms", "ac,xx", "--simulate", "cm5"],
            "--algorithms",
        ),
        (["--pattern", "regular:d=4", "--simulate", "cm5", "--nodes", "8"], "--nodes"),
        (["--pattern", "regular:d=4", "--nodes", "8"], "--nodes"),
        (["--pattern", "torus:d=4", "--simulate", "cm5"], "--pattern"),
        (["--pattern", "regular:d=4"], "--pattern"),  # 32 ranks needed, 1 running
        (["--pattern", "regular:d=4", "--overhead", "1e-6"], "--overhead"),
    ],
)
def test_bad_input_is_one_line_and_status_2(capsys, args, where) -> None:
    res = run_cli(capsys, "exchange", *args)
    assert res.code == 2 and where in res.error


@pytest.mark.mpi
def test_runs_for_real_under_mpiexec() -> None:
    proc = run_mpi(
        3,
        [
            "-m",
            "grapeshot.cli.main",
            "exchange",
            "--pattern",
            "nonuniform:n=3,d=2,unit=1000",
            "--algorithms",
            "all",
            "--repeat",
            "2",
            "--json",
        ],
    )
    lines = [x for x in proc.stdout.splitlines() if x.startswith("{")]
    assert len(lines) == 1  # rank 0 prints
    doc = json.loads(lines[0])
    assert doc["mode"] == "mpi" and doc["ranks"] == 3
    for r in doc["algorithms"]:
        assert KEYS <= set(r) and r["verified"] and r["comm_seconds"] > 0
