"""Run on R ranks (``mpiexec -n R python -m tests.apps.zmodel.mpi_zmodel``): every case is run
distributed and compared on rank 0 with the one-process run; prints one JSON line."""

from __future__ import annotations

import json

import numpy as np
from mpi4py import MPI

from grapeshot.apps.zmodel.driver import SpatialOptions, run
from grapeshot.apps.zmodel.model import run_serial
from grapeshot.apps.zmodel.output import gather_owned
from grapeshot.apps.zmodel.params import ZModelParams

CASES = [
    ("low-periodic", dict(order="low", boundary="periodic", fft_config=6), None),
    ("low-free", dict(order="low", boundary="free", fft_config=0), None),
    ("high-exact-free", dict(order="high", boundary="free"), None),
    ("high-exact-periodic", dict(order="high", boundary="periodic", mesh=17), None),
    ("medium-exact-periodic", dict(order="medium", boundary="periodic", mesh=17), None),
    (
        "cutoff-free-birdshot",
        dict(order="high", solver="cutoff", boundary="free", cutoff=0.3),
        SpatialOptions((8, 8), "birdshot", 3),
    ),
    (
        "cutoff-periodic-greedy",
        dict(order="high", solver="cutoff", boundary="periodic", cutoff=0.3),
        SpatialOptions((6, 6), "greedy", 0),
    ),
    ("cutoff-free-beatnik", dict(order="high", solver="cutoff", boundary="free", cutoff=0.3), None),
    (
        "cutoff-free-reactive",
        dict(order="high", solver="cutoff", boundary="free", cutoff=0.3),
        SpatialOptions((7, 7), "reactive", 0, interval=1, options={"threshold": 0.0}),
    ),
    (
        "cutoff-periodic-treematch-lb",
        dict(order="high", solver="cutoff", boundary="periodic", cutoff=0.3),
        SpatialOptions((5, 5), "treematch-lb", 0, interval=2, options={"eps": 0.0}),
    ),
    (
        "cutoff-free-birdshot-rsnh",
        dict(order="high", solver="cutoff", boundary="free", cutoff=0.3),
        SpatialOptions((8, 8), "birdshot", 3, exchange="rsnh"),
    ),
    (
        "cutoff-periodic-greedy-nbx",
        dict(order="high", solver="cutoff", boundary="periodic", cutoff=0.3),
        SpatialOptions((6, 6), "greedy", 0, exchange="nbx"),
    ),
    (
        "cutoff-free-reactive-lp",
        dict(order="high", solver="cutoff", boundary="free", cutoff=0.3),
        SpatialOptions((7, 7), "reactive", 0, 1, {"threshold": 0.0}, exchange="lp"),
    ),
] + [
    (f"fft-{c}", dict(order="low", boundary="periodic", fft_config=c, mesh=20), None)
    for c in range(8)
]


def main() -> None:
    comm = MPI.COMM_WORLD
    out = {}
    for name, kw, spatial in CASES:
        kw = {"mesh": 24, "steps": 2, "beatnik_compat": True, **kw}
        p = ZModelParams(**kw)
        _, z, w, be = run(p, comm, spatial=spatial)
        zg, wg = gather_owned(be, z), gather_owned(be, w)
        if comm.Get_rank() == 0:
            zs, ws = run_serial(p)
            n = p.nodes
            dz = float(np.abs(zg - zs[:, 2 : 2 + n, 2 : 2 + n]).max())
            dw = float(np.abs(wg - ws[:, 2 : 2 + n, 2 : 2 + n]).max())
            moves = be.dynamic.moves if be.dynamic is not None else 0
            out[name] = [dz, dw, moves]
    if comm.Get_rank() == 0:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
