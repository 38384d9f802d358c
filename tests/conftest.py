"""Shared pytest configuration. Tests never read a clock to decide pass or fail: timing
claims live in ``benchmarks/`` as ratios against a baseline measured in the same run."""

from collections.abc import Iterator
from pathlib import Path

import pytest

SHM = Path("/dev/shm")


def _mpich_segments() -> set[str]:
    return {p.name for p in SHM.glob("mpich_shm_*")} if SHM.is_dir() else set()


@pytest.fixture(autouse=True)
def _remove_mpich_segments_of_killed_runs(request: pytest.FixtureRequest) -> Iterator[None]:
    """A run whose ranks are killed (the tests of failures, timeouts and dead ranks do it on
    purpose) leaves MPICH's shared-memory segment in /dev/shm, as any killed MPI job does;
    remove the ones a test made, once its processes are gone (tests run one at a time)."""
    if request.node.get_closest_marker("mpi") is None:
        yield
        return
    before = _mpich_segments()
    yield
    for name in _mpich_segments() - before:
        (SHM / name).unlink(missing_ok=True)
