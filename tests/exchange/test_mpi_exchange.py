"""Every exchange algorithm on real MPI ranks (mpiexec -n 2, 3, 4): every byte exactly once."""

from __future__ import annotations

import json

import pytest

from grapeshot.exchange.schedules import ALGORITHMS
from tests.mpi_harness import run_mpi


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_every_algorithm_delivers_every_byte_once_on_mpi(ranks) -> None:
    proc = run_mpi(ranks, ["-m", "tests.exchange.mpi_exchange_run"], work=10)
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(data) == 3 * len(ALGORITHMS) * 2
    for key, row in data.items():
        assert row["pairs"] == row["expected_pairs"], key
        assert row["bytes"] == row["expected_bytes"], key
    assert any(row["pairs"] > 0 for row in data.values())
