"""What numba compiles while a run's steps go: counted once per outermost compilation."""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.core.event import install_listener

from grapeshot.runtime.compile_clock import CompileClock


def test_counts_outermost_compilations_and_their_names() -> None:
    @njit
    def callee(x):
        return x + 1

    @njit
    def caller(x):
        return callee(x) * 2

    clock = CompileClock()
    with install_listener("numba:compile", clock):
        assert caller(1) == 4  # compiles caller, and callee inside it
        assert caller(2) == 6  # compiled already
        assert caller(np.float64(1.5)) == 5.0  # a new type: compiled again
    assert clock.names == [caller.py_func.__qualname__] * 2
    assert clock.seconds > 0.0
    caller(3.5)
    assert len(clock.names) == 2  # not listening any more


def test_nothing_compiled_nothing_counted() -> None:
    @njit
    def f(x):
        return x

    f(1)
    clock = CompileClock()
    with install_listener("numba:compile", clock):
        f(2)
    assert (clock.seconds, clock.names) == (0.0, [])


def test_a_threaded_batched_run_compiles_nothing_during_its_steps() -> None:
    """Everything a step calls is compiled before the clock starts, also the threads' runs
    of a batch (strided views of the ready partitions, which once compiled the batch again
    inside the run, seconds of the wall); the GIL waits after its calls are counted."""
    from mpi4py import MPI

    from grapeshot.runtime.driver import run_program
    from tests.runtime.toy_programs import BatchedHeat

    program = BatchedHeat(domain=(32, 32), parts=(4, 4))
    outcome = run_program(
        program, steps=3, strategy="cyclic", seed=0, comm=MPI.COMM_SELF, threads=2
    )
    summary = outcome.summary
    assert summary["compile_seconds"] == [0.0] and summary["compiled"] == [[]]
    assert summary["gil_returns"][0] > 0 and summary["gil_seconds"][0] >= 0.0
