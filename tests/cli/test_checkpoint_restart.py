"""``grapeshot run --checkpoint`` survives a SIGTERM, and ``--restart`` goes on elsewhere.

Each run below is stopped the way Slurm stops a job: SIGTERM to the launcher (``mpiexec``),
which forwards it to every rank. The killed run must exit 143 having written a checkpoint at
the step it reached, removed the shared-memory files its ranks had mapped, and the restart
on three ranks, placed by another strategy, must give the fields of a run never interrupted
(``fields_digest``). Every wait has a guard (a hang fails the test); nothing is timed.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.mpi_harness import ROOT, child_pids, mpiexec, run_mpi

GUARD = 90.0  # seconds before a wait counts as a hang
RUN = ["-m", "grapeshot.cli.main", "run"]
GRAY_SCOTT = str(ROOT / "examples" / "program" / "gray_scott.py") + ":make_gray_scott"
#: The stop line: ``... every rank stopped after step N of M; checkpoint ...``.
STOPPED = re.compile(r"^grapeshot: terminated \(SIGTERM\); every rank stopped after step (\d+)")


def _shm_mapped(pid: int) -> set[str]:
    """The /dev/shm files process ``pid`` has mapped (MPICH's segments, our windows)."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return set()
    return {
        line.split()[-1]
        for line in maps.splitlines()
        if "/dev/shm/" in line and not line.endswith("(deleted)")
    }


def _wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + GUARD
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"hung: {what}")
        time.sleep(0.02)


def _digest(args: list[str], ranks: int) -> dict:
    return json.loads(run_mpi(ranks, [*RUN, *args, "--json"], timeout=GUARD).stdout)


def _terminated(
    args: list[str], checkpoint: Path, *, one_rank: bool = False
) -> tuple[int, str, set[str]]:
    """Start ``run ARGS`` on 2 ranks, SIGTERM ``mpiexec`` (or, ``one_rank``, rank 1's process
    alone) once the first checkpoint is whole; the exit status, stderr and the shm files the
    ranks had mapped."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    proc = subprocess.Popen(
        [mpiexec(), "-n", "2", sys.executable, *RUN, *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
    )  # fmt: skip
    mapped: set[str] = set()
    try:

        def checkpointed() -> bool:
            for proxy in child_pids(proc.pid):
                for rank in child_pids(proxy):
                    mapped.update(_shm_mapped(rank))
            if proc.poll() is not None:
                pytest.fail(f"the run ended before its first checkpoint: {proc.stderr.read()}")
            return checkpoint.exists()

        _wait_for(checkpointed, "the first checkpoint")
        if one_rank:
            ranks = sorted(r for proxy in child_pids(proc.pid) for r in child_pids(proxy))
            os.kill(ranks[-1], signal.SIGTERM)
        else:
            proc.send_signal(signal.SIGTERM)  # as Slurm does at the walltime
        _, err = proc.communicate(timeout=GUARD)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, err, mapped


def _stop_restart_compare(tmp_path: Path, program: list[str]) -> None:
    ck = tmp_path / "ck.h5"
    code, err, mapped = _terminated(
        [*program, "--steps", "100000", "--checkpoint", str(ck), "--checkpoint-every", "10"], ck
    )
    assert code == 128 + signal.SIGTERM, err
    ours = [line for line in err.splitlines() if line.startswith("grapeshot: ")]
    assert len(ours) == 1 and STOPPED.match(ours[0]) and str(ck) in ours[0], err
    assert "Traceback" not in err
    step = int(STOPPED.match(ours[0]).group(1))
    assert step >= 10
    # MPICH's segments were mapped while it ran, and none is left behind.
    assert any("mpich_shm_" in f for f in mapped), mapped
    assert not [f for f in mapped if Path(f).exists()]
    # Only the checkpoint of the stop is left: the index and one file per rank.
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "ck.h5") == sorted(
        p.name for p in tmp_path.glob(f"ck.h5.s{step}-*.rank[01].h5")
    )
    total = step + 7
    restarted = _digest(
        ["--restart", str(ck), "--steps", str(total), "--strategy", "cyclic"], ranks=3
    )
    assert (restarted["ranks"], restarted["first_step"], restarted["steps"]) == (3, step, 7)
    whole = _digest([*program, "--steps", str(total)], ranks=2)
    assert restarted["simulated_time"] == whole["simulated_time"]
    assert restarted["fields_digest"] == whole["fields_digest"]


@pytest.mark.mpi
def test_swe_stopped_by_sigterm_goes_on_on_three_ranks(tmp_path: Path) -> None:
    _stop_restart_compare(tmp_path, ["swe", "--cells", "96,96", "--parts", "4,4"])


@pytest.mark.mpi
def test_a_users_program_stopped_by_sigterm_goes_on(tmp_path: Path) -> None:
    _stop_restart_compare(tmp_path, ["--app", GRAY_SCOTT, "--parts", "4,4", "--cells", "96,96"])


@pytest.mark.mpi
def test_sph_particles_stopped_by_sigterm_go_on(tmp_path: Path) -> None:
    _stop_restart_compare(tmp_path, ["sph", "--parts", "4,4"])


@pytest.mark.mpi
def test_a_sigterm_to_one_rank_stops_every_rank_at_the_same_step(tmp_path: Path) -> None:
    ck = tmp_path / "ck.h5"
    code, err, _ = _terminated(
        ["swe", "--cells", "64,64", "--parts", "4,4", "--steps", "100000", "--checkpoint",
         str(ck), "--checkpoint-every", "10"],
        ck,
        one_rank=True,
    )  # fmt: skip
    assert code == 128 + signal.SIGTERM, err
    ours = [line for line in err.splitlines() if line.startswith("grapeshot: ")]
    assert len(ours) == 1 and STOPPED.match(ours[0]), err
    step = int(STOPPED.match(ours[0]).group(1))
    # Both ranks wrote the checkpoint of that step, and the index names their files.
    assert len(list(tmp_path.glob(f"ck.h5.s{step}-*.rank[01].h5"))) == 2


@pytest.mark.mpi
def test_a_checkpoint_of_another_program_or_grid_is_refused(tmp_path: Path) -> None:
    ck = tmp_path / "ck.h5"
    # Rank 0's clock says a checkpoint is due at every boundary (read one step later), and
    # every third step is one: the ranks write them together, at the same steps.
    written = _digest(
        ["swe", "--cells", "32,32", "--parts", "2,2", "--steps", "6", "--checkpoint", str(ck),
         "--checkpoint-every", "3", "--checkpoint-seconds", "1e-9"],
        ranks=2,
    )["checkpoints"]  # fmt: skip
    steps = [c["step"] for c in written]
    assert {3, 6} <= set(steps) and set(steps) - {3, 6}, steps
    assert len(list(tmp_path.glob("ck.h5.s6-*.rank[01].h5"))) == 2
    for args, differs in (
        (["swe", "--cells", "64,64"], "cells 32,32 in the checkpoint, 64,64 here"),
        (["--app", GRAY_SCOTT], "app swe in the checkpoint, gray_scott.py:make_gray_scott here"),
        (["swe", "--seed", "3"], "seed 0 in the checkpoint, 3 here"),
    ):
        # Refused before any step, on any number of ranks: one is enough.
        proc = run_mpi(1, [*RUN, *args, "--restart", str(ck)], timeout=GUARD, check=False)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"grapeshot: error: --restart {ck}: ")
        assert differs in lines[0], lines[0]
