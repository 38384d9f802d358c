"""A user program that fails in set-up, on one rank or on all: every rank ends within seconds,
exit 2, one line naming the rank, the partition and the file (issue: a failure on one rank
used to hang the others, a typo in ``fields=`` printed 120 lines)."""

from __future__ import annotations

import pytest

from tests.mpi_harness import ROOT, run_mpi

PROGRAM = ROOT / "tests" / "cli" / "programs" / "broken.py"
#: Seconds a failing run may take: start-up, import, one factory call; never a hang.
DEADLINE = 90.0


def _fails(factory: str, *args: str, ranks: int = 2) -> str:
    proc = run_mpi(
        ranks,
        ["-m", "grapeshot.cli.main", "run", "--app", f"{PROGRAM}:{factory}", "--steps", "2", *args],
        timeout=DEADLINE,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("grapeshot: error: ")
    return lines[0]


@pytest.mark.mpi
def test_init_block_failing_on_one_rank_ends_every_rank() -> None:
    line = _fails("one", "--parts", "2,1", "--strategy", "geometric")
    assert "rank 1: " in line and "partition 1: init_block raised ValueError" in line
    assert "broken.py line" in line


@pytest.mark.mpi
@pytest.mark.parametrize(
    ("executor", "parts", "ranks"),
    [("task", "4,4", 2), ("reference", "2,1", 2), ("serial", "4,4", 1)],
)
def test_init_block_failing_everywhere_is_one_line(executor, parts, ranks) -> None:
    line = _fails("all_fail", "--parts", parts, "--executor", executor, ranks=ranks)
    assert "partition 0: init_block raised OSError: data file missing (broken.py line" in line


@pytest.mark.mpi
@pytest.mark.parametrize(
    ("executor", "parts", "ranks"),
    [("task", "4,4", 2), ("reference", "2,1", 2), ("serial", "4,4", 1)],
)
def test_a_field_name_typo_is_one_line_in_every_executor(executor, parts, ranks) -> None:
    line = _fails("typo", "--parts", parts, "--executor", executor, ranks=ranks)
    assert "phase 'smooth': names the field 'outt', which init_block's block has not" in line
    assert "expected one of 'out', 'u'" in line


@pytest.mark.mpi
def test_a_factory_failing_on_one_rank_ends_every_rank() -> None:
    line = _fails("factory_on_rank_one", "--parts", "4,4")
    assert line.startswith("grapeshot: error: rank 1: ")
    assert "raised RuntimeError: this rank cannot read its configuration" in line
