"""Entry point: builds the typer app from the command modules and turns errors into exit 2."""

from __future__ import annotations

import sys
from functools import cache

import typer

from grapeshot.model.errors import GrapeshotError

app = typer.Typer(
    name="grapeshot",
    help=(
        "Scheduling toolkit for distributed simulations.\n\n"
        "Ask how unbalanced a random placement of micro-partitions is (lif, advise, theorem1), "
        "place a workload on a machine (place), record an app's cost per partition (trace), "
        "run an app on MPI ranks (run: under mpiexec), simulate it on a modelled cluster "
        "(simulate), replay batch jobs (jobs), reproduce the papers' figures (repro), or see "
        "it all at once (demo). Every command takes --json for scripts."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)


@cache
def _register() -> None:
    # Imported here so that `grapeshot --help` shows every command and each module stays thin.
    # Once per process: main() may be called many times in one (tests), and typer would keep
    # every registration, building each command again on every call.
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
