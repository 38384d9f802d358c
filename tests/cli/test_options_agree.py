"""Options do what docs/cli.md and the messages say (issue 27: options and docs disagreed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import run_main

SPEC = "dambreak:parts=8x8,steps=4"


def test_a_step_window_past_the_trace_names_step_range() -> None:
    result = run_main("simulate", "--synthetic", SPEC, "--machine", "plafrim", "--step-range",
                      "2:100", "--no-figure")  # fmt: skip
    assert result.code == 2
    assert result.error == "--step-range: got 2:100; expected a:b with 0 <= a < b <= 4"


@pytest.mark.parametrize("command", ["place", "simulate", "map"])
def test_synthetic_help_needs_no_machine(command: str) -> None:
    result = run_main(command, "--synthetic", "help")
    assert result.code == 0, result.err
    assert "dambreak" in result.out and "binary" in result.out


@pytest.mark.parametrize("command", ["place", "simulate"])
def test_the_machine_is_still_required_for_a_real_spec(command: str) -> None:
    result = run_main(command, "--synthetic", SPEC)
    assert result.code == 2 and result.err.count("\n") == 1
    assert "missing option '--machine'" in result.err


def test_exchange_simulates_on_as_many_nodes_as_the_pattern_has_ranks() -> None:
    result = run_main("exchange", "--pattern", "regular:n=8,d=3", "--simulate", "cm5", "--json")
    assert result.code == 0, result.err
    assert result.json()["nodes"] == 8  # the cm5 preset has 32
    wrong = run_main("exchange", "--pattern", "regular:n=8,d=3", "--simulate", "cm5",
                     "--nodes", "16")  # fmt: skip
    assert wrong.code == 2 and wrong.error.startswith("--nodes: the machine has 16 nodes")


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("nofile.txt", "--pattern nofile.txt: no such file"),
        ("runs/p", "--pattern runs/p: no such file"),
        ("regulr", "--pattern: 'regulr' is neither a file nor a pattern kind"),
        ("bogus:d=1", "--pattern: unknown pattern kind 'bogus'"),
    ],
)
def test_a_missing_pattern_file_is_named_as_such(pattern: str, message: str) -> None:
    result = run_main("exchange", "--pattern", pattern, "--simulate", "cm5")
    assert result.code == 2 and result.error.startswith(message), result.error


@pytest.mark.parametrize("option", ["--out-dir", "--out"])
def test_repro_writes_into_the_folder_named(tmp_path: Path, option: str) -> None:
    result = run_main("repro", "cm5-table2", option, str(tmp_path / "here"), "--json")
    assert result.code == 0, result.err
    assert (tmp_path / "here" / "cm5-table2.json").is_file()
