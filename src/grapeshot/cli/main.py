"""Entry point: a lazy typer app over the command modules; errors become one line and exit 2.

A command's module, and what it imports (numba, matplotlib, scipy, h5py, mpi4py), is loaded
only when that command runs or prints its own help: ``grapeshot --help`` lists the commands
from :data:`COMMANDS` without importing any of them.
"""

from __future__ import annotations

import importlib
import sys
from functools import cache
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from grapeshot import __version__
from grapeshot.model.errors import GrapeshotError

#: Every command: its name, the module (under ``grapeshot.cli``) that registers it, and the
#: one-line summary ``grapeshot --help`` shows (a test checks it is the command's own).
COMMANDS: dict[str, tuple[str, str]] = {
    "lif": (
        "lif",
        "Expected load imbalance factor (LIF) of a random placement of micro-partitions.",
    ),
    "advise": (
        "advise",
        "Smallest number of partitions per node whose expected load imbalance meets a target.",
    ),
    "theorem1": (
        "theorem1",
        "Probability that node loads drift apart without a global load-balancing step "
        "(TreeMatchLB, theorem 1).",
    ),
    "place": (
        "place",
        "Place a workload's partitions on a machine's nodes and report the load balance.",
    ),
    "trace": (
        "trace",
        "Run a mini-app and record its per-partition cost trace (a workload file).",
    ),
    "run": (
        "run",
        "Run APP for real: place its micro-partitions on MPI ranks and execute every task.",
    ),
    "simulate": (
        "simulate",
        "Predict how placements of a workload run on a modelled cluster: strategies × "
        "partitions per core, a table, a figure and an optional timeline, in seconds of host "
        "time.",
    ),
    "demo": (
        "demo",
        "Place, run for real on MPI, and simulate a dam break, geometrically and with Birdshot.",
    ),
    "repro": (
        "repro",
        "Regenerate one paper result: writes DIR/NAME.png and DIR/NAME.json and prints the "
        "paper's values beside ours with the ratio and why they differ. --list shows every "
        "entry.",
    ),
    "jobs": (
        "jobs",
        "Batch-job scheduling: would walltime correction or prediction help your cluster?",
    ),
    "machines": (
        "machines",
        "List the machine presets: nodes, cores per node, network, latency and bandwidth.",
    ),
    "show": (
        "show",
        "Say what a file is (trace, run record, placement) and print its sizes and metrics.",
    ),
    "map": (
        "map",
        "Map communicating tasks onto a machine's cores (TreeMatch, graph partitioners, ...).",
    ),
    "exchange": (
        "exchange",
        "Schedule an irregular all-to-many exchange (AC, LP, RS_N, RS_NH, DRS_N, NBX) and time "
        "it on MPI or predict it on a modelled machine.",
    ),
    "zmodel": (
        "zmodel",
        "Run Beatnik's Z-Model of a Rayleigh-Taylor interface on MPI ranks.",
    ),
    "charm-compare": (
        "charm_compare",
        "Run Charm++'s load balancers (through charm4py) beside grapeshot's on one step's loads.",
    ),
}


@cache
def load_command(name: str) -> Any:
    """The click command ``name`` (its module imported and registered once per process).

    ``main()`` may be called many times in one process (tests): registering again would make
    typer build each command again on every call.
    """
    module_name, _ = COMMANDS[name]
    module = importlib.import_module(f"grapeshot.cli.{module_name}")
    sub = typer.Typer(
        add_completion=False, pretty_exceptions_enable=False, rich_markup_mode="markdown"
    )
    module.register(sub)
    return typer.main.get_group(sub).commands[name]


class LazyGroup(TyperGroup):
    """The top-level group: lists :data:`COMMANDS`, imports a command's module on first use."""

    _listing = False

    def list_commands(self, ctx: Any) -> list[str]:
        """Every command name, in the order of :data:`COMMANDS`."""
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """The real command, or while the overview is printed a summary-only stand-in."""
        if cmd_name not in COMMANDS:
            return None
        if self._listing:
            summary = COMMANDS[cmd_name][1]
            return TyperCommand(name=cmd_name, help=summary, short_help=summary)
        return load_command(cmd_name)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """Print the overview without importing any command module."""
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


def _print_version(value: bool) -> None:
    if value:
        sys.stdout.write(f"grapeshot {__version__}\n")
        raise typer.Exit(0)


app = typer.Typer(
    name="grapeshot",
    cls=LazyGroup,
    help=(
        "Scheduling toolkit for distributed simulations.\n\n"
        "Ask how unbalanced a random placement of micro-partitions is (lif, advise, theorem1), "
        "place a workload on a machine (place), record an app's cost per partition (trace), "
        "run an app on MPI ranks (run: under mpiexec), simulate it on a modelled cluster "
        "(simulate), replay batch jobs (jobs), reproduce the papers' figures (repro), or see "
        "it all at once (demo). List the machine presets (machines) and look inside any file "
        "grapeshot writes (show). Every command takes --json for scripts."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        help="Print grapeshot's version and exit.",
        callback=_print_version,
        is_eager=True,
    ),
) -> None:
    """The options of ``grapeshot`` itself (before the command)."""


def main(argv: list[str] | None = None) -> None:
    """Run the command line; a :class:`GrapeshotError` becomes one line on stderr and exit 2."""
    from grapeshot.cli.vocabulary import check_renamed

    try:
        check_renamed(sys.argv[1:] if argv is None else argv)
        app(args=argv, prog_name="grapeshot")
    except GrapeshotError as exc:
        sys.stderr.write(f"grapeshot: error: {exc}\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
