"""A run gathers every task's row only when asked: the sums it reports are the same."""

from __future__ import annotations

import numpy as np
import pytest

from grapeshot.runtime.record import write_run_record
from tests.runtime.toy_programs import BatchedHeat


def _run(task_rows: bool, threads: int = 2):
    from mpi4py import MPI

    from grapeshot.runtime.driver import run_program

    program = BatchedHeat(domain=(32, 32), parts=(4, 4))
    outcome = run_program(
        program, steps=4, strategy="cyclic", seed=0, comm=MPI.COMM_SELF, threads=threads,
        task_rows=task_rows,
    )  # fmt: skip
    return program, outcome


@pytest.mark.parametrize("threads", [1, 2])
def test_busy_and_halo_seconds_are_the_sums_of_the_task_rows(threads: int) -> None:
    _, outcome = _run(True, threads)
    t, summary = outcome.tasks, outcome.summary
    assert t["part"].size == 16 * 4 * len(BatchedHeat(domain=(32, 32), parts=(4, 4)).phases)
    assert summary["busy"] == pytest.approx([float(t["cpu"].sum())], rel=1e-9)
    assert summary["task_halo_seconds"] == pytest.approx([float(t["halo"].sum())], rel=1e-9)


def test_a_run_without_task_rows_keeps_its_sums_and_fields(tmp_path) -> None:
    program, rows = _run(True)
    _, bare = _run(False)
    assert bare.tasks is None
    assert bare.summary["fields_digest"] == rows.summary["fields_digest"]
    assert np.array_equal(bare.work, rows.work)
    assert bare.summary["busy"][0] > 0.0
    with pytest.raises(ValueError, match="task_rows=True"):
        write_run_record(tmp_path / "r.h5", program, bare)
    assert not (tmp_path / "r.h5").exists()
