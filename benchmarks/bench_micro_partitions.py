"""Do micro-partitions pay on real ranks? The runtime-speed issue's table, rerun, and the
simulator's prediction of it from one calibration.

Run from the repository root (it starts its own ``mpiexec``; about three minutes):

    .venv/bin/python benchmarks/bench_micro_partitions.py [--repeats 2]

1. Shallow-water one-sided dam break, 1024 × 256 cells, 100 steps, 2 ranks × 1 thread:
   geometric 2×1 (one rank holds the water) and 1×2 (balanced by symmetry), Birdshot 8×8,
   16×16 and 32×32; and Birdshot 16×16 on 1 rank × 2 threads. The baseline is geometric
   2×1, the placement a plain MPI code would use, measured in the same run.
2. SPH two-way dam break, 256 × 128 cells, 100 steps, 2 ranks: geometric 2×1 and 1×2,
   Birdshot 8×8.
3. The simulator, calibrated once from the Birdshot 16×16 run's record (network ping-pong,
   halo copy bandwidth, runtime bookkeeping), predicts the wall time of geometric 2×1 and
   Birdshot 8×8 and 16×16 from their records' task costs.

Each run is repeated ``--repeats`` times, interleaved, and the best wall time kept (the machine
is shared; the best is the run least disturbed). Every run's fields digest is checked equal
within its app: the placements compute the same bits.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from grapeshot.sim.calibrate import calibration_from_record  # noqa: E402
from grapeshot.sim.replay import replay  # noqa: E402

SWE = ["swe", "--scene", "dambreak", "--cells", "1024,256", "--steps", "100"]
SPH = ["sph", "--scene", "two-way-dambreak", "--cells", "256,128", "--steps", "100"]
#: (label, app arguments, ranks, threads, strategy, parts)
RUNS = (
    ("swe geometric 2x1", SWE, 2, 1, "geometric", "2,1"),
    ("swe geometric 1x2", SWE, 2, 1, "geometric", "1,2"),
    ("swe birdshot 8x8", SWE, 2, 1, "birdshot", "8,8"),
    ("swe birdshot 16x16", SWE, 2, 1, "birdshot", "16,16"),
    ("swe birdshot 32x32", SWE, 2, 1, "birdshot", "32,32"),
    ("swe birdshot 16x16, 1 rank x 2 threads", SWE, 1, 2, "birdshot", "16,16"),
    ("sph geometric 2x1", SPH, 2, 1, "geometric", "2,1"),
    ("sph geometric 1x2", SPH, 2, 1, "geometric", "1,2"),
    ("sph birdshot 8x8", SPH, 2, 1, "birdshot", "8,8"),
)
RECORDED = ("swe geometric 2x1", "swe birdshot 8x8", "swe birdshot 16x16")


def _mpiexec() -> str:
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else "mpiexec"


def run(app: list[str], ranks: int, threads: int, strategy: str, parts: str, record: Path | None):
    """One ``grapeshot run`` under mpiexec; its JSON summary."""
    cmd = [
        _mpiexec(), "-n", str(ranks), sys.executable, "-m", "grapeshot.cli.main", "run", *app,
        "--parts", parts, "--strategy", strategy, "--threads", str(threads), "--seed", "0",
        "--json",
    ]  # fmt: skip
    if record is not None:
        cmd += ["--record", str(record)]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _check(label: str, ok: bool, detail: str) -> None:
    print(f"  {'PASS' if ok else 'MISS'}  {label}: {detail}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2, help="runs per row; best kept")
    args = parser.parse_args()
    best: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        records = {label: Path(tmp) / f"{i}.h5" for i, label in enumerate(RECORDED)}
        for _ in range(args.repeats):
            for label, app, ranks, threads, strategy, parts in RUNS:
                record = records.get(label)
                trial = Path(tmp) / "trial.h5"
                summary = run(app, ranks, threads, strategy, parts, trial if record else None)
                if label not in best or summary["wall_time"] < best[label]["wall_time"]:
                    best[label] = summary
                    if record is not None:
                        trial.replace(record)
        print(f"best of {args.repeats} runs, seed 0, `grapeshot run ... --json`")
        print(f"{'run':<40} {'wall s':>7} {'busy per rank s':>17} {'idle per rank s':>17}")
        for label, *_ in RUNS:
            s = best[label]
            busy = " / ".join(f"{b:.2f}" for b in s["busy"])
            idle = " / ".join(f"{i:.2f}" for i in s["idle"])
            print(f"{label:<40} {s['wall_time']:7.2f} {busy:>17} {idle:>17}")
        for app in ("swe", "sph"):
            digests = {best[label]["fields_digest"] for label in best if label.startswith(app)}
            if len(digests) != 1:
                raise SystemExit(f"{app}: the placements computed different fields: {digests}")

        wall = {label: best[label]["wall_time"] for label in best}
        g21 = wall["swe geometric 2x1"]
        b16 = best["swe birdshot 16x16"]
        print("checks (the issue's 'must show', on this machine):")
        _check(
            "birdshot 16x16 wall <= 0.8 x geometric 2x1",
            wall["swe birdshot 16x16"] <= 0.8 * g21,
            f"{wall['swe birdshot 16x16']:.2f} s vs {0.8 * g21:.2f} s "
            f"({g21 / wall['swe birdshot 16x16']:.2f}x faster)",
        )
        _check(
            "birdshot 32x32 wall <= geometric 2x1",
            wall["swe birdshot 32x32"] <= g21,
            f"{wall['swe birdshot 32x32']:.2f} s vs {g21:.2f} s",
        )
        idle_share = max(b16["idle"]) / b16["wall_time"]
        _check("birdshot 16x16 idle <= 15% of wall", idle_share <= 0.15, f"{idle_share:.1%}")
        threads = wall["swe birdshot 16x16, 1 rank x 2 threads"]
        _check(
            "1 rank x 2 threads within 15% of 2 ranks x 1 thread (birdshot 16x16)",
            threads <= 1.15 * wall["swe birdshot 16x16"],
            f"{threads:.2f} s vs {wall['swe birdshot 16x16']:.2f} s",
        )
        slower = max(wall["sph geometric 2x1"], wall["sph geometric 1x2"])
        _check(
            "sph birdshot 8x8 wall <= the slower geometric",
            wall["sph birdshot 8x8"] <= slower,
            f"{wall['sph birdshot 8x8']:.2f} s vs {slower:.2f} s",
        )
        calibration = calibration_from_record(str(records["swe birdshot 16x16"]))
        print(
            "simulator, calibrated from the birdshot 16x16 record: latency "
            f"{calibration.latency * 1e6:.1f} us, bandwidth {calibration.bandwidth / 1e9:.2f} GB/s,"
            f" copies {(calibration.copy_bandwidth or 0) / 1e9:.2f} GB/s, bookkeeping "
            f"{calibration.serial_overhead * 1e6:.1f} us per partition-step"
        )
        for label in RECORDED:
            r = replay(str(records[label]), calibration)
            _check(
                f"{label}: predicted within 25% of measured",
                abs(r.error) <= 0.25,
                f"predicted {r.predicted:.2f} s, measured {r.measured:.2f} s ({r.error:+.1%})",
            )


if __name__ == "__main__":
    main()
