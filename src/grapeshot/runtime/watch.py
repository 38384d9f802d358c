"""A rank's progress and failures: what it waits for, the first task that failed, the watchdog
that aborts a run that makes no progress, and the abort that ends every rank.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from typing import TYPE_CHECKING

from grapeshot.model.program import Program, SimulationError, failure_text

if TYPE_CHECKING:
    from mpi4py import MPI


class Watch:
    """One rank's progress, shared by its threads.

    Parameters
    ----------
    program
        The program (named in failure messages).
    comm
        The communicator :meth:`abort` ends (every rank of the job).
    timeout
        Seconds without progress after which :meth:`watch` aborts the run.

    Attributes
    ----------
    progress_at
        ``time.perf_counter()`` of the last progress (a task done, a message in), seconds.
    waiting_for
        What the main thread waits for, in words (the watchdog's message).
    failure
        The first task failure's message, for the main thread to abort with, or ``None``.
    """

    def __init__(self, program: Program, comm: MPI.Intracomm, timeout: float) -> None:
        self.program = program
        self.comm = comm
        self.rank = comm.Get_rank()
        self.timeout = timeout
        self.progress_at = time.perf_counter()
        self.waiting_for = "nothing yet"
        self.failure: str | None = None

    def fail(self, part: int, step: int, name: str, exc: BaseException) -> None:
        """Keep the first failure for the main thread, which aborts the run with it
        (:meth:`check`); tasks on any thread call this, never :meth:`abort`."""
        if self.failure is None:
            if isinstance(exc, SimulationError):
                part = exc.part
            self.failure = failure_text(self.program, part, step, name, exc)

    def check(self) -> None:
        """Abort the run if a task failed (main thread)."""
        if self.failure is not None:
            self.abort(self.failure)

    def watch(self, stop: threading.Event) -> None:
        """Abort the run when nothing has progressed for ``timeout`` seconds (a thread's
        target; returns when ``stop`` is set)."""
        period = min(1.0, self.timeout / 4)
        while not stop.wait(period):
            if time.perf_counter() - self.progress_at > self.timeout:
                self.abort(f"no progress for {self.timeout:g} s; waiting for {self.waiting_for}")

    def abort(self, message: str) -> None:
        """End every rank, saying this rank's ``message``."""
        abort_run(self.comm, f"rank {self.rank}: {message}")


def abort_run(comm: MPI.Intracomm, message: str) -> None:
    """End every rank of the job, exit status 2, after one line on standard error.

    ``MPI_Abort`` is what ends every rank under any launcher; MPICH then prints a line of its
    own saying the same, which would make the error two lines: it goes to ``/dev/null``.
    """
    sys.stderr.write(f"grapeshot: error: {message}\n")
    sys.stderr.flush()
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
    comm.Abort(2)
