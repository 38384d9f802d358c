"""Shared helpers of the jobs tests: random traces and the kernel-vs-reference runner."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from grapeshot.jobs.correct import LEAD_S, get_correction
from grapeshot.jobs.reference import reference_schedule
from grapeshot.jobs.scheduler import BACKFILL, KernelState, make_jobs

#: Where the real logs are (``../shared/data/swf`` beside the clone; tests skip without it).
SWF_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "swf"


def busy_log(path: Path, *, run: tuple[int, int], gap: int) -> Path:
    """Write a busy SWF log of 300 jobs on 16 CPUs to ``path``: job ``i`` arrives at
    ``i * gap`` s and runs ``run[0] + (37 i mod run[1])`` s; every 7th runs twice its request
    (a kill under the user's estimate), the others half of it."""
    lines = ["; MaxProcs: 16"]
    for i in range(300):
        ran = run[0] + (i * 37) % run[1]
        req = ran // 2 if i % 7 == 0 else ran * 2
        lines.append(f"{i + 1} {i * gap} -1 {ran} {1 + i % 8} -1 -1 {1 + i % 8} {req} -1 1 "
                     f"{1 + i % 5} 1 -1 -1 1 -1 -1")  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    return path


def random_jobs(seed: int, n: int, capacity: int) -> dict[str, np.ndarray]:
    """A small random workload with ties in submit times and run times."""
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.integers(0, n * 40, n)).astype(np.float64)
    run = rng.choice([0.0, 5.0, 30.0, 60.0, 600.0, 3600.0, 7200.0], n) + rng.integers(0, 3, n)
    size = rng.integers(1, capacity + 1, n)
    req = np.maximum(run * rng.choice([0.5, 1.0, 2.0, 10.0], n), 1.0)
    user = rng.integers(0, 4, n)
    pred = np.maximum(np.minimum(rng.choice([60.0, 300.0, 1800.0, 9000.0], n), req), 1.0)
    return {"submit": submit, "run": run, "size": size, "req": req, "user": user, "pred": pred}


def both(jobs: dict[str, np.ndarray], capacity: int, correction: str, mode: int, backfill: str,
         kill: str = "hard", checkpoint: tuple[float, float] | None = None,
         ) -> tuple[KernelState, dict[str, np.ndarray]]:  # fmt: skip
    """Run the kernel and the reference on the same jobs (``checkpoint = (every, cost)``:
    checkpointing jobs)."""
    limit = jobs["req"].copy() if kill == "request" else np.full(len(jobs["req"]), 86400.0)
    req = np.minimum(jobs["req"], limit)
    incr = get_correction(correction).increments
    state = KernelState(jobs["submit"], jobs["run"], jobs["size"], limit, req, jobs["user"],
                        capacity)  # fmt: skip
    if checkpoint is not None:
        state.checkpointing(*checkpoint)
    state.advance(np.minimum(jobs["pred"], req), incr, LEAD_S, mode, BACKFILL[backfill])
    arrays = make_jobs(jobs["submit"], jobs["run"], jobs["size"], limit, req, jobs["user"])
    ref = reference_schedule(arrays, capacity, np.minimum(jobs["pred"], req), incr, LEAD_S,
                             mode, backfill, checkpoint)  # fmt: skip
    return state, ref
