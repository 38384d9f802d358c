"""``run_program(exchange=...)`` / ``grapeshot run --exchange``: SPH's migration by schedule."""

from __future__ import annotations

import json

import pytest

from grapeshot.exchange.schedules import ALGORITHMS
from tests.mpi_harness import run_mpi


@pytest.mark.mpi
def test_every_schedule_migrates_sph_particles_to_the_same_bits() -> None:
    proc = run_mpi(3, ["-m", "tests.exchange.mpi_runtime_exchange"], work=10)
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(data) == set(ALGORITHMS)
    digests = {d for d, _ in data.values()}
    assert len(digests) == 1  # bitwise the same fields whatever the schedule
    assert data["ac"][1] == 0  # "ac" is the runtime's own post-and-receive path
    for name in ALGORITHMS[1:]:
        assert data[name][1] == 5  # one planned exchange per step's migration
