"""Examples are tests (SimGrid's habit): every script in examples/ runs, and the deterministic
ones (simulated time, work units, theory) print exactly their ``expected/NAME.out``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mpi_harness import ROOT, mpiexec

EXAMPLES = ROOT / "examples"
SCRIPTS = sorted(p for p in EXAMPLES.iterdir() if p.suffix in (".sh", ".py"))
#: Examples whose output depends on the host's speed (real MPI runs, measured seconds): run,
#: and checked for the lines that do not depend on it.
TIMED = {
    "05_run.sh": ["migration at step 3:", "a run record (HDF5)"],
    "12_program.sh": ["on 4 × ec2-c4.8xlarge", "3.56     256"],
}
#: Examples that start MPI ranks (marked ``mpi``).
MPI = set(TIMED) | {"11_zmodel.sh"}


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
        for line in TIMED[script.name]:
            assert line in proc.stdout, f"{script.name}: {line!r} missing:\n{proc.stdout}"
        if script.name == "12_program.sh":  # one program, three executors: one digest
            digests = {x.split()[-1] for x in proc.stdout.splitlines()[:3]}
            assert len(digests) == 1, proc.stdout
            assert proc.stdout.splitlines()[3].startswith("same bits: heat on "), proc.stdout
            # With a C compiler, read_part.c prints each rank's partitions.
            assert ("rank 3: " in proc.stdout) == (shutil.which("cc") is not None)
        return
    expected = (EXAMPLES / "expected" / f"{script.stem}.out").read_text(encoding="utf-8")
    assert proc.stdout == expected, script.name
