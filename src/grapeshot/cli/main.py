"""Entry point: builds the typer app from the command modules and turns errors into exit 2."""

from __future__ import annotations

import sys

import typer

from grapeshot.model.errors import GrapeshotError

app = typer.Typer(
    name="grapeshot",
    help=(
        "Scheduling toolkit for distributed simulations.\n\n"
        "Ask how unbalanced a random placement of micro-partitions is (lif, advise, theorem1), "
        "place a workload on a machine (place), or see it all at once (demo). Every command "
        "takes --json for scripts."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)


def _register() -> None:
    # Imported here so that `grapeshot --help` shows every command and each module stays thin.
    from grapeshot.cli import advise, demo, jobs, lif, place, repro, run, simulate, theorem1, trace

    for module in (lif, advise, theorem1, place, trace, run, simulate, demo, jobs, repro):
        module.register(app)


def main(argv: list[str] | None = None) -> None:
    """Run the command line; a :class:`GrapeshotError` becomes one line on stderr and exit 2."""
    _register()
    try:
        app(args=argv, prog_name="grapeshot")
    except GrapeshotError as exc:
        sys.stderr.write(f"grapeshot: error: {exc}\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
