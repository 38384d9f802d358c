"""Examples are tests (SimGrid's habit): every script in examples/ runs, and the deterministic
ones (simulated time, work units, theory) print exactly their ``expected/NAME.out``.
``read_part.c``, built in plain C and with the mpich wheel's ``mpicc``, reads the per-rank
files ``place --ranks`` writes and refuses one written for another rank count."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
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


# read_part.c, the C side of `place --out FILE.part`: plain C and MPI.

READ_PART = EXAMPLES / "read_part.c"
WARNINGS = ["-std=c99", "-O2", "-Wall", "-Wextra", "-Werror"]


def _build(tmp: Path, name: str, compiler: str | None, *flags: str) -> Path:
    if compiler is None:
        pytest.skip(f"no compiler for {name}")
    exe = tmp / name
    proc = subprocess.run([compiler, *WARNINGS, *flags, "-o", str(exe), str(READ_PART)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return exe


def _c_compiler() -> str | None:
    return next(filter(None, map(shutil.which, ("cc", "gcc", "clang"))), None)


def _mpicc() -> str | None:
    """The mpich wheel's mpicc (it drives the system's cc), if both are there."""
    here = Path(sys.executable).parent / "mpicc"
    found = str(here) if here.exists() else shutil.which("mpicc")
    return found if found and _c_compiler() else None


@pytest.fixture(scope="module")
def c_reader(tmp_path_factory) -> Path:
    """read_part.c in plain C (no library but libc), warnings as errors."""
    return _build(tmp_path_factory.mktemp("c"), "read_part", _c_compiler())


@pytest.fixture(scope="module")
def mpi_reader(tmp_path_factory) -> Path:
    """read_part.c built with -DUSE_MPI by the wheel's mpicc."""
    return _build(tmp_path_factory.mktemp("mpi"), "read_part_mpi", _mpicc(), "-DUSE_MPI")


@pytest.fixture(scope="module")
def per_rank(tmp_path_factory) -> Path:
    """A 16x16 grid on 2 nodes of 2 ranks each (geometric), a rank a line after a header."""
    out = tmp_path_factory.mktemp("placed") / "p.part"
    proc = subprocess.run(
        [sys.executable, "-m", "grapeshot.cli.main", "place", "--grid", "16x16", "--machine",
         "plafrim", "--nodes", "2", "--strategy", "geometric", "--ranks-per-node", "2",
         "--out", str(out)],
        capture_output=True, text=True, env=_env(out.parent), timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return out


def _expected(path: Path) -> str:
    """Each rank's partitions, as grapeshot reads the file."""
    from grapeshot.model.placement import load_placement

    placement = load_placement(path)
    lines = [f"rank {r}:" + "".join(f" {p}" for p in np.flatnonzero(placement.node_of == r))
             for r in range(placement.nodes)]  # fmt: skip
    return "\n".join(lines) + "\n"


def _run(*cmd: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(map(str, cmd)), capture_output=True, text=True, timeout=120)


def test_read_part_reads_a_per_rank_file(c_reader: Path, per_rank: Path) -> None:
    assert per_rank.read_text().startswith("# grapeshot placement: parts 16x16, 256 partitions, 4")
    for args in ((), ("4",)):
        proc = _run(c_reader, per_rank, *args)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        assert proc.stdout == _expected(per_rank)
    # The rank count given is not the file's: one line naming the file and both counts.
    proc = _run(c_reader, per_rank, "2")
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == (
        f"read_part: {per_rank}: written for 4 ranks; this run has 2 (the RANKS argument)\n"
    )


def test_read_part_reads_an_older_file_on_more_ranks(c_reader: Path, tmp_path: Path) -> None:
    old = tmp_path / "nodes.part"
    old.write_text("1\n0\n1\n")
    assert _run(c_reader, old, "3").stdout == "rank 0: 1\nrank 1: 0 2\nrank 2:\n"
    proc = _run(c_reader, old, "1")
    assert proc.returncode == 1 and proc.stderr == (
        f"read_part: {old}: names 2 ranks (0 to 1); this run has 1 (the RANKS argument)\n"
    )
    for bad in ("0", "x", "-2", "2147483648"):
        proc = _run(c_reader, old, bad)
        assert proc.returncode == 2 and proc.stderr == "usage: read_part FILE.part [RANKS]\n"


HEADER = "# grapeshot placement: parts 2x3, 6 partitions, 4 ranks"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("# 2x3\n0\n", "line 1: expected a header '# grapeshot placement: parts PXxPY[xPZ], P "
                       "partitions, N ranks'"),
        ("# grapeshot placement: parts 2x3x1x1, 6 partitions, 4 ranks\n0\n",
         "line 1: expected a header"),
        ("# grapeshot placement: parts 2x3, 6 partitions, 4 nodes\n0\n",
         "line 1: expected a header"),
        ("# grapeshot placement: parts 2x3, 7 partitions, 4 ranks\n0\n",
         "line 1: its grid is not its 7 partitions"),
        ("# grapeshot placement: parts 2x3, 6 partitions, 0 ranks\n0\n",
         "line 1: says 0 ranks; expected 1 to 2147483647"),
        (HEADER + "\n", "line 1: says 6 partitions, and the file has 0 lines after it"),
        (HEADER + "\n0\n0\n1\n2\n3\n", "line 1: says 6 partitions, and the file has 5 lines "
                                       "after it"),
        (HEADER + "\n0\n0\n4\n2\n3\n3\n", "line 4: expected a rank in [0, 3] (line 1 says 4 "
                                          "ranks)"),
        (HEADER + "\n0\n\n1\n2\n3\n3\n", "line 3: blank line; expected one rank number per "
                                         "line"),
        ("#" + "x" * 300 + "\n", "line 1: line too long for a header"),
    ],
)  # fmt: skip
def test_read_part_refuses_a_header_that_disagrees(
    c_reader: Path, tmp_path: Path, text: str, message: str
) -> None:
    """One line naming the file and the line, as grapeshot refuses the same file."""
    from grapeshot.model.errors import InputError
    from grapeshot.model.placement import load_placement

    path = tmp_path / "bad.part"
    path.write_text(text)
    proc = _run(c_reader, path)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith(f"read_part: {path}: {message}") and proc.stderr.count("\n") == 1
    with pytest.raises(InputError, match=r": line \d+: "):
        load_placement(path)


@pytest.mark.mpi
def test_read_part_under_mpi_checks_the_communicator(
    c_reader: Path, mpi_reader: Path, per_rank: Path, tmp_path: Path
) -> None:
    # On the file's 4 ranks, each keeps its own partitions; rank 0 prints them all.
    proc = subprocess.run([mpiexec(), "-n", "4", str(mpi_reader), str(per_rank)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout == _expected(per_rank) == _run(c_reader, per_rank).stdout
    # On 2 ranks: refused by rank 0 in one line, every rank stops (no hang).
    proc = subprocess.run([mpiexec(), "-n", "2", str(mpi_reader), str(per_rank)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode != 0 and proc.stdout == ""
    assert proc.stderr == (
        f"read_part: {per_rank}: written for 4 ranks; this run has 2 (MPI_Comm_size)\n"
    )
    # A bad file: the same line as the plain reader's.
    bad = tmp_path / "bad.part"
    bad.write_text(HEADER + "\n0\n")
    proc = subprocess.run([mpiexec(), "-n", "2", str(mpi_reader), str(bad)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode != 0 and proc.stderr == _run(c_reader, bad).stderr
