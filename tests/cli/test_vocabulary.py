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


#: Commands whose options docs/cli.md's table covers (``jobs`` has docs/jobs.md), with the
#: subcommands written as in the table ("trace import").
TABLE_COMMANDS = [n for n in COMMANDS if n != "jobs"] + [f"{p} {w}" for p, w in SUBCOMMANDS]


def _command_options(name: str) -> set[str]:
    """The real options of ``name`` (``"trace import"`` for a subcommand; ``"jobs"``: those
    of its subcommands, which docs/jobs.md describes)."""
    parent, _, word = name.partition(" ")
    if word:
        return _options(load_subcommand(parent, word))
    command = load_command(name)
    if getattr(command, "commands", None):
        return _options(command)
    own = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
    return {n for n in own if n.startswith("--")} - {"--help"}


def _rows() -> list[tuple[int, set[str], list[str]]]:
    """``(line, options, commands)`` of every row of the table under "## Names"."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## Names")
    section = text[start : text.index("## Old spellings")]
    first_line = text[:start].count("\n") + 1
    rows = []
    for offset, line in enumerate(section.splitlines()):
        if not line.startswith("|") or line.startswith("|---"):
            continue
        # A literal '|' inside a cell is written '\|' (--format json\|part\|csv\|npy).
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if cells[:3] == ["thing", "option", "commands"]:
            continue
        assert len(cells) == 4, f"docs/cli.md line {first_line + offset}: {len(cells)} cells"
        commands = [c.strip() for c in cells[2].split(",") if c.strip()]
        if commands == ["every command"]:
            commands = list(TABLE_COMMANDS)
        rows.append(
            (first_line + offset, set(re.findall(r"--[a-z][a-z0-9-]*", cells[1])), commands)
        )
    return rows


def test_every_row_names_real_options_of_real_commands() -> None:
    # docs/cli.md -> the code: each option of a row is an option of every command the row
    # names (repro once documented --out-dir without having it).
    wrong = []
    for line, options, commands in _rows():
        for command in commands:
            if command not in [*TABLE_COMMANDS, "jobs"]:
                wrong.append(f"line {line}: no command {command!r}")
                continue
            for option in sorted(options - _command_options(command)):
                wrong.append(f"line {line}: {command} has no {option}")
    assert not wrong, "docs/cli.md disagrees with the commands:\n" + "\n".join(wrong)


@pytest.mark.parametrize("name", TABLE_COMMANDS)
def test_every_option_is_in_a_row_naming_its_command(name: str) -> None:
    # The code -> docs/cli.md: each real option is in a row whose commands include this one.
    documented = set().union(*(o for _, o, commands in _rows() if name in commands))
    missing = _command_options(name) - documented
    assert not missing, f"{name}: {sorted(missing)} in no row naming {name} in docs/cli.md"


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
