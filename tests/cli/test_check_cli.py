"""`grapeshot check`: the verdict, the exit status and the warnings, through the real entry
point. The programs are tests/runtime/test_check.py's (a user's small stencil codes)."""

from __future__ import annotations

import json

import pytest

from tests.cli.helpers import run_main
from tests.mpi_harness import ROOT

HEAT = f"{ROOT / 'examples' / 'program' / 'heat.py'}:make_heat"
PROGRAMS = "tests.runtime.test_check"


def test_the_heat_example_passes_with_status_0() -> None:
    result = run_main("check", "--app", HEAT, "--cells", "48,40", "--steps", "3")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].startswith("same bits: heat on 2×1, 1×2, 3×5 (partitions in random order")
    assert "same bits after every phase" in result.out and "fields_digest" in result.out
    assert result.err == ""
    as_json = run_main("check", HEAT, "--cells", "48,40", "--steps", "3", "--json").json()
    assert as_json["ok"] is True and as_json["first"] is None
    assert {g["status"] for g in as_json["grids"]} == {"same"}
    assert {g["fields_digest"] for g in as_json["grids"]} == {as_json["fields_digest"]}


def test_an_over_read_is_a_mismatch_naming_the_phase_and_partition_with_status_1() -> None:
    result = run_main("check", "--app", f"{PROGRAMS}:make_wide", "--steps", "2")
    assert result.code == 1, result.err
    verdict = result.out.splitlines()[0]
    assert verdict.startswith("mismatch: plate on 2×1, step 0, phase 'u-to-v': block['v']")
    assert "in partition 0 (0, 0)" in verdict and "on 1×1, nan on 2×1" in verdict
    assert "Exchange width" in result.out  # the hint about NaN
    found = run_main("check", f"{PROGRAMS}:make_wide", "--parts", "4,4", "--json")
    assert found.code == 1
    report = found.json()
    assert report["ok"] is False and report["first"] == "4×4"
    diff = report["grids"][0]["difference"]
    assert (diff["step"], diff["phase"], diff["value"]) == (0, "u-to-v", "nan")
    assert diff["part"] == 0 and len(diff["cell"]) == 2


@pytest.mark.parametrize(
    ("factory", "warning"),
    [
        ("make_ints", "phase 'u-to-v' exchanges 'u', an integer field (int64)"),
        ("make_returns", "phase 'total': the kernel returned"),
    ],
)
def test_hazards_that_keep_the_bits_warn_on_stderr_with_status_0(factory, warning) -> None:
    result = run_main("check", f"{PROGRAMS}:{factory}", "--steps", "2", "--json")
    assert result.code == 0, result.err
    lines = [x for x in result.err.splitlines() if x.startswith("grapeshot check: warning: ")]
    assert lines and warning in lines[0], result.err
    assert result.json()["warnings"][0]["message"] in lines[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--app", f"{PROGRAMS}:nothing"], "has no nothing"),
        (["--app", HEAT, "--steps", "0"], "--steps: got 0"),
        (["--app", HEAT, "--seed", "-1"], "--seed: got -1"),
        (["--app", HEAT, "--parts", "2,2,2"], "(on 1×1, check's reference)"),
        (["--app", HEAT, "--cells", "1,1"], "no partitioned grid to compare with 1×1"),
        ([], "APP: missing"),
    ],
)
def test_mistakes_are_one_line_with_status_2(args: list[str], message: str) -> None:
    result = run_main("check", *args)
    assert result.code == 2 and result.err.count("\n") == 1, result.err
    assert message in result.error


def test_help_says_what_it_compares_and_the_exit_status() -> None:
    result = run_main("check", "--help", columns=200)
    assert result.code == 0
    text = " ".join(result.out.replace("│", " ").split())
    assert "bit for bit after every phase" in text and "NaN" in text
    assert "Exit status: 0 when every grid gives the same bits" in text
    overview = run_main("--help", columns=200)
    assert "check" in overview.out


def test_json_has_no_bare_nan() -> None:
    result = run_main("check", f"{PROGRAMS}:make_wide", "--json")
    json.loads(result.out, parse_constant=lambda c: pytest.fail(f"bare {c} in --json"))
