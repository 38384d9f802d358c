"""SPH on MPI ranks with every --exchange schedule for its particle migration.

Rank 0 prints one JSON line: {exchange: [fields_digest, planned exchanges on rank 0]}.
"""

from __future__ import annotations

import json

from mpi4py import MPI

import grapeshot.exchange.mpi_exchange as mx
from grapeshot.apps import get_app
from grapeshot.exchange.schedules import ALGORITHMS
from grapeshot.runtime.driver import run_program

calls = {"n": 0}
_real = mx.exchange_once


def counting(*args, **kwargs):
    calls["n"] += 1  # counts the planned exchanges; the exchange itself is the real one
    return _real(*args, **kwargs)


mx.exchange_once = counting
comm = MPI.COMM_WORLD
out = {}
for exchange in ALGORITHMS:
    calls["n"] = 0
    program = get_app("sph").make_program("dambreak", (4, 2), cells=(16, 8))
    outcome = run_program(
        program,
        steps=5,
        strategy="birdshot",
        seed=2,
        comm=comm,
        threads=1,
        timeout=60.0,
        exchange=exchange,
    )
    if outcome is not None:
        out[exchange] = [outcome.summary["fields_digest"], calls["n"]]
if comm.rank == 0:
    print(json.dumps(out))
