"""``grapeshot run`` on MPI ranks, counting on each rank how many steps each compiled call of
several phases ran (:mod:`grapeshot.runtime.compiled_steps`).

Usage: python -m tests.runtime.mpi_compiled_steps RUN-ARGS...

Every rank writes one line ``compiled-steps RANK [steps of each call...]`` to standard error
(an empty list: the rank ran phase by phase); rank 0 prints the run's summary as usual.
"""

from __future__ import annotations

import atexit
import json
import os
import sys

from mpi4py import MPI

from grapeshot.cli.main import main
from grapeshot.runtime import compiled_steps

calls: list[int] = []
_phases = compiled_steps.CompiledSteps._phases


def _counted(self, slots, steps):
    calls.append(steps)
    return _phases(self, slots, steps)


def _report() -> None:
    # One write, between newlines: the ranks' standard errors reach the test merged.
    line = f"\ncompiled-steps {MPI.COMM_WORLD.Get_rank()} {json.dumps(calls)}\n"
    os.write(sys.stderr.fileno(), line.encode())


compiled_steps.CompiledSteps._phases = _counted
atexit.register(_report)

if __name__ == "__main__":
    sys.argv = ["grapeshot", "run", *sys.argv[1:]]
    main()
