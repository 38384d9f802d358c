"""`grapeshot run` refuses bad input under mpiexec with one line from rank 0 and exit 2."""

from __future__ import annotations

import pickle

import pytest

from grapeshot.model.errors import InputError
from grapeshot.model.program import SimulationError
from tests.mpi_harness import run_mpi

pytestmark = pytest.mark.mpi

CASES = [
    (2, ["sph", "--steps", "3", "--strategy", "foo"], "--strategy: unknown strategy 'foo'"),
    (3, ["swe", "--parts", "1,2", "--steps", "2"], "--parts: gives 2 partitions to 3 ranks"),
    (2, ["swe", "--executor", "serial", "--steps", "2"], "--executor serial: runs on 1 rank"),
    (3, ["swe", "--executor", "reference", "--parts", "2,2"], "--executor reference: needs one"),
    (2, ["swe", "--steps", "0"], "--steps: got 0"),
    (2, ["swe", "--threads", "0"], "--threads: got 0"),
]


@pytest.mark.parametrize(("ranks", "args", "message"), CASES)
def test_a_refusal_is_one_line_from_rank_0(ranks, args, message) -> None:
    proc = run_mpi(ranks, ["-m", "grapeshot.cli.main", "run", *args], check=False)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("grapeshot: error: "), proc.stderr
    assert message in lines[0]


def test_errors_pickle_as_their_fields() -> None:
    again = pickle.loads(pickle.dumps(InputError("--x", "got 1", "a y")))
    assert (again.where, again.problem, again.expected) == ("--x", "got 1", "a y")
    unstable = pickle.loads(pickle.dumps(SimulationError(3, 4, "stage1", "h < 0")))
    assert isinstance(unstable, SimulationError) and unstable.part == 4
    assert str(unstable) == "step 3, partition 4, phase 'stage1': h < 0"
