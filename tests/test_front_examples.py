"""The example programs of issue 41 (``examples/program/front.py``, ``allen_cahn.py``): the
same bits from ``grapeshot run`` on the serial executor, on 2 MPI ranks, and from the
hand-written mpi4py block code the benchmarks take as their baseline
(``benchmarks/mpi4py_block.py``); and the loads they are there to show (a front in one
corner, a uniform plate)."""

from __future__ import annotations

import importlib.util
import json
import math
import sys

import numpy as np
import pytest

from grapeshot.apps.user import load_user_app
from grapeshot.runtime.serial import run_serial
from tests.cli.helpers import run_main
from tests.mpi_harness import ROOT, run_mpi

PROGRAMS = ROOT / "examples" / "program"
#: The block code's program name -> grapeshot's ``--app``.
APPS = {
    "front": f"{PROGRAMS / 'front.py'}:make_front",
    "allen-cahn": f"{PROGRAMS / 'allen_cahn.py'}:make_allen_cahn",
}
#: Small enough for a test, large enough that the front crosses partitions and a block.
CELLS, STEPS = (96, 80), 6
SIZE = ["--cells", f"{CELLS[0]},{CELLS[1]}", "--steps", str(STEPS)]


def _block_code():
    """``benchmarks/mpi4py_block.py`` as a module (benchmarks/ is not a package)."""
    name = "mpi4py_block"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _serial_digest(app: str, parts=(1, 1), cells=CELLS, steps=STEPS) -> str:
    return run_serial(load_user_app(app).make_program(parts, cells, 0), steps).digest()


@pytest.mark.parametrize("name", sorted(APPS))
def test_grapeshot_run_serial_gives_the_same_bits_on_any_partitioning(name: str) -> None:
    digests = set()
    for parts in ("1,1", "4,4", "3,5"):
        result = run_main(
            "run", "--app", APPS[name], "--executor", "serial", "--parts", parts, *SIZE, "--json"
        )
        assert result.code == 0, result.err
        summary = result.json()
        assert summary["app"] == name and summary["steps"] == STEPS
        digests.add(summary["fields_digest"])
    assert digests == {_serial_digest(APPS[name])}


@pytest.mark.mpi
@pytest.mark.parametrize("name", sorted(APPS))
@pytest.mark.parametrize(("strategy", "parts"), [("birdshot", "8,8"), ("geometric", "2,1")])
def test_two_ranks_give_the_serial_bits(name: str, strategy: str, parts: str) -> None:
    proc = run_mpi(
        2,
        ["-m", "grapeshot.cli.main", "run", "--app", APPS[name], "--parts", parts,
         "--strategy", strategy, *SIZE, "--json"],
        timeout=300,
    )  # fmt: skip
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["ranks"] == 2 and summary["executor"] == "task"
    assert summary["fields_digest"] == _serial_digest(APPS[name])


@pytest.mark.mpi
@pytest.mark.parametrize(
    ("name", "split"),
    [("front", "2,1"), ("front", "1,2"), ("allen-cahn", "2,1"), ("allen-cahn", "1,2"),
     ("heat", "2,1")],
)  # fmt: skip
def test_the_mpi4py_block_code_computes_grapeshot_s_fields(name: str, split: str) -> None:
    proc = run_mpi(
        2,
        ["benchmarks/mpi4py_block.py", name, *SIZE, "--split", split, "--json"],
        work=10,
    )
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    app = APPS.get(name, f"{PROGRAMS / 'heat.py'}:make_heat")
    assert summary["fields_digest"] == _serial_digest(app)
    assert summary["split"] == [int(x) for x in split.split(",")]
    assert len(summary["busy"]) == 2 and summary["wall_time"] > 0


def test_the_block_code_returns_the_fields_and_refuses_a_split_for_other_ranks() -> None:
    block = _block_code()
    result = block.run_block("front", (48, 40), 3, (1, 1))  # this process: 1 rank
    program = load_user_app(APPS["front"]).make_program((2, 2), (48, 40), 0)
    assert np.array_equal(result.fields["u"], run_serial(program, 3).fields()["u"])
    with pytest.raises(ValueError, match="makes 2 blocks; expected 1"):
        block.run_block("front", (48, 40), 3, (2, 1))
    with pytest.raises(ValueError, match="expected one of front, allen-cahn, heat"):
        block.get_program("fronts")


def test_the_front_loads_one_corner_and_allen_cahn_every_partition_alike() -> None:
    parts, cells = (4, 4), (128, 64)
    per_part = math.prod(c // p for c, p in zip(cells, parts, strict=True))
    front = run_serial(load_user_app(APPS["front"]).make_program(parts, cells, 0), 2)
    work = front.work[-1].reshape(parts)
    # The front starts around cell (0, 0): the partitions it crosses do many times the work
    # of a cell each; the far corner's partitions, ahead of it, one per cell.
    assert work[0, 0] > 5 * per_part and work[-1, -1] == per_part
    assert (work >= per_part).all()
    uniform = run_serial(load_user_app(APPS["allen-cahn"]).make_program(parts, cells, 0), 2)
    assert (uniform.work == uniform.work[0, 0]).all() and uniform.work[0, 0] > per_part


def test_the_seed_shapes_the_front() -> None:
    make = load_user_app(APPS["front"]).make_program
    fields = [run_serial(make((2, 2), (64, 48), seed), 1).fields()["u"] for seed in (0, 1, 0)]
    assert not np.array_equal(fields[0], fields[1])
    assert np.array_equal(fields[0], fields[2])
