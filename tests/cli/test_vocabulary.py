"""One vocabulary: every option is in docs/cli.md's table, old spellings are refused."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from grapeshot.cli.main import COMMANDS, SUBCOMMANDS, load_command, load_subcommand
from grapeshot.cli.vocabulary import RENAMED
from tests.cli.helpers import run_main

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def _options(command) -> set[str]:
    """Every option name of ``command`` and of its subcommands, ``--help`` left out."""
    subs = getattr(command, "commands", None)
    if subs:
        return set().union(*(_options(c) for c in subs.values()))
    names = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
    return {n for n in names if n.startswith("--")} - {"--help"}


@pytest.mark.parametrize("name", [n for n in COMMANDS if n != "jobs"])
def test_every_option_is_in_the_table(name: str) -> None:
    table = DOC.read_text(encoding="utf-8").split("## Old spellings")[0]
    documented = set(re.findall(r"--[a-z][a-z0-9-]*", table))
    missing = _options(load_command(name)) - documented
    assert not missing, f"{name}: {sorted(missing)} not in docs/cli.md"


@pytest.mark.parametrize(("parent", "word"), list(SUBCOMMANDS))
def test_every_subcommand_option_is_in_the_table(parent: str, word: str) -> None:
    table = DOC.read_text(encoding="utf-8").split("## Old spellings")[0]
    documented = set(re.findall(r"--[a-z][a-z0-9-]*", table))
    missing = _options(load_subcommand(parent, word)) - documented
    assert not missing, f"{parent} {word}: {sorted(missing)} not in docs/cli.md"
    rows = [row for row in table.splitlines() if f"{parent} {word}" in row]
    assert rows, f"'{parent} {word}' is in no row of docs/cli.md's table"


@pytest.mark.parametrize(("command", "old"), list(RENAMED))
def test_old_spellings_are_refused_with_the_new_name(command: str, old: str) -> None:
    new = RENAMED[(command, old)].split()[0]
    assert new in _options(load_command(command)), new  # the hint names a real option
    result = run_main(command, old, "x", "--json")
    assert result.code == 2 and result.err.count("\n") == 1, result.err
    assert result.error.startswith(f"{command} {old}: renamed: did you mean {new}")
    assert old in DOC.read_text(encoding="utf-8").split("## Old spellings")[1]


def test_an_old_name_elsewhere_is_not_refused() -> None:
    # --steps is simulate's old range option, and the number of steps to run in run.
    result = run_main("run", "swe", "--parts", "2,2", "--steps", "2", "--json")
    assert result.code == 0, result.err


@pytest.mark.parametrize("grid", ["12x12", "12,12"])
def test_a_grid_is_written_either_way(grid: str) -> None:
    result = run_main(
        "place", "--synthetic", f"dambreak:parts={grid},steps=2", "--machine", "plafrim",
        "--nodes", "2", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert result.json()["parts"] == 144 and result.json()["strategy"] == "birdshot"
