"""Entry point: a lazy typer app over the command modules; errors become one line and exit 2.

A command's module, and what it imports (numba, matplotlib, scipy, h5py, mpi4py), is loaded
only when that command runs or prints its own help: ``grapeshot --help`` lists the commands
from :data:`COMMANDS` without importing any of them.
"""

from __future__ import annotations

import importlib
import os
import sys
from functools import cache
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from grapeshot import __version__
from grapeshot.model.errors import GrapeshotError, exception_line

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
    "check": (
        "check",
        "Check your own program before running it: the same bits on 1×1 and on several "
        "partition grids, after every phase.",
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


#: Commands reached through another command's name, ``grapeshot trace import``: ``(command,
#: word) -> (module, one-line summary)``. The command keeps its own arguments (``trace APP``);
#: only this word right after its name leads elsewhere, and its help says so.
SUBCOMMANDS: dict[tuple[str, str], tuple[str, str]] = {
    ("trace", "import"): (
        "trace_import",
        "Import your own timings as a workload trace, for grapeshot place and simulate.",
    ),
}


def _build(module_name: str, name: str) -> Any:
    """The click command ``name`` that module ``grapeshot.cli.<module_name>`` registers."""
    module = importlib.import_module(f"grapeshot.cli.{module_name}")
    sub = typer.Typer(
        add_completion=False, pretty_exceptions_enable=False, rich_markup_mode="markdown"
    )
    module.register(sub)
    return typer.main.get_group(sub).commands[name]


@cache
def load_command(name: str) -> Any:
    """The click command ``name`` (its module imported and registered once per process).

    ``main()`` may be called many times in one process (tests): registering again would make
    typer build each command again on every call.
    """
    command = _build(COMMANDS[name][0], name)
    subs = [(word, summary) for (parent, word), (_, summary) in SUBCOMMANDS.items()
            if parent == name]  # fmt: skip
    if subs:
        # The help of ``grapeshot trace`` points at ``grapeshot trace import``.
        command.epilog = "  \n".join(
            f"Also: grapeshot {name} {word} --help. {summary}" for word, summary in subs
        )
    return command


@cache
def load_subcommand(parent: str, word: str) -> Any:
    """The click command ``grapeshot PARENT WORD`` of :data:`SUBCOMMANDS`, built once."""
    return _build(SUBCOMMANDS[(parent, word)][0], word)


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

    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[str | None, Any, list[str]]:
        """``grapeshot trace import ...`` runs :data:`SUBCOMMANDS`' command, named so in its
        usage and its errors; anything else is click's."""
        if len(args) > 1 and (args[0], args[1]) in SUBCOMMANDS:
            return f"{args[0]} {args[1]}", load_subcommand(args[0], args[1]), args[2:]
        return super().resolve_command(ctx, args)

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
        "place a workload on a machine (place), map communicating tasks onto cores (map), "
        "record an app's cost per partition (trace), check that your own program gives the same "
        "bits on any partitioning (check), run an app on MPI ranks (run: under mpiexec), "
        "simulate it on a modelled cluster (simulate), put Charm++'s balancers beside "
        "grapeshot's (charm-compare), schedule an irregular exchange (exchange), run Beatnik's "
        "Z-Model (zmodel), replay batch jobs (jobs), reproduce the papers' figures (repro), or "
        "see it all at once (demo). List the machine presets (machines) and look inside any "
        "file grapeshot writes (show). Every command takes --json for scripts."
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


#: Commands that use MPI ranks when started under ``mpiexec``; every other command runs whole
#: in one process, so under ``mpiexec -n N`` only rank 0 runs it (N copies would print N
#: times and write the same files at once).
MPI_COMMANDS = frozenset({"run", "exchange", "zmodel", "map"})


def _launcher_rank() -> tuple[int, int]:
    """(rank, size) from the MPI launcher's environment (MPICH, Open MPI), else (0, 1).

    Read without importing mpi4py, which would start MPI for commands that do not use it.
    """
    for rank_var, size_var in (("PMI_RANK", "PMI_SIZE"),
                               ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")):  # fmt: skip
        try:
            return int(os.environ[rank_var]), int(os.environ[size_var])
        except (KeyError, ValueError):
            continue
    return 0, 1


def _only_rank_zero(args: list[str]) -> bool:
    """True when this process should stop: a non-MPI command under ``mpiexec -n N > 1``."""
    rank, size = _launcher_rank()
    command = next((a for a in args if not a.startswith("-")), None)
    if size <= 1 or command is None or command not in COMMANDS or command in MPI_COMMANDS:
        return False
    if rank == 0:
        sys.stderr.write(
            f"grapeshot: warning: '{command}' does not use MPI; rank 0 runs it and the other "
            f"{size - 1} rank(s) exit (run it without mpiexec)\n"
        )
    return rank != 0


#: click's error base class, whichever click typer ships (it vendors one in recent versions).
_CLICK_ERRORS = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


def main(argv: list[str] | None = None) -> None:
    """Run the command line; a :class:`GrapeshotError` becomes one line on stderr and exit 2."""
    args = sys.argv[1:] if argv is None else argv
    if _only_rank_zero(args):
        return
    try:
        from grapeshot.cli.vocabulary import check_renamed  # in the try: a Ctrl-C here is quiet

        check_renamed(args)
        # Not standalone: click's own usage errors come back here to be printed as one line.
        code = app(args=argv, prog_name="grapeshot", standalone_mode=False)
    except GrapeshotError as exc:
        if _launcher_rank()[0] == 0:  # under mpiexec: one line, not one per rank
            sys.stderr.write(f"grapeshot: error: {exc}\n")
        sys.exit(2)
    except MemoryError as exc:
        # The estimates (grapeshot.model.memory) refuse sizes the machine cannot hold before
        # allocating; what they cannot foresee (a user's own program) still ends in one line.
        if _launcher_rank()[0] == 0:
            sys.stderr.write(
                f"grapeshot: error: out of memory ({exception_line(exc, lines=1)}); expected "
                "smaller sizes (--parts, --cells, a SPEC's parts= or steps=) or more memory\n"
            )
        sys.exit(2)
    except _CLICK_ERRORS as exc:
        if type(exc).__name__ == "NoArgsIsHelpError" or exc.format_message().startswith("Usage:"):
            exc.show()  # bare ``grapeshot``: the overview, as before
            sys.exit(0 if exc.exit_code is None else exc.exit_code)
        ctx = getattr(exc, "ctx", None)
        where = ctx.command_path if ctx is not None else "grapeshot"
        message = " ".join(exc.format_message().split()).rstrip(".")
        if _launcher_rank()[0] != 0:
            sys.exit(exc.exit_code)
        sys.stderr.write(f"{where}: error: {message[:1].lower()}{message[1:]} "
                         f"(see '{where} --help')\n")  # fmt: skip
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):  # Abort: click's; the bare one before click runs
        sys.stderr.write("grapeshot: interrupted\n")
        sys.exit(130)
    if isinstance(code, int) and not isinstance(code, bool) and code:
        sys.exit(code)


if __name__ == "__main__":
    main()
