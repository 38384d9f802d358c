"""The task runtime on real MPI ranks reproduces the serial executor bit for bit."""

from __future__ import annotations

import json

import pytest

from grapeshot.runtime.serial import run_serial
from tests.mpi_harness import run_mpi
from tests.runtime.toy_programs import Heat, RebindThenBatch, Walkers

pytestmark = pytest.mark.mpi

SERIAL = {
    "heat": lambda: run_serial(Heat(parts=(4, 3)), 10).digest(),
    "heat4": lambda: run_serial(Heat(parts=(2, 2)), 10).digest(),
    "heat-batched": lambda: run_serial(Heat(parts=(4, 3)), 10).digest(),
    "rebind-then-batch": lambda: run_serial(RebindThenBatch(parts=(4, 3)), 10).digest(),
    "walkers": lambda: run_serial(Walkers(parts=(4, 2)), 10).digest(),
}


def _run(
    n, program, executor="task", strategy="birdshot", threads=1, reduction="mpi", migrate="none"
):
    proc = run_mpi(
        n,
        [
            "-m",
            "tests.runtime.mpi_toys",
            program,
            executor,
            strategy,
            str(threads),
            reduction,
            migrate,
        ],
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("n", [1, 2, 4])
@pytest.mark.parametrize("program", ["heat", "walkers"])
def test_task_runtime_matches_serial(n, program) -> None:
    summary = _run(n, program, threads=2)
    assert summary["fields_digest"] == SERIAL[program]()
    assert summary["ranks"] == n and len(summary["busy"]) == n


@pytest.mark.parametrize(("n", "threads"), [(1, 2), (2, 1), (3, 2)])
@pytest.mark.parametrize("program", ["heat-batched", "rebind-then-batch"])
def test_batched_phases_match_serial(program, n, threads) -> None:
    # The serial executor runs the kernels one by one; the runtime runs the batches (in
    # rebind-then-batch, right after a per-task phase replaced the array a batch works on).
    summary = _run(n, program, threads=threads)
    assert summary["fields_digest"] == SERIAL[program]()


@pytest.mark.parametrize("reduction", ["linear", "binomial"])
def test_reduction_algorithms_agree(reduction) -> None:
    summary = _run(4, "heat", strategy="geometric", reduction=reduction)
    assert summary["fields_digest"] == SERIAL["heat"]()


def test_migration_in_the_middle_keeps_results_and_particles() -> None:
    summary = _run(2, "walkers", strategy="geometric", migrate="5")
    assert summary["fields_digest"] == SERIAL["walkers"]()
    assert summary["bytes_migrated"] > 0


def test_reference_executor_matches_serial() -> None:
    summary = _run(4, "heat4", executor="reference")
    assert summary["fields_digest"] == SERIAL["heat4"]()
    assert summary["executor"] == "reference"


def _failed_run(program: str, strategy: str = "cyclic") -> str:
    """Run a toy that fails on 2 ranks; it must end (no hang) with a non-zero status."""
    args = ["-m", "tests.runtime.mpi_toys", program, "task", strategy, "1", "mpi", "none"]
    proc = run_mpi(2, args, check=False)
    assert proc.returncode != 0
    return proc.stderr


@pytest.mark.parametrize(
    ("program", "strategy", "messages"),
    [
        ("failing", "cyclic", ["partition 3, step 2, phase 'diffuse' failed", "blew up"]),
        ("batch-failing", "cyclic", ["step 2, phase 'diffuse' failed: FloatingPointError"]),
        # A batch that copies no halos (it skips task_begins) is stopped at its first call.
        (
            "self-stamping-batch",
            "cyclic",
            ["step 0, phase 'diffuse' failed", "must call grapeshot.model.task_halos.task_begins"],
        ),
        # CFL 3: the batched stage flags the partition; its check_block names the cell.
        (
            "swe-unstable",
            "geometric",
            ["partition 0, step 0, phase 'stage1' failed", "is negative or not finite"],
        ),
    ],
)
def test_a_failure_ends_the_run_with_a_message(program, strategy, messages) -> None:
    stderr = _failed_run(program, strategy)
    for message in messages:
        assert message in stderr


def test_a_rank_that_dies_ends_the_run_without_a_hang() -> None:
    _failed_run("dying")
