"""Run a script on real MPI ranks (the venv's mpiexec) and return rank 0's output."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def mpiexec() -> str:
    """The mpiexec next to this Python (the mpich wheel's), else one on PATH."""
    here = Path(sys.executable).parent / "mpiexec"
    found = str(here) if here.exists() else shutil.which("mpiexec")
    if found is None:
        pytest.fail("no mpiexec: install the project with `make install` (mpich wheel)")
    return found


def run_mpi(
    n: int, args: list[str], *, timeout: float = 240.0, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """``mpiexec -n N python ARGS`` from the repository root; fails the test on a hang."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    cmd = [mpiexec(), "-n", str(n), sys.executable, *args]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{' '.join(cmd)} hung for {timeout} s: {exc.stderr}")
    if check and proc.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc
