"""Run a script on real MPI ranks (the venv's mpiexec) and return rank 0's output.

Every run has a deadline computed from what it runs (:func:`deadline`: the ranks, the steps,
the work a test states, and how busy the machine is when it starts), not one constant: a
4-rank run on a machine other engineers load takes several times what it takes alone, and a
fixed 240 s once failed a passing test there. A run past its deadline fails the test with
what every rank printed so far, after the whole process group (``mpiexec``, its proxies,
every rank) is killed, so no rank is left spinning in an MPI call.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Seconds one rank takes to start on an idle core: the interpreter, grapeshot's and numba's
#: imports, numba's cache, MPI_Init (a 2-rank `grapeshot run swe --steps 2` takes 4-6 s in all
#: on this machine's idle cores; the rest is margin).
START_SECONDS = 15.0
#: Seconds one step of a test-sized run (a few partitions of 32²-128² cells) takes a rank.
STEP_SECONDS = 0.5
#: How many times the estimate a run may take before it counts as hung.
SAFETY = 4.0
#: Seconds between SIGTERM to a hung run's process group and SIGKILL.
GRACE = 5.0


def child_pids(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (read from ``/proc``): mpiexec's proxies, a
    proxy's ranks."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (exists and is not a zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = f"/proc/{pid}/stat"
    return not (os.path.exists(stat) and Path(stat).read_text().rsplit(")", 1)[1].split()[0] == "Z")


def mpiexec() -> str:
    """The mpiexec next to this Python (the mpich wheel's), else one on PATH."""
    here = Path(sys.executable).parent / "mpiexec"
    found = str(here) if here.exists() else shutil.which("mpiexec")
    if found is None:
        pytest.fail("no mpiexec: install the project with `make install` (mpich wheel)")
    return found


def _steps(args: Sequence[str]) -> int:
    """The ``--steps N`` (or ``--steps=N``) a command line asks for; 0 without one."""
    for i, arg in enumerate(args):
        value = args[i + 1] if arg == "--steps" and i + 1 < len(args) else None
        if arg.startswith("--steps="):
            value = arg.split("=", 1)[1]
        if value is not None and value.isdigit():
            return int(value)
    return 0


def slowdown(ranks: int, load: float | None = None) -> float:
    """How many times slower than alone ``ranks`` busy processes run here: the machine's
    1-minute load average (``load``, else now's) plus the ranks, over its cores (at least 1)."""
    cores = os.cpu_count() or 1
    return max(1.0, ((os.getloadavg()[0] if load is None else load) + ranks) / cores)


def deadline(n: int, args: Sequence[str], *, work: float = 0.0, load: float | None = None) -> float:
    """Seconds ``mpiexec -n n python ARGS`` may take before it counts as hung.

    Parameters
    ----------
    n
        Ranks.
    args
        The ranks' command line; its ``--steps`` counts :data:`STEP_SECONDS` each.
    work
        Seconds of computing a rank does beyond start-up and steps, on an idle core (a script
        running many cases states it: its measured time alone).
    load
        The machine's load average to assume; default, the one now.

    Returns
    -------
    float
        :data:`SAFETY` × :func:`slowdown` × (start-up + steps + work), in seconds.
    """
    return SAFETY * slowdown(n, load) * (START_SECONDS + STEP_SECONDS * _steps(args) + work)


def _end_group(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """Stop every process of ``proc``'s group (TERM, then KILL after :data:`GRACE` s); return
    what they wrote. The group is the launcher's: ``mpiexec``, its proxies, the ranks."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            out, err = proc.communicate(timeout=GRACE)
            break
        except subprocess.TimeoutExpired:
            continue
    else:
        out, err = proc.communicate()  # the pipes close when the last of the group is gone
    for _ in range(int(GRACE / 0.1)):  # the group's members other than the launcher
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    return out or "", err or ""


def run_ranks(
    cmd: list[str], limit: float, *, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` (an ``mpiexec`` line) in a process group of its own; fail the test if it
    outlasts ``limit`` seconds, with every rank's output so far and the group killed."""
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd,
        start_new_session=True,  # one group to kill: mpiexec, its proxies, the ranks
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        out, err = _end_group(proc)
        why = f"did not finish within its deadline of {limit:.0f} s"
        pytest.fail(_report(cmd, why, out, err), pytrace=False)
    except pytest.fail.Exception as exc:  # pytest-timeout's alarm, for the whole test
        out, err = _end_group(proc)
        pytest.fail(_report(cmd, str(exc).splitlines()[0], out, err), pytrace=False)
    except BaseException:  # Ctrl-C: leave no rank behind
        _end_group(proc)
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _report(cmd: list[str], why: str, out: str, err: str) -> str:
    return (
        f"{' '.join(cmd)}\n{why} (load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
        f"now); every process of the run was killed. What the ranks printed:\n"
        f"--- stdout ---\n{out}\n--- stderr ---\n{err}"
    )


def run_mpi(
    n: int,
    args: list[str],
    *,
    work: float = 0.0,
    timeout: float | None = None,
    check: bool = True,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``mpiexec -n N python ARGS`` from the repository root, within :func:`deadline`.

    ``work`` is what the ranks compute beyond start-up and ``--steps``, in seconds on an idle
    core (see :func:`deadline`); ``timeout``, if given, is a floor under the deadline; ``env``,
    variables set for the ranks besides. A run past its deadline fails the test with the
    ranks' output (:func:`run_ranks`).
    """
    env = dict(
        os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", **(env or {})
    )
    cmd = [mpiexec(), "-n", str(n), sys.executable, *args]
    limit = max(deadline(n, args, work=work), timeout or 0.0)
    proc = run_ranks(cmd, limit, env=env, cwd=ROOT)
    if check and proc.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


#: MPICH's test setting that splits one machine's ranks into two "nodes", even and odd ranks:
#: what ``MPI_COMM_TYPE_SHARED`` groups, and so which neighbours share a window.
TWO_NODES = {"MPIR_CVAR_ODD_EVEN_CLIQUES": "1"}


def skip_unless_two_nodes(n: int) -> None:
    """Skip the test unless this MPI splits ``n`` ranks of one machine into two nodes, even
    and odd ranks, under :data:`TWO_NODES`."""
    probe = run_mpi(
        n, ["-c", "from mpi4py import MPI; c = MPI.COMM_WORLD; "
                  "node = sorted(c.Split_type(MPI.COMM_TYPE_SHARED).allgather(c.rank)); "
                  "print(node) if c.rank == 0 else None"],
        env=TWO_NODES,
    )  # fmt: skip
    if probe.stdout.strip() != str(list(range(0, n, 2))):
        pytest.skip(f"this MPI does not split one machine into nodes: {probe.stdout.strip()}")
