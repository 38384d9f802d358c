"""Examples are tests (SimGrid's habit): every script in examples/ runs, and the deterministic
ones (simulated time, work units, theory) print exactly their ``expected/NAME.out``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mpi_harness import ROOT, mpiexec

EXAMPLES = ROOT / "examples"
SCRIPTS = sorted(p for p in EXAMPLES.iterdir() if p.suffix in (".sh", ".py"))
#: Examples whose output depends on the host's speed (real MPI runs): run, not compared.
TIMED = {"05_run.sh"}
#: Examples that start MPI ranks (marked ``mpi``).
MPI = TIMED | {"11_zmodel.sh"}


def _env(out: Path) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    return dict(
        os.environ,
        GRAPESHOT=str(Path(bin_dir) / "grapeshot"),
        MPIEXEC=mpiexec(),
        OUT=str(out),
        COLUMNS="80",
        PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        PYTHONPATH=str(ROOT),
        OMP_NUM_THREADS="1",
    )


def test_every_example_is_listed_and_has_an_expected_output() -> None:
    listing = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    for script in SCRIPTS:
        assert f"`{script.name}`" in listing, script.name
        if script.name not in TIMED:
            assert (EXAMPLES / "expected" / f"{script.stem}.out").is_file(), script.name


@pytest.mark.parametrize(
    "script",
    [pytest.param(s, marks=pytest.mark.mpi) if s.name in MPI else s for s in SCRIPTS],
    ids=[s.name for s in SCRIPTS],
)
def test_example_runs(script: Path, tmp_path: Path) -> None:
    cmd = ["bash", str(script)] if script.suffix == ".sh" else [sys.executable, str(script)]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env=_env(tmp_path), cwd=tmp_path, timeout=300
    )
    assert proc.returncode == 0, f"{script.name}:\n{proc.stdout}\n{proc.stderr}"
    if script.name in TIMED:
        assert "migration at step 3:" in proc.stdout
        assert "a run record (HDF5)" in proc.stdout
        return
    expected = (EXAMPLES / "expected" / f"{script.stem}.out").read_text(encoding="utf-8")
    assert proc.stdout == expected, script.name
