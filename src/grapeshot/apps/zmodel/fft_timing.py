"""Time the low-order solver under each heFFTe-style configuration on MPI ranks.

``mpiexec -n R python -m grapeshot.apps.zmodel.fft_timing MESH STEPS ROUNDS`` runs, in
``ROUNDS`` interleaved rounds, STEPS low-order steps per configuration 0..7 (Beatnik's table 1)
and prints one JSON line on rank 0: per configuration the best round's seconds per step
(max over ranks) and its FFT phase seconds per step.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from grapeshot.apps.zmodel.driver import run
from grapeshot.apps.zmodel.params import ZModelParams


def main(argv: list[str]) -> None:
    """Entry point (see module doc)."""
    from mpi4py import MPI

    mesh, steps, rounds = (int(a) for a in argv[:3])
    comm = MPI.COMM_WORLD
    best = {c: [np.inf, np.inf] for c in range(8)}
    for _ in range(rounds):
        for c in range(8):
            p = ZModelParams(mesh=mesh, order="low", boundary="periodic", steps=steps, fft_config=c)
            comm.Barrier()
            rec, *_ = run(p, comm)
            if rec is not None:
                step = float(rec.step_seconds.mean())
                fft = float(rec.phase_times[:, :, 2].max(axis=1).mean())
                if step < best[c][0]:
                    best[c] = [step, fft]
    if comm.Get_rank() == 0:
        print(
            json.dumps(
                {
                    "ranks": comm.Get_size(),
                    "mesh": mesh,
                    "steps": steps,
                    "configs": {str(c): v for c, v in best.items()},
                }
            )
        )


if __name__ == "__main__":
    main(sys.argv[1:])
