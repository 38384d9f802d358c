"""``grapeshot check``: does a program give the same bits on every partitioning?

The logic is :func:`grapeshot.runtime.check.check_program` (one process, no MPI); this module
reads the options, shows progress and prints the verdict. Exit status: 0 when every grid
gives the 1×1 run's bits (warnings allowed), 1 when a grid differs or fails (as ``diff`` and
``cmp`` say "different"), 2 on a mistake in the command or the program (as every command).
"""

from __future__ import annotations

from typing import Annotated

import typer

from grapeshot.cli.options import AppOption, AppsHelp, chosen_app
from grapeshot.cli.output import console, emit_json, err_console, warn
from grapeshot.model.errors import check_int
from grapeshot.model.option_checks import parse_cells, parse_parts

#: The exit status of a check that found a difference or a failing grid.
MISMATCH_STATUS = 1


#: ``grapeshot check --help``.
HELP = """Check your own program before running it: the same bits on 1×1 and on several
    partition grids, after every phase.

    Runs APP serially on one partition (1×1, the reference) and, side by side, on several
    partition grids, each phase running their partitions in a random order (--seed), and
    compares every field bit for bit after every phase. In the partitioned runs, the ghost
    cells of an exchanged float field that no exchange fills (deeper than the Exchange
    width, or corners with corners=False) start as NaN, so a kernel that reads beyond its
    halo shows NaN at its partition's edge. On a difference it names the step, the phase,
    the field, the first partition holding a differing cell and that cell (global index).
    It warns (on stderr) about a kernel returning a value in a phase without a reduction
    (dropped) and an integer field in a halo exchange.

    Exit status: 0 when every grid gives the same bits (warnings allowed), 1 when one
    differs or fails, 2 on a mistake (one line, as every command).
    """


def check_command(
    app_name: Annotated[
        str | None,
        typer.Argument(
            metavar="APP",
            help="Your own program as FILE.py:FACTORY or package.module:FACTORY "
            "(docs/program-api.md), an installed app (listed below) or a built-in app.",
            show_default=False,
        ),
    ] = None,
    app_option: AppOption = None,
    scene: Annotated[
        str | None,
        typer.Option(
            "--scene",
            help="Scene of a built-in app; passed to a factory that takes scene=.",
            show_default=False,
        ),
    ] = None,
    cells: Annotated[
        str | None,
        typer.Option(
            "--cells",
            help="Cells per axis NX,NY[,NZ] (default: the program's). Every cell is compared "
            "after every phase: a few thousand cells check as well as millions, faster.",
            show_default=False,
        ),
    ] = None,
    steps: Annotated[int, typer.Option("--steps", help="Steps to compare.")] = 5,
    parts: Annotated[
        list[str] | None,
        typer.Option(
            "--parts",
            metavar="PX,PY[,PZ]",
            help="A partition grid to compare with 1×1, e.g. 4,4; repeat it for several "
            "(default: 2×1, 1×2 and 3×5 in 2-D, 2×1×1, 1×2×1, 1×1×2 and 3×5×2 in 3-D, cut to "
            "what the cells hold).",
            show_default=False,
        ),
    ] = None,
    seed: Annotated[
        int,
        typer.Option("--seed", help="Seed of the partition orders, passed to the factory too."),
    ] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    from grapeshot.apps import make_app_program
    from grapeshot.model.option_checks import parse_sizes

    app = chosen_app(app_name, app_option)
    check_int(steps, "--steps")
    check_int(seed, "--seed", minimum=0, expected="a non-negative integer")
    grids = [parse_parts(p) for p in parts] if parts else None
    ndim = len(grids[0]) if grids else 2
    if cells is not None and not grids and len(parse_sizes(cells, "--cells")) > 1:
        ndim = len(parse_sizes(cells, "--cells"))  # a 3-D program says so by its cells
    cell_shape = parse_cells(cells, ndim)

    def make(grid: tuple[int, ...]):
        return make_app_program(app, scene, grid, cell_shape, seed)

    report = _checked(make, steps, seed, ndim, grids, quiet=as_json)
    for found in report.warnings:
        warn("check", found.message)
    if as_json:
        emit_json(report.as_dict())
    else:
        _print_report(report)
    if not report.ok:
        raise typer.Exit(MISMATCH_STATUS)


def _checked(make, steps: int, seed: int, ndim: int, grids, *, quiet: bool):
    """:func:`~grapeshot.runtime.check.check_program`, with a bar on a terminal (phases
    compared so far)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from grapeshot.runtime.check import check_program

    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), console=err_console, transient=True,
        disable=quiet or not err_console.is_terminal,
    ) as bar:  # fmt: skip
        job = bar.add_task("checking (phases)", total=None)
        return check_program(
            make, steps, seed=seed, ndim=ndim, grids=grids,
            progress=lambda done, total: bar.update(job, completed=done, total=total),
        )  # fmt: skip


def _print_report(report) -> None:
    """The verdict line, a row per grid, and what the 1×1 run gave."""
    from rich.table import Table

    console.print(report.verdict(), highlight=False, markup=False, soft_wrap=True)
    if report.hint() is not None:
        console.print(report.hint(), highlight=False, markup=False, soft_wrap=True)
    table = Table()
    for column in ("partitions", "result"):
        table.add_column(column)
    for grid in report.grids:
        table.add_row(grid.label, grid.text())
    console.print(table)
    cells = "×".join(map(str, report.domain))
    line = f"1×1 ({cells} cells, {report.steps} steps): fields_digest {report.digest[:16]}"
    if report.nan_fields:
        line += f" · NaN in the unfilled ghost cells of {', '.join(report.nan_fields)}"
    console.print(line, highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    """Add ``check`` to the command line."""
    app.command("check", cls=AppsHelp, help=HELP)(check_command)
