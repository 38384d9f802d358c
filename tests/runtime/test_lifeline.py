"""Ctrl-C, SIGTERM or a dead launcher end every rank of ``grapeshot run``, start-up included.

The runs below would last hours: they end only because of the signal or the lost launcher.
Every wait has a generous guard (a hang fails the test); nothing is timed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grapeshot.runtime.lifeline import SIGNALS, lifeline
from tests.mpi_harness import ROOT, alive, child_pids, mpiexec

#: A run of many hours: 1024² cells per rank-pair, 10⁶ steps.
FOREVER = ["-m", "grapeshot.cli.main", "run", "swe", "--parts", "8,8", "--cells", "1024",
           "--steps", "1000000", "--timeout", "600"]  # fmt: skip
GUARD = 60.0  # seconds before a wait counts as a hang


def _has_mpi(pid: int) -> bool:
    try:
        return "libmpi" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def _wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + GUARD
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"hung: {what}")
        time.sleep(0.05)


def _launch(ranks: int = 2) -> tuple[subprocess.Popen[str], int, list[int]]:
    """Start FOREVER under mpiexec; return it, the launcher's proxy and the ranks."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    proc = subprocess.Popen(
        [mpiexec(), "-n", str(ranks), sys.executable, *FOREVER],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
    )  # fmt: skip
    _wait_for(lambda: len(child_pids(proc.pid)) == 1, "the launcher's proxy")
    proxy = child_pids(proc.pid)[0]
    _wait_for(lambda: len(child_pids(proxy)) == ranks, "the ranks")
    return proc, proxy, child_pids(proxy)


def _cleanup(*pids: int) -> None:
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def _interrupt(started: bool) -> None:
    proc, proxy, ranks = _launch()
    try:
        # Start-up: as soon as MPI is initialised (the program is being built, placed and
        # broadcast); or a running run, past its first steps.
        _wait_for(lambda: all(_has_mpi(r) for r in ranks), "MPI initialised on every rank")
        if started:
            cpu = lambda r: sum(map(int, Path(f"/proc/{r}/stat").read_text().split()[13:15]))  # noqa: E731
            _wait_for(lambda: all(cpu(r) > 300 for r in ranks), "the ranks computing")
        proc.send_signal(signal.SIGINT)  # what Ctrl-C in the terminal does
        _, err = proc.communicate(timeout=GUARD)
        _wait_for(lambda: not any(alive(r) for r in ranks), "every rank ended")
    finally:
        _cleanup(proc.pid, proxy, *ranks)
    assert proc.returncode != 0
    ours = [line for line in err.splitlines() if line.startswith("grapeshot: ")]
    line = "grapeshot: error: interrupted (Ctrl-C); every rank stops"
    if started:
        # The steps running, every rank stops at the next step boundary (docs/checkpoint.md).
        assert proc.returncode == 128 + signal.SIGINT
        assert len(ours) == 1 and ours[0].startswith(
            "grapeshot: interrupted (Ctrl-C); every rank stopped after step "
        ), err
    else:
        # Inside MPI_Init (which holds the GIL) the kernel's default action ends a rank: no
        # line.
        assert ours in ([], [line]), err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


@pytest.mark.mpi
def test_ctrl_c_at_start_up_ends_every_rank() -> None:
    _interrupt(started=False)


@pytest.mark.mpi
def test_ctrl_c_during_the_run_ends_every_rank() -> None:
    _interrupt(started=True)


@pytest.mark.mpi
def test_a_dead_launcher_ends_every_rank() -> None:
    proc, proxy, ranks = _launch()
    try:
        # As soon as each rank has its watchdog: the ranks are importing mpi4py, where
        # MPI_Init holds the GIL and then waits for a launcher that will never answer.
        _wait_for(lambda: all(child_pids(r) for r in ranks), "a watchdog on every rank")
        os.kill(proxy, signal.SIGKILL)  # the launcher's process on this node dies
        _wait_for(lambda: not any(alive(r) for r in ranks), "every orphaned rank ended")
        proc.communicate(timeout=GUARD)
    finally:
        _cleanup(proc.pid, proxy, *ranks)


