"""``grapeshot --help``: the overview names every command the entry point registers."""

from __future__ import annotations

import re

from grapeshot.cli import main as cli_main
from tests.cli.helpers import run_main


def registered_commands() -> set[str]:
    cli_main._register()
    app = cli_main.app
    names = {c.name or c.callback.__name__ for c in app.registered_commands}
    names |= {g.name or g.typer_instance.info.name for g in app.registered_groups}
    return names


def test_help_names_every_command() -> None:
    result = run_main("--help")
    assert result.code == 0, result.err
    overview = " ".join(result.out.split("Options")[0].replace("│", " ").split())
    mentioned = set(re.findall(r"\(([a-z0-9]+)[:)]", overview))
    mentioned |= {
        n for group in re.findall(r"\(([a-z0-9, ]+)\)", overview) for n in group.split(", ")
    }
    commands = registered_commands()
    assert {"lif", "place", "trace", "run", "simulate", "demo", "jobs"} <= commands
    assert commands <= mentioned, commands - mentioned
