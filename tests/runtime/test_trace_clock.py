"""Traces timed by the kernel thread's CPU clock: a core taken away is no partition's cost.

The programs below are a user's file (``CLOCK_PROGRAM``) whose Python kernels use a set
amount of their thread's CPU time (``spin``) and may sleep (``time.sleep`` gives the core
away: wall time passes, CPU time does not), so what each clock should see is known without
timing anything against a number of seconds.
"""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

from grapeshot.apps.trace_stats import trace_stats
from grapeshot.apps.user import load_user_app
from grapeshot.model.errors import InputError
from grapeshot.model.program import Program
from grapeshot.model.workload import Workload, grid_halo, step_noise
from grapeshot.model.workload_file import load_workload, save_workload
from grapeshot.runtime.serial import run_recorded, run_serial

#: A user's program file: one Python kernel a step; ``work`` is the block's work count.
CLOCK_PROGRAM = '''
import threading
import time

import numpy as np

from grapeshot.model.program import Phase, Program

MS = 1e-3


def spin(seconds):
    """Use ``seconds`` of this thread's CPU time."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def sleeper(block, box, ctx):
    """1 ms of CPU everywhere; partition 0 then sleeps 60 ms (its core idle, or another's)."""
    spin(MS)
    if box.part == 0:
        time.sleep(60 * MS)


def napping(block, box, ctx):
    """1 ms of CPU everywhere, then a sleep of 0 or 8 ms by the step: constant work."""
    spin(MS)
    time.sleep(8 * MS * (ctx.step % 2))


def jittery(block, box, ctx):
    """CPU time of 0.5 or 2.5 ms by the step, the work count constant."""
    spin((0.5 + 2.0 * (ctx.step % 2)) * MS)


def proportional(block, box, ctx):
    """The work count changes every step and partition; the CPU time follows it."""
    block["work"][0] = 1 + (3 * box.part + ctx.step) % 4
    spin(0.5 * MS * block["work"][0])


def threaded(block, box, ctx):
    """The kernel's work done on another thread (as numba parallel=True does)."""
    helper = threading.Thread(target=spin, args=(2 * MS,))
    helper.start()
    helper.join()


class Clocked(Program):
    name = "clocked"
    work_field = "work"

    def __init__(self, parts, cells, kernel):
        self.parts_shape = tuple(parts)
        self.domain_shape = tuple(cells) if cells is not None else (16, 8)
        self.scene = kernel.__name__
        self.phases = (Phase("spin", kernel),)

    def init_block(self, box):
        return {"u": np.zeros(box.padded_shape), "work": np.ones(1, dtype=np.int64)}

    def output_fields(self, block, box):
        return {"u": block["u"][box.interior()].copy()}

    def advance(self, ctx):
        return 1.0


def make_sleeper(parts, cells=None, seed=0):
    return Clocked(parts, cells, sleeper)


def make_napping(parts, cells=None, seed=0):
    return Clocked(parts, cells, napping)


def make_jittery(parts, cells=None, seed=0):
    return Clocked(parts, cells, jittery)


def make_proportional(parts, cells=None, seed=0):
    return Clocked(parts, cells, proportional)


def make_threaded(parts, cells=None, seed=0):
    return Clocked(parts, cells, threaded)
'''


def clock_program_file(folder: Path) -> Path:
    """``CLOCK_PROGRAM`` written to ``folder``; ``FILE:make_<kernel>`` names a program."""
    path = folder / "clocked_kernels.py"
    path.write_text(CLOCK_PROGRAM, encoding="utf-8")
    return path


def clocked(folder: Path, kernel: str, parts: tuple[int, int] = (4, 2)) -> Program:
    spec = f"{clock_program_file(folder)}:make_{kernel}"
    return load_user_app(spec).factory(parts)


def test_a_kernel_that_gives_its_core_away_costs_its_cpu_time_not_its_wall_time(
    tmp_path: Path,
) -> None:
    run = run_serial(clocked(tmp_path, "sleeper"), 3)
    others = np.median(run.seconds[:, 1:].sum(axis=0))
    assert run.seconds[:, 0].sum() > 5 * others  # the wall clock sees the 60 ms naps
    by_wall = trace_stats(run.workload("s", "wall")).imbalance
    assert by_wall > 1.5
    # The CPU clock sees the same 1 ms of work everywhere.
    spent = run.cpu.sum(axis=0)
    assert 0.5 < spent[0] / np.median(spent[1:]) < 2.0
    trace = run.workload()
    assert trace.clock == "cpu" and np.array_equal(trace.cost, run.cpu)
    assert np.array_equal(trace.wall, run.seconds)
    assert trace_stats(trace).imbalance < 0.5
    assert (run.cpu <= run.seconds + 1e-6).all()  # a kernel's CPU time is inside its wall time


