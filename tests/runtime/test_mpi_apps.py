"""SPH, shallow water and wavefront on 1, 2 and 4 ranks equal the serial executor, bit for bit,
for geometric and Birdshot placements, with and without a migration in the middle; and on
two emulated nodes, where node neighbours' messages and MPI ones meet in one phase."""

from __future__ import annotations

import json

import pytest

from grapeshot.runtime.serial import run_serial
from tests.mpi_harness import TWO_NODES, run_mpi, skip_unless_two_nodes
from tests.runtime.mpi_apps import CASES, FUSED, STEPS, configurations, make

pytestmark = pytest.mark.mpi


@pytest.fixture(scope="module")
def serial_digests() -> dict[str, tuple[str, list[int]]]:
    out = {}
    for app, scene, parts, cells in CASES:
        run = run_serial(make(app, scene, parts, cells), STEPS)
        out[app] = (run.digest(), run.work.sum(axis=1).tolist())
    return out


@pytest.mark.parametrize("ranks", [1, 2, 4])
def test_apps_on_ranks_equal_serial(ranks, serial_digests) -> None:
    proc = run_mpi(ranks, ["-m", "tests.runtime.mpi_apps"], work=15)
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == sum(len(configurations(app)) for app, *_ in CASES) * 4
    for row in rows:
        digest, work = serial_digests[row["app"]]
        assert row["digest"] == digest, row
        # Particles, wet cells and band cells are all kept across migrations.
        assert row["work"] == work, row
        # On one thread the batched app's tasks copied their own halos.
        assert (row["task_halo"] > 0) == (row["app"] in FUSED and row["threads"] == 1), row
    moved = [row["bytes_migrated"] for row in rows if row["migrate"] is not None]
    # On several ranks the mid-run rebalance really moved partitions (and lost nothing).
    assert (sum(moved) > 0) == (ranks > 1)


def test_neighbours_on_the_node_and_off_it_in_one_run(serial_digests) -> None:
    """On two emulated nodes of two ranks each, a rank hears from its node neighbour through
    the news in its inbox and from the other node by MPI in the same phases: the shallow
    water still equals the serial executor, bit for bit."""
    skip_unless_two_nodes(4)
    proc = run_mpi(4, ["-m", "tests.runtime.mpi_apps", "swe"], work=8, env=TWO_NODES)
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == len(configurations("swe")) * 4
    digest, work = serial_digests["swe"]
    for row in rows:
        assert row["digest"] == digest and row["work"] == work, row
