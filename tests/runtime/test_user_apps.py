"""A user's own program through `grapeshot run --app` on real ranks: the same bits as the
serial executor for any placement and rank count, and every mistake in the user's module one
line naming the file and the factory, exit 2, under mpiexec too."""

from __future__ import annotations

import json

import pytest

from grapeshot.runtime.serial import run_serial
from tests.mpi_harness import ROOT, run_mpi

pytestmark = pytest.mark.mpi

HEAT = ROOT / "examples" / "program" / "heat.py"
RUN = ["-m", "grapeshot.cli.main", "run"]


def _serial_digest(parts, cells, steps, factory="make_heat") -> str:
    from grapeshot.apps.user import load_user_app

    program = load_user_app(f"{HEAT}:{factory}").make_program(parts, cells, 0)
    return run_serial(program, steps).digest()


def _run(n: int, *args: str) -> dict:
    proc = run_mpi(n, [*RUN, *args, "--json"], work=10)
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    ("n", "strategy", "parts", "threads"),
    [
        (2, "birdshot", "8,8", 1),
        (2, "cyclic", "6,5", 1),
        (3, "sfc", "8,4", 1),
        (2, "birdshot", "8,8", 2),
        (2, "geometric", "2,1", 1),
    ],
)
def test_a_user_program_gives_the_serial_bits(n, strategy, parts, threads) -> None:
    shape = tuple(int(x) for x in parts.split(","))
    summary = _run(
        n, "--app", f"{HEAT}:make_heat", "--parts", parts, "--cells", "96,80", "--steps", "6",
        "--strategy", strategy, "--threads", str(threads),
    )  # fmt: skip
    assert summary["fields_digest"] == _serial_digest(shape, (96, 80), 6)
    assert summary["app"] == "heat" and summary["ranks"] == n
    assert summary["setup_seconds"] > 0 and summary["gather_seconds"] > 0


def _failing_program(tmp_path, body: str) -> str:
    path = tmp_path / "bad.py"
    path.write_text(body)
    return str(path)


KERNEL_RAISES = """
import numpy as np
from numba import njit
from grapeshot.model.program import Phase, Program

@njit(cache=False, nogil=True)
def kernel(u, box, params):
    if box.part == 5 and params[0] >= 2.0:
        raise ValueError("negative temperature")
    u[box.ghost, box.ghost] += 1.0

class Bad(Program):
    name = "bad"
    def __init__(self, parts, cells):
        self.parts_shape, self.domain_shape = parts, cells or (16, 16)
        self.phases = (Phase("diffuse", kernel, fields=("u",), params=lambda c: [c.step]),)
    def init_block(self, box):
        return {"u": np.zeros(box.padded_shape)}
    def output_fields(self, block, box):
        return {"u": block["u"][box.interior()].copy()}

def make(parts, cells=None, seed=0):
    return Bad(parts, cells)
"""


@pytest.mark.parametrize(
    ("body", "factory", "message"),
    [
        ("import numpy\nx = 1 +\n", "make", "bad.py:make: importing"),
        ("def other(parts, cells, seed):\n    pass\n", "make", "has no make; expected a function"),
        ("def make(parts, cells, seed):\n    return 42\n", "make", "returned int"),
        ("def make(parts, cells, seed):\n    raise RuntimeError('no licence')\n", "make",
         "raised RuntimeError: no licence"),
    ],
)  # fmt: skip
def test_a_broken_module_is_one_line_from_rank_0(tmp_path, body, factory, message) -> None:
    path = _failing_program(tmp_path, body)
    proc = run_mpi(2, [*RUN, "--app", f"{path}:{factory}", "--steps", "2"], check=False)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("grapeshot: error: "), proc.stderr
    assert message in lines[0] and "bad.py" in lines[0]


def _aborted_with_2(proc) -> bool:
    """Exit status 2, MPI_Abort's code; or MPICH's launcher, told of the abort, killed the
    aborting rank (SIGKILL) before it finished exiting with 2 and said so on stdout (a race
    inside MPICH's abort that a loaded machine makes likely)."""
    return proc.returncode == 2 or (proc.returncode == 9 and "Killed (signal 9)" in proc.stdout)


def test_a_kernel_that_raises_names_the_file_factory_partition_and_step(tmp_path) -> None:
    path = _failing_program(tmp_path, KERNEL_RAISES)
    args = [*RUN, "--app", f"{path}:make", "--parts", "4,4", "--steps", "4", "--strategy"]
    proc = run_mpi(2, [*args, "cyclic"], check=False)
    assert _aborted_with_2(proc), (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "bad.py:make: partition 5, step 2, phase 'diffuse' failed: ValueError" in lines[0]
    assert "negative temperature" in lines[0]
    # The serial executor says the same, on one rank.
    proc = run_mpi(1, [*args, "cyclic", "--executor", "serial"], check=False)
    assert proc.returncode == 2, proc.stderr
    assert "bad.py:make: partition 5, step 2, phase 'diffuse' failed: ValueError" in proc.stderr
