"""The MPI harness's deadline: a hung run fails with what its ranks printed, and leaves no
process of the run behind."""

from __future__ import annotations

import re
import sys

import pytest

from tests.mpi_harness import alive, deadline, mpiexec, run_ranks, slowdown

#: Each rank says who it is, on both streams, then hangs (as a rank waiting for ever in an MPI
#: call would). Its pid is on the stderr line that says it waits: mpiexec forwards each
#: stream on its own, and a test killing the run once it times out may find one rank's
#: stdout line not forwarded yet (it happened under load) where its stderr line was.
HANG = (
    "import os, sys, time\n"
    "rank = os.environ['PMI_RANK']\n"
    "print(f'rank {rank} started', flush=True)\n"
    "print(f'rank {rank} pid {os.getpid()} still waiting', file=sys.stderr, flush=True)\n"
    "time.sleep(600)\n"
)


@pytest.mark.mpi
def test_a_hung_run_fails_with_its_ranks_output_and_leaves_no_rank() -> None:
    cmd = [mpiexec(), "-n", "2", sys.executable, "-c", HANG]
    limit = 5.0 * slowdown(2)  # time for both ranks to start and print, on a loaded machine too
    with pytest.raises(pytest.fail.Exception) as failed:
        run_ranks(cmd, limit)
    message = str(failed.value)
    assert f"did not finish within its deadline of {limit:.0f} s" in message, message
    assert "started" in message.split("--- stderr ---")[0], message  # stdout is reported
    waiting = dict(re.findall(r"rank (\d+) pid (\d+) still waiting", message))
    assert sorted(waiting) == ["0", "1"], message
    pids = [int(p) for p in waiting.values()]
    assert not [p for p in pids if alive(p)], "a rank outlived its run"


@pytest.mark.parametrize("load", [0.0, 6.0])
def test_the_deadline_grows_with_ranks_steps_work_and_load(load: float) -> None:
    base = deadline(2, ["run", "swe", "--steps", "2"], load=load)
    assert deadline(2, ["run", "swe", "--steps=2"], load=load) == base
    assert deadline(2, ["run", "swe", "--steps", "200"], load=load) > base
    assert deadline(2, ["run", "swe", "--steps", "2"], work=60, load=load) > base
    assert deadline(8, ["run", "swe", "--steps", "2"], load=load) > base  # 8 ranks, 2 cores
    assert deadline(2, ["run", "swe", "--steps", "2"], load=load + 8) > base
