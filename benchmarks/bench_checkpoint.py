"""What checkpoints cost a run: 1024×1024 SWE cells on 2 ranks, 100 steps, one every 50.

Run: ``python benchmarks/bench_checkpoint.py [--repeats N]`` (it starts its own
``mpiexec -n 2``). The same run without checkpoints and with ``--checkpoint-every 50`` (two
checkpoints: at step 50 and at the end), interleaved round by round and each first in turn
(this machine's speed drifts over minutes), best of ``--repeats``. The two must end with the same
``fields_digest``. Prints ``figure:`` lines:

- the checkpoints' write time (every rank writes its file, rank 0 the index; summed over
  the run's checkpoints, from ``checkpoints`` in ``--json``) against the wall of the run
  without them: the goal of issue 40 is under 10 %;
- the wall with checkpoints against the wall without.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import figure

ROOT = Path(__file__).resolve().parents[1]
RUN = ["run", "swe", "--scene", "dambreak", "--cells", "1024,1024", "--steps", "100", "--json"]
GOAL = 0.10


def _run(extra: list[str]) -> dict:
    mpiexec = Path(sys.executable).parent / "mpiexec"
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    cmd = [str(mpiexec), "-n", "2", sys.executable, "-m", "grapeshot.cli.main", *RUN, *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    return json.loads(proc.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    plain, saved, written = [], [], []
    digests = set()
    with tempfile.TemporaryDirectory(prefix="bench-checkpoint-", dir=ROOT) as folder:
        ck = str(Path(folder) / "ck.h5")
        _run([])  # numba's cache, the file cache: warm
        for round_ in range(args.repeats):
            # Interleaved, in turn first: a drift of the machine's speed favours neither.
            with_ck = ["--checkpoint", ck, "--checkpoint-every", "50"]
            if round_ % 2:
                b, a = _run(with_ck), _run([])
            else:
                a, b = _run([]), _run(with_ck)
            plain.append(a["wall_time"])
            saved.append(b["wall_time"])
            written.append(sum(c["seconds"] for c in b["checkpoints"]))
            digests |= {a["fields_digest"], b["fields_digest"]}
            print(
                f"round {round_}: wall {a['wall_time']:.2f} s without, {b['wall_time']:.2f} s "
                f"with {len(b['checkpoints'])} checkpoints ({written[-1]:.2f} s writing, "
                f"{sum(f.stat().st_size for f in Path(folder).iterdir()) / 1e6:.0f} MB)",
                flush=True,
            )
    same = len(digests) == 1
    base = min(plain)
    share = min(written) / base
    verdict = "PASS" if share < GOAL else "MISS"
    print(
        f"checkpoint writes: {min(written):.2f} s, {share:.1%} of {base:.2f} s ({verdict}, < 10%)"
    )
    figure(
        "checkpoint writes, SWE 1024x1024, 2 ranks, 100 steps, every 50",
        min(written),
        base,
        baseline_name="the wall of the same run without checkpoints",
        same=same,
        target=1 / GOAL,
        note="both checkpoints' write time (every rank's file and the index); goal: under 10 % "
        "of the wall, a ratio of 10x or more",
    )
    figure(
        "run wall with checkpoints every 50 steps, SWE 1024x1024, 2 ranks",
        min(saved),
        base,
        baseline_name="the same run without checkpoints, interleaved",
        same=same,
    )


if __name__ == "__main__":
    main()
