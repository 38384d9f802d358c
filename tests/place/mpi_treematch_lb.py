"""Run TreeMatchLB with its node level spread over the MPI ranks; rank 0 prints a digest."""

from __future__ import annotations

import hashlib
import json
import sys

import numpy as np
from mpi4py import MPI

from grapeshot.apps.commbench import commbench_matrix
from grapeshot.model.presets import preset
from grapeshot.place.treematch_lb import treematch_lb


def digest(nodes: int, per_core: int, mpi: bool) -> dict:
    machine = preset("bluewaters-xe6").with_nodes(nodes)
    p = nodes * 32 * per_core
    m = commbench_matrix(p, seed=5)
    comm = (m + m.T).tocsr().astype(float)
    loads = np.random.default_rng(1).uniform(0.5, 1.5, size=p)
    start = np.arange(p) * nodes // p
    result = treematch_lb(loads, comm, start, machine, mpi_comm=MPI.COMM_WORLD if mpi else None)
    h = hashlib.sha256(result.node_of.tobytes() + result.core_of.tobytes()).hexdigest()
    return {"digest": h, "ranks": MPI.COMM_WORLD.Get_size(), "stats": result.stats}


if __name__ == "__main__":
    out = digest(int(sys.argv[1]), int(sys.argv[2]), mpi=True)
    gathered = MPI.COMM_WORLD.gather(out["digest"])
    if MPI.COMM_WORLD.Get_rank() == 0:
        out["all_same"] = len(set(gathered)) == 1
        print(json.dumps(out))
