"""Ordered reductions on MPI ranks; rank 0 prints {algorithm: [sum, min, max]} as JSON."""

from __future__ import annotations

import json

import numpy as np
from mpi4py import MPI

from grapeshot.exchange.collectives import ALGORITHMS, ordered_allreduce
from grapeshot.model.program import Reduction

comm = MPI.COMM_WORLD
values = np.random.default_rng(7).uniform(-1, 1, 37) * 10.0 ** np.arange(-18, 19)
local = {p: float(values[p]) for p in range(37) if p % comm.size == comm.rank}
out = {}
for algorithm in ALGORITHMS:
    out[algorithm] = [
        ordered_allreduce(local, Reduction("x", op).combine, comm=comm, algorithm=algorithm, op=op)
        for op in ("sum", "min", "max")
    ]
everyone = comm.allgather(out)
if comm.rank == 0:
    print(json.dumps({"results": out, "same_on_all_ranks": all(o == out for o in everyone)}))
