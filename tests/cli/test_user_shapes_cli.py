"""Issue 38 through the real entry point: a 1-D program asked for a 2-D grid and a program too
big for the machine are one line and exit status 2 (under mpiexec too, printed once), and a
user's file named like a standard-library module runs from numba's cache in the next run and
from a copy of its folder. (The checks themselves: tests/apps/test_user_shapes.py.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.apps.test_user_shapes import HEAT, PLATE, ROD
from tests.cli.helpers import run_main
from tests.mpi_harness import ROOT, mpiexec, run_mpi

RUN = ["-m", "grapeshot.cli.main", "run"]
#: Far more than any machine running the tests has: 10^6 partitions of 1002² float64 cells.
TOO_BIG = ("--parts", "1000,1000", "--cells", "1000000")


@pytest.fixture
def rod(tmp_path: Path) -> str:
    path = tmp_path / "rod.py"
    path.write_text(ROD)
    return f"{path}:make"


def _refused(*args: str) -> str:
    result = run_main(*args)
    assert result.code == 2 and result.err.count("\n") == 1, result.err
    return result.error


@pytest.mark.parametrize(
    ("command", "parts"),
    [("run", ("--parts", "16", "--cells", "4096")), ("run", ("--parts", "16,1")),
     ("trace", ("--parts", "16", "--cells", "4096"))],
)  # fmt: skip
def test_a_1d_program_is_refused_in_one_line(tmp_path, rod, command, parts) -> None:
    out = ("--out", str(tmp_path / "t.h5")) if command == "trace" else ()
    error = _refused(command, "--app", rod, *parts, "--steps", "2", *out)
    assert error.startswith("--parts: ") and "1-D program" in error, error
    assert "2-D or 3-D program" in error
    assert not (tmp_path / "t.h5").exists()


def test_a_factory_ignoring_cells_is_refused_in_one_line(tmp_path) -> None:
    # Refused rather than run on cells nobody asked for.
    path = tmp_path / "plate.py"
    path.write_text(PLATE)
    error = _refused("run", "--app", f"{path}:fixed", "--parts", "4,4", "--cells", "32,32")
    assert error.startswith(f"--cells: {path}:fixed returned a program of cells (48, 40)")


@pytest.mark.parametrize("command", ["run", "trace"])
def test_a_program_too_big_is_refused_with_its_estimate(tmp_path, command) -> None:
    out = ("--out", str(tmp_path / "t.h5")) if command == "trace" else ()
    app = f"{HEAT}:make_heat"
    error = _refused(command, "--app", app, *TOO_BIG, "--steps", "2", *out)
    assert error.startswith("--parts 1000,1000 --cells 1000000,1000000: needs about ")
    assert "for heat's fields and partitions (15.3 MiB a partition's block)" in error
    assert error.endswith("expected fewer partitions (--parts) or cells (--cells)")


@pytest.mark.mpi
@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--parts", "16", "--cells", "4096"), "1-D program"),
        (("--parts", "16,1"), "1-D program"),
        (TOO_BIG, "needs about"),
    ],
)
def test_under_mpiexec_every_rank_stops_and_rank_0_says_it_once(rod, args, words) -> None:
    app = rod if words == "1-D program" else f"{HEAT}:make_heat"
    proc = run_mpi(2, [*RUN, "--app", app, *args, "--steps", "2"], check=False)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("grapeshot: error: "), proc.stderr
    assert words in lines[0] and "--parts" in lines[0]


def _run_wave(folder: Path, cache: Path, executor: str) -> tuple[str, str]:
    """``grapeshot run --app FOLDER/wave.py:make_heat`` in a fresh process (the task executor
    on 2 ranks under ``mpiexec``): its digest and numba's cache log."""
    env = dict(
        os.environ, PYTHONPATH=str(ROOT), NUMBA_DEBUG_CACHE="1", GRAPESHOT_CACHE_DIR=str(cache)
    )
    cmd = [sys.executable, *RUN, "--app", f"{folder / 'wave.py'}:make_heat", "--parts", "2,2",
           "--cells", "32,32", "--steps", "2", "--executor", executor, "--json"]  # fmt: skip
    if executor == "task":
        cmd = [mpiexec(), "-n", "2", *cmd]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    return summary["fields_digest"], proc.stdout + proc.stderr


def test_a_file_named_like_a_stdlib_module_runs_from_numbas_cache(tmp_path) -> None:
    first, cache = tmp_path / "mine", tmp_path / "batches"
    first.mkdir()
    shutil.copy(HEAT, first / "wave.py")
    digest, _ = _run_wave(first, cache, "serial")
    assert list((first / "__pycache__").glob("wave.heat_step-*.nbc"))
    again, log = _run_wave(first, cache, "serial")
    assert again == digest
    assert f"data loaded from '{first / '__pycache__'}{os.sep}wave.heat_step" in log
    # The folder copied with its cache (times kept, as cp -a and rsync -a do): numba's cache
    # names the module the file was imported as, which the copy is imported as too.
    second = tmp_path / "copied"
    shutil.copytree(first, second)
    moved, log = _run_wave(second, cache, "serial")
    assert moved == digest
    assert f"data loaded from '{second / '__pycache__'}{os.sep}wave.heat_step" in log
    assert _run_wave(second, cache, "task")[0] == digest
