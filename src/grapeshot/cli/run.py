"""``grapeshot run``: run a mini-app for real, on MPI ranks, with a placement strategy."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import Progress
from rich.table import Table

from grapeshot.cli.options import parse_cells, parse_parts
from grapeshot.cli.output import console, emit_json
from grapeshot.model.errors import GrapeshotError, InputError


def run_command(
    app_name: Annotated[str, typer.Argument(metavar="APP", help="sph, swe or wavefront.")],
    scene: Annotated[str, typer.Option("--scene", help="Scene of the app.")] = "dambreak",
    parts: Annotated[
        str, typer.Option("--parts", help="Partitions per axis, e.g. 16,16 or 8,8,8.")
    ] = "16,16",
    steps: Annotated[int, typer.Option("--steps", help="Steps to run.")] = 20,
    strategy: Annotated[
        str, typer.Option("--strategy", help="Placement: geometric, cyclic, sfc, birdshot.")
    ] = "birdshot",
    seed: Annotated[int, typer.Option("--seed", help="Seed of the placement and scene.")] = 0,
    threads: Annotated[
        int,
        typer.Option(
            "--threads",
            help="Threads running tasks per rank. 1 (the default) is fastest: start one rank "
            "per core instead (docs/runtime.md, threads).",
        ),
    ] = 1,
    executor: Annotated[
        str,
        typer.Option(
            "--executor",
            help="task: the task runtime; reference: bulk-synchronous, one partition per "
            "rank; serial: one process, the reference for results.",
        ),
    ] = "task",
    reduction: Annotated[
        str,
        typer.Option("--reduction", help="Global reductions: mpi, linear or binomial."),
    ] = "mpi",
    migrate_at: Annotated[
        int | None,
        typer.Option("--migrate-at", help="Rebalance greedily after this many steps."),
    ] = None,
    cells: Annotated[
        str | None, typer.Option("--cells", help="Cells per axis (default: the scene's).")
    ] = None,
    record: Annotated[
        Path | None, typer.Option("--record", help="Write the HDF5 run record (a trace too).")
    ] = None,
    timeline: Annotated[
        Path | None, typer.Option("--timeline", help="Write a Chrome-trace JSON timeline.")
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Abort after this many seconds without progress.")
    ] = 120.0,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON (rank 0) for scripts.")
    ] = False,
) -> None:
    """Run APP for real: place its micro-partitions on MPI ranks and execute every task.

    Start it with `mpiexec -n N grapeshot run APP ...`, one rank per core: each rank runs its
    partitions' tasks first in, first out, in the order their halos arrive, while the
    messages for the others are in flight. Rank 0 places the partitions (--strategy) and
    every rank builds its own. At the end rank 0 prints busy and idle time per rank, bytes
    sent, and `fields_digest`, a hash of the final fields that is equal across executors,
    rank counts and placements when the results are bitwise equal.
    """
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    try:
        from grapeshot.apps import APPS, get_app
        from grapeshot.runtime.driver import run_program
        from grapeshot.runtime.record import write_run_record, write_timeline

        module = get_app(app_name)
        if not APPS[app_name].runnable:
            raise InputError(
                "APP", f"{app_name} only records traces", "sph, swe or wavefront (or use trace)"
            )
        part_shape = parse_parts(parts)
        program = module.make_program(
            scene, part_shape, cells=parse_cells(cells, len(part_shape)), seed=seed
        )
        n_threads = threads
        if n_threads < 1:
            raise InputError("--threads", f"got {n_threads}", "an integer >= 1")
        with Progress(console=console, transient=True, disable=rank != 0 or as_json) as bar:
            task = bar.add_task(f"{app_name} {scene}", total=steps)
            outcome = run_program(
                program,
                steps=steps,
                strategy=strategy,
                seed=seed,
                comm=comm,
                threads=n_threads,
                executor=executor,
                reduction=reduction,
                migrate_at=migrate_at,
                timeout=timeout,
                on_step=(lambda s: bar.update(task, completed=s + 1)) if rank == 0 else None,
                # A record is what the simulator calibrates on: add the network's own figures.
                probe_network=record is not None,
            )
        if outcome is None:
            return
        if record is not None:
            write_run_record(record, program, outcome)
        if timeline is not None:
            write_timeline(timeline, program, outcome)
    except GrapeshotError as exc:
        if rank == 0:
            sys.stderr.write(f"grapeshot: error: {exc}\n")
        raise typer.Exit(2) from None
    summary = outcome.summary
    if as_json:
        emit_json(summary)
        return
    table = Table(
        title=(
            f"{app_name} {scene}: {summary['parts']} partitions on {summary['ranks']} ranks × "
            f"{summary['threads']} threads ({summary['ppc']:.1f} per core), "
            f"{summary['strategy']}, {summary['executor']} executor"
        )
    )
    for col in ("rank", "busy (s)", "idle (s)"):
        table.add_column(col, justify="right")
    for r, (b, i) in enumerate(zip(summary["busy"], summary["idle"], strict=True)):
        table.add_row(str(r), f"{b:.3f}", f"{i:.3f}")
    console.print(table)
    console.print(
        f"wall {summary['wall_time']:.3f} s · {summary['messages']} messages, "
        f"{summary['bytes_sent']:,} bytes · digest {summary['fields_digest'][:16]}"
    )
    for path in (record, timeline):
        if path is not None:
            console.print(f"written: {path}")


def register(app: typer.Typer) -> None:
    """Add ``run`` to the command line."""
    app.command("run")(run_command)