def test_a_signal_ends_one_process_with_one_line() -> None:
    code = (
        "import os, signal, time\n"
        "from grapeshot.runtime.lifeline import lifeline\n"
        "with lifeline(rank=0):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    time.sleep(600)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=GUARD)  # fmt: skip
    assert proc.returncode == 128 + signal.SIGTERM
    assert proc.stderr == "grapeshot: error: terminated (SIGTERM); every rank stops\n"


def test_the_block_restores_the_process_handling() -> None:
    before = {s: signal.getsignal(s) for s in SIGNALS}
    with lifeline(rank=3):
        assert signal.getsignal(signal.SIGINT) is not before[signal.SIGINT]
    assert {s: signal.getsignal(s) for s in SIGNALS} == before
    assert signal.set_wakeup_fd(-1) == -1  # no wakeup descriptor left behind


def test_a_start_that_outlasts_its_deadline_ends_with_one_line() -> None:
    code = (
        "import time\n"
        "from grapeshot.runtime.lifeline import lifeline\n"
        "with lifeline() as guard:\n"
        "    with guard.deadline(0.5, 'while starting'):\n"
        "        pass\n"  # a start that finishes in time leaves the run alone
        "    with guard.deadline(0.5, 'while starting'):\n"
        "        time.sleep(600)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=GUARD, cwd=ROOT)  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr == (
        "grapeshot: error: no progress for 0.5 s while starting (--timeout); every rank stops\n"
    )


def test_the_watchdog_keeps_the_deadline_where_c_code_holds_the_gil() -> None:
    """As MPI_Init does, a C call holds the GIL past the start's deadline: the rank's own
    deadline thread cannot run, the watchdog process ends it with the one line. A span that
    ends in time clears the watchdog's deadline: the process then outlives it."""
    held = (
        "import ctypes, time\n"
        "from grapeshot.runtime.lifeline import lifeline\n"
        "with lifeline() as guard:\n"
        "    with guard.deadline(1.0, 'while starting'):\n"
        "        with guard.uncaught():\n"
        "            ctypes.PyDLL(None).sleep({seconds})\n"  # PyDLL: the GIL stays held
        "    time.sleep(2.0)\n"  # past the deadline, outside it
    )
    run = lambda seconds: subprocess.run(  # noqa: E731
        [sys.executable, "-c", held.format(seconds=seconds)], capture_output=True, text=True,
        timeout=GUARD, cwd=ROOT,
    )  # fmt: skip
    stuck = run(600)
    assert stuck.returncode == -signal.SIGKILL
    assert stuck.stderr == (
        "grapeshot: error: no progress for 1 s while starting (--timeout); every rank stops\n"
    )
    in_time = run(0)
    assert (in_time.returncode, in_time.stderr) == (0, "")


@pytest.mark.mpi
def test_a_rank_whose_peer_died_before_mpi_started_ends_at_the_deadline() -> None:
    """One rank fails before MPI_Init (a bad import, a broken install); its peer waits in
    MPI_Init, the GIL held, for a rank that never comes: the start's deadline still ends it
    (before, it waited for ever)."""
    code = (
        "import os, sys\n"
        "from grapeshot.runtime.lifeline import lifeline\n"
        "if os.environ['PMI_RANK'] == '1':\n"
        "    sys.exit(3)\n"
        "with lifeline() as guard:\n"
        "    with guard.deadline(2.0, 'while starting'):\n"
        "        with guard.uncaught():\n"
        "            from mpi4py import MPI\n"
    )
    started = time.monotonic()
    proc = subprocess.run([mpiexec(), "-n", "2", sys.executable, "-c", code],
                          capture_output=True, text=True, timeout=GUARD, cwd=ROOT)  # fmt: skip
    assert proc.returncode != 0 and time.monotonic() - started < GUARD
    line = "grapeshot: error: no progress for 2 s while starting (--timeout); every rank stops"
    assert [x for x in proc.stderr.splitlines() if x.startswith("grapeshot: ")] == [line]


@pytest.mark.mpi
def test_a_bad_timeout_and_a_usage_error_under_mpiexec_print_once() -> None:
    for extra in (["--timeout", "-1"], ["--partz", "2"]):
        cmd = [mpiexec(), "-n", "2", sys.executable, "-m", "grapeshot.cli.main", "run", "swe",
               "--steps", "2", *extra]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=GUARD, cwd=ROOT)
        assert proc.returncode == 2
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
