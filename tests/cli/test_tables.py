"""Tables a newcomer reads: 80 columns, a legend, a recommendation that compares two things."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from grapeshot.cli.run import plural, run_title
from grapeshot.cli.simulate import LEGEND, recommendation
from tests.cli.helpers import run_main

SPEC = "dambreak:parts=12x12,steps=6"


def _run(strategy: str, ppc: int, total: float) -> SimpleNamespace:
    return SimpleNamespace(
        strategy=strategy, ppc=ppc, result=SimpleNamespace(total_time=total, step_time_mean=total)
    )


@pytest.mark.parametrize(
    ("runs", "expected"),
    [
        ([_run("geometric", 1, 2.0)], "Use geometric at 1 per core: 2.000 s per step (one run: "),
        (
            [_run("geometric", 1, 2.0), _run("geometric", 4, 1.0)],
            "Use geometric at 4 per core: 1.000 s per step, 2.00× faster than at 1.",
        ),
        (
            [_run("geometric", 1, 1.0), _run("geometric", 4, 3.0)],
            "Use geometric at 1 per core: 1.000 s per step; more partitions per core only slow "
            "it down (3.00× slower at 4 per core).",
        ),
        (
            [
                _run("geometric", 1, 2.0),
                _run("birdshot", 1, 1.5),
                _run("geometric", 2, 1.6),
                _run("birdshot", 2, 1.0),
            ],
            "Use birdshot at 2 per core: 1.000 s per step, 1.60× faster than geometric at its "
            "best (2 per core).",
        ),
    ],
    ids=["one-run", "one-strategy-more-ppc", "one-strategy-fewer-ppc", "two-strategies"],
)
def test_recommendation_never_compares_a_run_with_itself(runs, expected: str) -> None:
    line = recommendation(runs, 1.0, "s")
    assert line.startswith(expected), line
    used = re.match(r"Use (\w+) at (\d+)", line)
    assert used is not None
    assert f"than {used.group(1)} at its best" not in line


def test_simulate_table_fits_80_columns_with_a_legend() -> None:
    result = run_main(
        "simulate", "--synthetic", SPEC, "--machine", "ec2-c4.8xlarge", "--nodes", "2",
        "--strategy", "geometric,birdshot,reactive", "--ppc", "1,2", "--no-figure",
        columns=80,
    )  # fmt: skip
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80
    assert "…" not in result.out
    header = next(line for line in lines if line.startswith("strategy")).split()
    assert header[:4] == ["strategy", "ppc", "parts", "step"]
    assert header[5:] == ["LIF", "max", "hid", "busy", "MB/st", "migMB"]
    assert " ".join(LEGEND.split()) in " ".join(result.out.split())
    rows = [line.split() for line in lines if line.split()[:1]]
    names = ("geometric", "birdshot", "reactive")
    starred = [r[0] for r in rows if r[0].endswith("*") and r[0].rstrip("*") in names]
    assert starred, result.out
    assert any(line.startswith("Use ") for line in lines)


@pytest.mark.parametrize(
    ("ranks", "threads", "text"),
    [
        (1, 1, "on 1 rank × 1 thread"),
        (2, 1, "on 2 ranks × 1 thread"),
        (1, 4, "on 1 rank × 4 threads"),
    ],
)
def test_run_title_is_singular_or_plural(ranks: int, threads: int, text: str) -> None:
    summary = {"parts": 16, "ranks": ranks, "threads": threads, "ppc": 16 / ranks / threads,
               "strategy": "birdshot", "executor": "task"}  # fmt: skip
    assert text in run_title("swe", "dambreak", summary)
    assert plural(1, "partition") == "1 partition" and plural(0, "byte") == "0 bytes"


def test_run_title_is_one_line_through_the_entry_point() -> None:
    result = run_main("run", "swe", "--parts", "2,2", "--steps", "2", columns=120)
    assert result.code == 0, result.err
    title = next(line for line in result.out.splitlines() if line.startswith("swe dambreak"))
    assert "4 partitions on 1 rank × 1 thread (4.0 per core)" in title