def test_the_chunked_run_keeps_both_clocks(tmp_path: Path) -> None:
    program = clocked(tmp_path, "proportional", parts=(2, 2))
    run = run_recorded(program, 5, every=2)
    assert run.cpu.shape == run.seconds.shape == run.work.shape == (5, 4)
    assert (run.cpu > 0).all() and run.thread_cpu_seconds >= run.cpu.sum()
    if run.preemptions is not None:
        assert run.preemptions >= 0


def test_work_units_keep_the_wall_clock_and_name_no_clock(tmp_path: Path) -> None:
    run = run_serial(clocked(tmp_path, "proportional", parts=(2, 2)), 4)
    trace = run.workload("work")
    assert trace.units == "work" and trace.clock == ""
    assert np.array_equal(trace.cost, run.work) and np.array_equal(trace.wall, run.seconds)
    with pytest.raises(InputError, match="--clock"):
        run.workload("s", "sundial")


def test_other_threads_working_for_a_kernel_are_seen(tmp_path: Path) -> None:
    run = run_serial(clocked(tmp_path, "threaded", parts=(2, 1)), 3)
    # 2 ms of CPU a call on a helper thread: the kernels' own CPU clock misses it ...
    assert run.other_cpu_seconds > 4 * 2e-3
    assert run.other_cpu_seconds > run.cpu.sum()


def test_step_noise_separates_noise_from_work() -> None:
    rng = np.random.default_rng(3)
    work = rng.integers(10, 100, size=(20, 6))
    follows = 2e-6 * work + 1e-5  # cost = a + b * work exactly: nothing unexplained
    noise = step_noise(follows, work)
    assert noise.unexplained == pytest.approx(0.0, abs=1e-9) and noise.work > 0.3
    constant = np.full((20, 6), 50)
    jumps = np.where(np.arange(20)[:, None] % 2 == 0, 1e-4, 5e-4) * np.ones((1, 6))
    noisy = step_noise(jumps, constant)
    assert noisy.unexplained > 0.5 and noisy.work == 0.0
    assert noisy.exceeds(0.2) and not noise.exceeds(0.2)
    # Without work counts, every variation is unexplained; too few steps say nothing.
    assert step_noise(jumps).unexplained == pytest.approx(noisy.unexplained)
    assert np.isnan(step_noise(jumps[:2], constant[:2]).unexplained)
    assert not step_noise(jumps[:2]).exceeds(0.2)
    assert np.isnan(step_noise(np.zeros((5, 3))).unexplained)


def test_the_file_keeps_the_clock_and_the_wall_seconds_and_reads_older_files(
    tmp_path: Path,
) -> None:
    halo = grid_halo((8, 4), (2, 2))
    cost = np.full((3, 4), 2e-3)
    wall = np.full((3, 4), 5e-3)
    path = tmp_path / "t.h5"
    save_workload(path, Workload((8, 4), (2, 2), cost, halo, "s", clock="cpu", wall=wall))
    back = load_workload(path)
    assert back.clock == "cpu" and np.array_equal(back.wall, wall)
    assert back.steps(1, 3).wall.shape == (2, 4) and back.steps(1, 3).clock == "cpu"
    with h5py.File(path, "a") as f:  # a file from before the clocks
        del f["wall"]
        del f.attrs["clock"]
    old = load_workload(path)
    assert old.clock == "" and old.wall is None and np.array_equal(old.cost, cost)
    with h5py.File(path, "a") as f:
        f.attrs["clock"] = "sundial"
    with pytest.raises(InputError, match="clock"):
        load_workload(path)
    with pytest.raises(InputError, match="wall"):
        Workload((8, 4), (2, 2), cost, halo, wall=np.full((3, 4), -1.0))
    with pytest.raises(InputError, match="wall"):
        Workload((8, 4), (2, 2), cost, halo, wall=np.zeros((2, 4)))
