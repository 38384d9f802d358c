"""Birdshot §7.2 on this machine's two cores: the one-sided dam break on 2 ranks.

With geometric placement and one partition per rank, one rank works while the other idles;
with Birdshot on a 16×16 partition grid both ranks carry the same load. Checked on the work
counts (deterministic, with the issue's 20% bound) and on the measured busy time the run
record reports (against geometric's).

Seed 0 (the command's default) is used. Birdshot's balance on 2 ranks × 128 partitions is a
random variable: over seeds 0-39 the work spread max/min − 1 has median 0.12 and is within
0.2 for 68% of them, as `grapeshot lif --nodes 2 --parts-per-node 128 --busy 0.31 --model
fixed-count` predicts (E[LIF] = 0.074, 90th percentile 0.15, i.e. spread ≈ 2·LIF).
"""

from __future__ import annotations

import json

import pytest

from tests.mpi_harness import run_mpi

pytestmark = pytest.mark.mpi


def _spread(values: list[float]) -> float:
    return max(values) / min(values) - 1.0


def _run(parts: str, strategy: str) -> dict:
    proc = run_mpi(
        2,
        [
            "-m",
            "grapeshot.cli.main",
            "run",
            "swe",
            "--scene",
            "dambreak",
            "--cells",
            "512,128",
            "--parts",
            parts,
            "--strategy",
            strategy,
            "--steps",
            "60",
            "--threads",
            "1",
            "--seed",
            "0",
            "--json",
        ],
        timeout=400,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_birdshot_balances_the_one_sided_dambreak() -> None:
    geometric = _run("2,1", "geometric")
    birdshot = _run("16,16", "birdshot")
    assert geometric["fields_digest"] == birdshot["fields_digest"]
    # The water starts on rank 0's side: geometric leaves rank 1 nearly without work.
    geo_work, bird_work = geometric["work_per_rank"], birdshot["work_per_rank"]
    assert geo_work[1] < 0.2 * geo_work[0]
    assert _spread(bird_work) <= 0.2
    # The measured busy time (CPU seconds of the tasks) says the same. On two shared cores
    # its spread is noisy (0.01 to 0.4 for Birdshot over repeated runs, against 0.15 in
    # work), so the 20% bound is checked on the work above and the timing only against
    # geometric's, which it must beat by a factor of three.
    geo_busy, bird_busy = geometric["busy"], birdshot["busy"]
    assert _spread(geo_busy) > 1.0
    assert _spread(bird_busy) <= _spread(geo_busy) / 3
