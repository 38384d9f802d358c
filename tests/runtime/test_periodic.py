"""Periodic domains (``Program.periodic``): a wrapped neighbour is exchanged like any other by
every executor, a partition spanning a whole axis wraps onto itself, and the results are
bitwise those of one array rolled with ``np.roll`` (examples/program/gray_scott.py)."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from grapeshot.model.errors import InputError
from grapeshot.model.fields import fields_digest
from grapeshot.model.program import neighbour_offsets, partition_boxes
from grapeshot.model.workload import grid_halo
from grapeshot.runtime.serial import run_serial
from tests.mpi_harness import ROOT, run_mpi

GRAY_SCOTT = ROOT / "examples" / "program" / "gray_scott.py"


def _example():
    """The example's module, loaded as ``grapeshot run --app`` loads it."""
    from grapeshot.apps.user import load_user_app

    return sys.modules[load_user_app(f"{GRAY_SCOTT}:make_gray_scott").factory.__module__]


def test_a_wrapped_neighbour_is_the_partition_across_the_edge() -> None:
    boxes = partition_boxes((12, 10), (3, 2), 1, (True, False))
    corner = boxes[0]  # index (0, 0)
    assert corner.neighbour((-1, 0)) == 4  # (2, 0): wrapped on axis 0
    assert corner.neighbour((0, -1)) is None  # axis 1 has walls
    assert corner.neighbour((-1, 1)) == 5
    assert not corner.at_wall(0, -1) and corner.at_wall(1, -1)
    alone = partition_boxes((8, 8), (1, 1), 1, (True, True))[0]
    assert {alone.neighbour(o) for o in neighbour_offsets(2)} == {0}  # its own neighbour
    assert partition_boxes((8, 8), (2, 2), 1, (False, False)) == partition_boxes((8, 8), (2, 2), 1)


@pytest.mark.parametrize("periodic", [(True, True), (True, False), (False, True)])
def test_the_halo_graph_knows_the_wrapped_neighbours(periodic) -> None:
    """The simulator's and the metrics' halo graph pairs the partitions the executors do
    (a partition's exchange with itself is no message)."""
    parts = (4, 3)
    boxes = partition_boxes((16, 12), parts, 1, periodic)
    pairs = {
        (b.part, q)
        for b in boxes
        for o in neighbour_offsets(2)
        if (q := b.neighbour(o)) is not None and q != b.part
    }
    graph = grid_halo((16, 12), parts, periodic=periodic)
    src = np.repeat(np.arange(len(boxes)), np.diff(graph.indptr))
    assert set(zip(src.tolist(), graph.indices.tolist(), strict=True)) == pairs


@pytest.mark.parametrize("bad", [(True,), (True, True, True), ("yes", "no"), 1])
def test_a_periodic_that_is_not_one_flag_per_axis_is_refused(bad) -> None:
    with pytest.raises(InputError, match=r"periodic: got .*; expected one True or False per axis"):
        partition_boxes((8, 8), (2, 2), 1, bad)


@pytest.mark.parametrize(
    ("parts", "cells"),
    [((1, 1), (40, 36)), ((2, 1), (40, 36)), ((4, 4), (40, 36)), ((3, 5), (40, 36)),
     ((16, 16), (64, 48))],
)  # fmt: skip
def test_serial_gray_scott_is_np_roll_bit_for_bit(parts, cells) -> None:
    example = _example()
    run = run_serial(example.make_gray_scott(parts, cells), 5)
    assert run.digest() == fields_digest(example.reference(cells, 5))


SCRIPT = """
import json
from mpi4py import MPI
from grapeshot.apps.user import load_user_app
make_gray_scott = load_user_app({spec!r}).factory
from grapeshot.runtime.driver import run_program
comm = MPI.COMM_WORLD
digests = []
for parts, strategy, executor, threads, shm in {cases!r}:
    out = run_program(make_gray_scott(parts, (40, 36)), steps=5, strategy=strategy, seed=3,
                      comm=comm, executor=executor, threads=threads, shm=shm)
    if out is not None:
        digests.append(out.summary["fields_digest"])
if comm.rank == 0:
    print(json.dumps(digests))
"""


@pytest.mark.mpi
def test_every_executor_on_two_ranks_gives_np_roll_bits() -> None:
    cases = [
        ((2, 1), "geometric", "reference", 1, True),
        ((1, 2), "geometric", "reference", 1, True),
        ((4, 4), "birdshot", "task", 1, True),
        ((3, 5), "cyclic", "task", 1, False),
        ((1, 2), "geometric", "task", 1, True),  # each rank's partition spans axis 0
        ((4, 4), "birdshot", "task", 2, True),
    ]
    script = SCRIPT.format(spec=f"{GRAY_SCOTT}:make_gray_scott", cases=cases)
    proc = run_mpi(2, ["-c", script], work=10)
    digests = json.loads(proc.stdout.strip().splitlines()[-1])
    assert digests == [fields_digest(_example().reference((40, 36), 5))] * len(cases)


@pytest.mark.mpi
def test_grapeshot_run_takes_a_periodic_user_program() -> None:
    proc = run_mpi(
        2,
        ["-m", "grapeshot.cli.main", "run", "--app", f"{GRAY_SCOTT}:make_gray_scott",
         "--parts", "4,4", "--cells", "40,36", "--steps", "5", "--json"],
        timeout=300,
    )  # fmt: skip
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["fields_digest"] == fields_digest(_example().reference((40, 36), 5))
