"""CommBench for real on two MPI ranks: treematch-lb migrates chares during the run.

``grapeshot run commbench`` under ``mpiexec -n 2``: chares send real byte chunks to two random
chares each step (a graph exchange). With ``--strategy treematch-lb --interval 4`` the chares
move between the ranks during the run (TreeMatchLB sees CommBench's message graph through
``halo_comm``); the final fields are bitwise those of ``--executor serial``; and the bytes sent
between the ranks drop against ``--strategy birdshot`` (geometric, blind to the graph) on the
same program.
"""

from __future__ import annotations

import json

import pytest

from tests.mpi_harness import run_mpi

COMMON = ["--scene", "small", "--parts", "4,4", "--steps", "12", "--seed", "1", "--json"]


def _run(ranks: int, *options: str) -> dict:
    proc = run_mpi(ranks, ["-m", "grapeshot.cli.main", "run", "commbench", *COMMON, *options])
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    return {
        "serial": _run(1, "--executor", "serial"),
        "birdshot": _run(2, "--strategy", "birdshot"),
        "treematch-lb": _run(2, "--strategy", "treematch-lb", "--interval", "4"),
        "treematch-lb-threads": _run(
            2, "--strategy", "treematch-lb", "--interval", "4", "--threads", "2"
        ),
    }


@pytest.mark.mpi
def test_treematch_lb_migrates_with_fields_equal_to_serial(runs) -> None:
    digest = runs["serial"]["fields_digest"]
    for name in ("birdshot", "treematch-lb", "treematch-lb-threads"):
        assert runs[name]["fields_digest"] == digest, name
        assert runs[name]["ranks"] == 2
    for name in ("treematch-lb", "treematch-lb-threads"):
        moves = runs[name]["migrations"]
        assert moves and moves[0]["step"] == 4, moves
        assert sum(m["parts_moved"] for m in moves) >= 1, moves
        assert runs[name]["bytes_migrated"] > 0


@pytest.mark.mpi
def test_treematch_lb_sends_fewer_bytes_between_ranks_than_birdshot(runs) -> None:
    # One message per rank pair and step in both runs: only their sizes differ.
    assert runs["treematch-lb"]["messages"] == runs["birdshot"]["messages"] == 2 * 12
    assert runs["treematch-lb"]["bytes_sent"] < 0.85 * runs["birdshot"]["bytes_sent"]
    assert runs["treematch-lb-threads"]["bytes_sent"] == runs["treematch-lb"]["bytes_sent"]
