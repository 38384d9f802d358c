"""``run --migrate-at``: every migration is printed as it happens, once, by rank 0."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

from grapeshot.cli.run import migration_line
from tests.mpi_harness import run_mpi

RUN = ["-m", "grapeshot.cli.main", "run", "swe", "--parts", "8,8", "--steps", "6",
       "--migrate-at", "3"]  # fmt: skip
LINE = re.compile(
    r"^migration at step 3: (\d+) partitions? moved, ([\d,]+) bytes, [\d.]+ s; "
    r"per rank 32/32 → (\d+)/(\d+)$"
)


@pytest.mark.mpi
def test_migration_is_printed_once_and_matches_the_json() -> None:
    human = run_mpi(2, [*RUN, "--timeout", "60"])
    lines = [x for x in human.stdout.splitlines() if x.startswith("migration")]
    assert len(lines) == 1, human.stdout
    match = LINE.match(lines[0])
    assert match, lines[0]
    assert int(match.group(3)) + int(match.group(4)) == 64
    doc = json.loads(run_mpi(2, [*RUN, "--json"]).stdout.strip().splitlines()[-1])
    (migration,) = doc["migrations"]
    assert migration["step"] == 3 and migration["bytes"] == doc["bytes_migrated"] > 0
    # The same greedy decision (deterministic) in both runs: the same partitions moved.
    assert migration["parts_moved"] == int(match.group(1))
    assert int(match.group(2).replace(",", "")) == migration["bytes"]


def test_migration_line_is_singular_and_shortens_many_ranks() -> None:
    one = SimpleNamespace(step=5, parts_moved=1, bytes=1024, seconds=0.5,
                          ranks_before=(2, 2), ranks_after=(3, 1))  # fmt: skip
    assert migration_line(one) == (
        "migration at step 5: 1 partition moved, 1,024 bytes, 0.500 s; per rank 2/2 → 3/1"
    )
    many = SimpleNamespace(step=5, parts_moved=7, bytes=0, seconds=0.0,
                           ranks_before=(4,) * 16, ranks_after=(3,) * 8 + (5,) * 8)  # fmt: skip
    assert migration_line(many).endswith("per rank 4–4 → 3–5")
