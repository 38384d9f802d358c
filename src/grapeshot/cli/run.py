"""``grapeshot run``: run a mini-app for real, on MPI ranks, with a placement strategy."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import Progress
from rich.table import Table

from grapeshot.cli.options import (
    STRATEGY_OPTIONS_HELP,
    AppOption,
    AppsHelp,
    BalancerOption,
    IntervalOption,
    ThresholdOption,
    WindowOption,
    chosen_app,
)
from grapeshot.cli.output import console, emit_json, warn
from grapeshot.model.errors import (
    GrapeshotError,
    InputError,
    exception_line,
    raised_at,
)


def plural(count: int, noun: str) -> str:
    """``plural(1, "rank")`` → ``"1 rank"``; ``plural(2, "rank")`` → ``"2 ranks"``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def run_title(app_name: str, scene: str, summary: dict) -> str:
    """The line above ``run``'s table: what ran, on how many ranks and threads, how placed."""
    return (
        f"{app_name} {scene}: {plural(summary['parts'], 'partition')} on "
        f"{plural(summary['ranks'], 'rank')} × {plural(summary['threads'], 'thread')} "
        f"({summary['ppc']:.1f} per core), {summary['strategy']}, "
        f"{summary['executor']} executor"
    )


def migration_line(m: Any) -> str:
    """One printed line per migration: step, partitions moved, bytes, seconds, per-rank counts."""

    def counts(c: tuple[int, ...]) -> str:
        return "/".join(map(str, c)) if len(c) <= 8 else f"{min(c)}–{max(c)}"

    return (
        f"migration at step {m.step}: {plural(m.parts_moved, 'partition')} moved, "
        f"{m.bytes:,} bytes, {m.seconds:.3f} s; per rank "
        f"{counts(m.ranks_before)} → {counts(m.ranks_after)}"
    )


def _outputs_check(outputs: dict[str, Path | None]):
    """The check of the output paths rank 0 writes (``--record``, ``--timeline``,
    ``--checkpoint``), before any rank builds the program (:func:`prepare_run`'s ``check``)."""
    from grapeshot.model.atomic import check_output_path

    def check() -> None:
        for option, path in outputs.items():
            if path is not None:
                check_output_path(path, option)

    return check


#: ``grapeshot run --help``.
HELP = """Run APP for real: place its micro-partitions on MPI ranks and execute every task.

    Start it with `mpiexec -n N grapeshot run APP ...`, one rank per core: each rank runs its
    partitions' tasks first in, first out, in the order their halos arrive, while the
    messages for the others are in flight. APP is a built-in app or your own program
    (`--app FILE.py:FACTORY`, docs/program-api.md). Rank 0 places the partitions
    (--strategy) and every rank builds its own. At the end rank 0 prints busy and idle time
    per rank, the wall time of the steps with the set-up before them and the gathering after
    them, bytes sent, and `fields_digest`, a hash of the final fields that is equal across
    executors, rank counts and placements when the results are bitwise equal.
    """


# The options, one alias each: the command's signature is one line per option.
AppNameOpt = Annotated[
    str | None,
    typer.Argument(
        metavar="APP",
        help="A built-in app (sph, swe, wavefront, commbench), an installed app (listed "
        "below), or your own program as FILE.py:FACTORY or package.module:FACTORY "
        "(docs/program-api.md).",
        show_default=False,
    ),
]
SceneOpt = Annotated[
    str | None,
    typer.Option(
        "--scene",
        help="Scene of a built-in app (default dambreak, or the app's first scene); "
        "passed to a factory that takes scene=.",
    ),
]
PartsOpt = Annotated[str, typer.Option("--parts", help="Partitions per axis, e.g. 16,16 or 8,8,8.")]
StepsOpt = Annotated[int, typer.Option("--steps", help="Steps to run.")]
StrategyOpt = Annotated[
    str | None,
    typer.Option(
        "--strategy",
        help="Placement: geometric, cyclic, sfc, birdshot (the default), or a dynamic "
        "strategy that migrates partitions during the run: reactive, greedy, refine, "
        "greedy-refine, greedy-comm, refine-comm, birdshot-dynamic, birdshot-best-of-k "
        f"(docs/dynamic.md). {STRATEGY_OPTIONS_HELP}",
    ),
]
PlacementOpt = Annotated[
    Path | None,
    typer.Option(
        "--placement",
        help="Run this placement (a file of grapeshot place --out: .json, .part, .csv or "
        ".npy) instead of a --strategy: its partitions must be the program's and its "
        "nodes the ranks.",
    ),
]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the placement and scene.")]
ThreadsOpt = Annotated[
    int,
    typer.Option(
        "--threads",
        help="Threads running tasks per rank. 1 (the default) is fastest: start one rank "
        "per core instead (docs/runtime.md, threads).",
    ),
]
ExecutorOpt = Annotated[
    str,
    typer.Option(
        "--executor",
        help="task: the task runtime; reference: bulk-synchronous, one partition per "
        "rank; serial: one process, the reference for results.",
    ),
]
ReductionOpt = Annotated[
    str,
    typer.Option("--reduction", help="Global reductions: mpi, linear or binomial."),
]
ExchangeOpt = Annotated[
    str,
    typer.Option(
        "--exchange",
        help="How migrating particles travel between ranks: ac (post everything; the "
        "default), lp, rsn, rsnh, drsn, nbx, alltoallv or neighbor (docs/exchange.md).",
    ),
]
ShmOpt = Annotated[
    bool,
    typer.Option(
        "--shm/--no-shm",
        help="Ranks of one node write their halo messages straight into each other's "
        "memory (an MPI-3 shared-memory window; the default); --no-shm sends every "
        "message through MPI, as between nodes (docs/runtime.md).",
    ),
]
MigrateAtOpt = Annotated[
    int | None,
    typer.Option(
        "--migrate-at",
        help="Rebalance greedily after this many steps; prints what moved (step, "
        "partitions, bytes, seconds).",
    ),
]
LoadsOpt = Annotated[
    str,
    typer.Option(
        "--loads",
        help="Dynamic strategies and --migrate-at: what a partition's load is. work: the "
        "program's work counts (the same moves every run); cpu: the CPU seconds its tasks "
        "took (what they really cost, overheads included; the moves vary from run to run, "
        "the fields do not); auto: work where the program counts its work (work_field or "
        "its own work()), else cpu.",
    ),
]
LazyMovesOpt = Annotated[
    bool,
    typer.Option(
        "--lazy-moves",
        help="Dynamic strategies: make a proposal's moves only once the time the current "
        "placement lost against the proposals since the last move (measured loads) reaches "
        "what a move costs (the pause it adds, measured): no more paid in moves than "
        "imbalance costs (docs/dynamic.md).",
    ),
]
CellsOpt = Annotated[
    str | None, typer.Option("--cells", help="Cells per axis (default: the scene's).")
]
RecordOpt = Annotated[
    Path | None, typer.Option("--record", help="Write the HDF5 run record (a trace too).")
]
TimelineOpt = Annotated[
    Path | None, typer.Option("--timeline", help="Write a Chrome-trace JSON timeline.")
]
TimeoutOpt = Annotated[
    float, typer.Option("--timeout", help="Abort after this many seconds without progress.")
]
AsJsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (rank 0) for scripts.")]
CheckpointOpt = Annotated[
    Path | None,
    typer.Option(
        "--checkpoint",
        help="Write checkpoints to this HDF5 index (each rank's partitions in a file "
        "beside it), at --checkpoint-every/--checkpoint-seconds and when a SIGTERM or "
        "Ctrl-C stops the run; the old checkpoint stays whole until the new one is "
        "(docs/checkpoint.md).",
    ),
]
CheckpointEveryOpt = Annotated[
    int | None,
    typer.Option("--checkpoint-every", help="With --checkpoint: write one every this many steps."),
]
CheckpointSecondsOpt = Annotated[
    float | None,
    typer.Option(
        "--checkpoint-seconds",
        help="With --checkpoint: write one when this many seconds have passed since the "
        "last (rank 0's clock; every rank writes at the same step).",
    ),
]
RestartOpt = Annotated[
    Path | None,
    typer.Option(
        "--restart",
        help="Go on from this checkpoint on any number of ranks, placed anew (--strategy; "
        "default the checkpointed run's). APP, --scene, --parts, --cells and --seed come "
        "from it (given, they must agree); --steps is the whole run's (default the "
        "checkpointed run's): the steps after the checkpoint's are run.",
    ),
]


def run_command(
    app_name: AppNameOpt = None,
    app_option: AppOption = None,
    scene: SceneOpt = None,
    parts: PartsOpt = "16,16",
    steps: StepsOpt = 20,
    strategy: StrategyOpt = None,
    interval: IntervalOption = None,
    threshold: ThresholdOption = None,
    balancer: BalancerOption = None,
    window: WindowOption = None,
    placement: PlacementOpt = None,
    seed: SeedOpt = 0,
    threads: ThreadsOpt = 1,
    executor: ExecutorOpt = "task",
    reduction: ReductionOpt = "mpi",
    exchange: ExchangeOpt = "ac",
    shm: ShmOpt = True,
    migrate_at: MigrateAtOpt = None,
    loads: LoadsOpt = "auto",
    lazy_moves: LazyMovesOpt = False,
    cells: CellsOpt = None,
    record: RecordOpt = None,
    timeline: TimelineOpt = None,
    timeout: TimeoutOpt = 120.0,
    as_json: AsJsonOpt = False,
    checkpoint: CheckpointOpt = None,
    checkpoint_every: CheckpointEveryOpt = None,
    checkpoint_seconds: CheckpointSecondsOpt = None,
    restart: RestartOpt = None,
    ctx: typer.Context = None,
) -> None:
    from grapeshot.runtime.lifeline import lifeline
    from grapeshot.runtime.run_options import check_timeout

    check_timeout(timeout)
    _check_checkpoint_options(checkpoint, checkpoint_every, checkpoint_seconds, restart, record)
    # RunRequest's fields (but the app: APP or --app, or the checkpoint's).
    options = dict(
        scene=scene, parts=parts, cells=cells, steps=steps, strategy=strategy, interval=interval,
        threshold=threshold, balancer=balancer, window=window, placement=placement, seed=seed,
        threads=threads, executor=executor, reduction=reduction, exchange=exchange, shm=shm,
        migrate_at=migrate_at, loads=loads, lazy_moves=lazy_moves, timeout=timeout,
    )  # fmt: skip
    files = {"--record": record, "--timeline": timeline, "--checkpoint": checkpoint}
    given = _given(ctx)

    # Ctrl-C, SIGTERM or a dead launcher ends every rank at once, start-up included.
    with lifeline() as guard, contextlib.ExitStack() as starting:
        # --timeout covers the start too (imports, MPI start-up, building the program), until
        # the executor's own watch takes over.
        starting.enter_context(guard.deadline(timeout, "while starting"))
        # MPI_Init runs inside this import and holds the GIL: no Python code runs until it
        # returns, so a signal must end the process without Python's help meanwhile.
        with guard.uncaught():
            from mpi4py import MPI

        comm = MPI.COMM_WORLD
        with _ended_together(comm, options):
            setup = _set_up(
                comm, given=given, restart=restart, app=(app_name, app_option), options=options,
                outputs=files,
            )  # fmt: skip
            outcome, migrations = _steps(
                comm, setup, guard, starting, as_json=as_json, record=record,
                task_rows=record is not None or timeline is not None,
                checkpoint_every=checkpoint_every, checkpoint_seconds=checkpoint_seconds,
            )  # fmt: skip
            if outcome is None:
                return
            _finish(outcome, setup.prepared, migrations, record=record, timeline=timeline)
        summary = outcome.summary
        _warn_compiled(summary)
        if as_json:
            emit_json(summary)
            return
        _print_run(setup.prepared.program, summary, record, timeline)


@contextlib.contextmanager
def _ended_together(comm, options: dict[str, Any]) -> Iterator[None]:
    """Every rank ends a run the same way: stopped by a signal (its exit status, 128 + the
    signal, with a line saying where of ``options["steps"]``: a checkpoint's total where
    restarting), refused (status 2, rank 0 prints the line), or with an error raised on this
    rank alone, where the others may be waiting for it in a collective (every rank ended, one
    line rather than a traceback per rank)."""
    from grapeshot.runtime.checkpoint import RunStopped
    from grapeshot.runtime.watch import abort_run

    rank = comm.Get_rank()
    try:
        yield
    except RunStopped as stop:
        if rank == 0:
            sys.stderr.write(stopped_line(stop, options["steps"], comm.Get_size()) + "\n")
        raise typer.Exit(128 + stop.signal) from None
    except GrapeshotError as exc:
        if rank == 0:
            sys.stderr.write(f"grapeshot: error: {exc}\n")
        raise typer.Exit(2) from None
    except Exception as exc:
        if comm.Get_size() == 1:
            raise
        at = raised_at(exc)
        abort_run(comm, f"rank {rank}: {exception_line(exc)}" + (f" ({at})" if at else ""))


@dataclass(frozen=True)
class _SetUp:
    """What every rank built before the run (:class:`~grapeshot.run_request.PreparedRun`:
    the request, a checkpoint's steps and seed where restarting, the program, its
    strategies, when building started), ``--restart``'s checkpoint index (or ``None``) and
    the checkpoint writer (or ``None``)."""

    prepared: Any
    index: Any
    writer: Any


def _set_up(comm, *, given, restart, app, options, outputs) -> _SetUp:
    """Read ``--restart``'s checkpoint, check the options (``app``: APP and --app; ``options``:
    :class:`~grapeshot.run_request.RunRequest`'s other fields) and the ``outputs`` (``{option:
    path or None}``), and build the program and the strategies on every rank (a failure on
    one is every rank's, in one line)."""
    from grapeshot.run_request import RunRequest, prepare_run
    from grapeshot.runtime.agreement import agreed

    app_name, app_option = app
    index = None
    if restart is not None:
        from grapeshot.model.checkpoint_file import read_index

        index = agreed(comm, lambda: read_index(restart))
        app_name = _from_checkpoint(index, given, app_name, options)
    request = RunRequest(app=chosen_app(app_name, app_option), **options)
    prepared = prepare_run(request, comm, check=_outputs_check(outputs))
    writer = _checkpoint_writer(
        request.app, request.scene, prepared.program, request.seed, index,
        outputs["--checkpoint"], comm, request.steps, request.strategy,
    )  # fmt: skip
    return _SetUp(prepared, index, writer)


def _steps(
    comm, setup: _SetUp, guard, starting, *, as_json, record, task_rows, checkpoint_every,
    checkpoint_seconds,
):  # fmt: skip
    """Every rank's steps, with a progress bar on rank 0's terminal and each rebalance a
    line; ``(rank 0's outcome or None, the migrations)``; ``task_rows``: every task's row
    gathered (a record or a timeline is written). ``starting`` (the start's deadline)
    closes before the first step; from then a signal stops every rank at a step boundary."""
    from grapeshot.runtime.driver import run_program

    prepared, index, rank = setup.prepared, setup.index, comm.Get_rank()
    request, program = prepared.request, prepared.program
    migrations: list[dict[str, Any]] = []

    def on_migrate(m: Any) -> None:
        keys = ("step", "parts_moved", "bytes", "seconds")
        migrations.append({k: getattr(m, k) for k in keys})
        if not as_json:
            line = migration_line(m)
            bar.console.print(line, highlight=False, markup=False, soft_wrap=True)

    with Progress(
        console=console, transient=True, disable=rank != 0 or as_json or not console.is_terminal
    ) as bar:
        task = bar.add_task(f"{program.name} {program.scene}", total=request.steps)
        bar.update(task, completed=0 if index is None else index.step)
        progress = None if bar.disable else _throttled(lambda s: bar.update(task, completed=s + 1))
        starting.close()
        with guard.deferred():
            outcome = run_program(
                program, comm=comm, on_step=progress, on_migrate=on_migrate,
                setup_started=prepared.started, restart=index, checkpoint=setup.writer,
                checkpoint_every=checkpoint_every, checkpoint_seconds=checkpoint_seconds,
                pending_signal=lambda: guard.pending, **prepared.options(),
                # A record is what the simulator calibrates on: add the network's figures.
                probe_network=record is not None, task_rows=task_rows,
            )  # fmt: skip
    return outcome, migrations


def _throttled(update: Callable[[int], None], seconds: float = 0.05) -> Callable[[int], None]:
    """``update`` called at most every ``seconds`` (a progress bar redraws ten times a
    second; rank 0 calls this between steps, on the path of the steps)."""
    last = [-float("inf")]

    def call(step: int) -> None:
        now = time.monotonic()
        if now - last[0] >= seconds:
            last[0] = now
            update(step)

    return call


def _finish(outcome, prepared, migrations, *, record, timeline):
    """Rank 0's outcome: the strategy as the user named it, the migrations, and the record
    and the timeline written."""
    from grapeshot.runtime.record import write_run_record, write_timeline

    program = prepared.program
    outcome.summary["strategy"] = prepared.strategy_name()
    if prepared.request.migrate_at is not None or prepared.dynamic is not None:
        outcome.summary["migrations"] = migrations
    if record is not None:
        write_run_record(record, program, outcome)
    if timeline is not None:
        write_timeline(timeline, program, outcome)


def _checkpoint_writer(app_name, scene, program, seed, index, checkpoint, comm, steps, strategy):
    """The program's identity checked against ``--restart``'s checkpoint ``index``; the
    writer of ``--checkpoint`` (``None`` without it)."""
    from grapeshot.apps import APPS
    from grapeshot.runtime.checkpoint import (
        CheckpointWriter,
        app_source,
        check_identity,
        program_identity,
    )

    identity = program_identity(app_name, program, seed, builtin=app_name in APPS)
    if index is not None:
        check_identity(index, identity)
    writer = None
    if checkpoint is not None:
        # How a restart makes the program again: the file's absolute path, --scene.
        again = {"source": app_source(app_name), "scene_option": scene}
        writer = CheckpointWriter(
            checkpoint, comm, identity={**identity, **again}, total_steps=steps,
            strategy=strategy or "birdshot",
        )  # fmt: skip
    return writer


def _from_checkpoint(index, given, app_name, options: dict[str, Any]) -> str | None:
    """``--restart``: what the command line did not give, from the checkpoint ``index``: the
    app returned, scene, parts, cells, seed, steps and strategy set in ``options``."""
    saved = index.identity
    if "APP" not in given and "--app" not in given:
        app_name = saved["source"]
    fill = {
        "--scene": ("scene", saved["scene_option"]),
        "--parts": ("parts", ",".join(map(str, saved["parts"]))),
        "--cells": ("cells", ",".join(map(str, saved["cells"]))),
        "--seed": ("seed", int(saved["seed"])),
        "--steps": ("steps", index.total_steps),
    }
    for option, (key, value) in fill.items():
        if option not in given:
            options[key] = value
    if "--strategy" not in given and options["placement"] is None:
        options["strategy"] = index.strategy
    return app_name


def _print_run(program, summary: dict, record, timeline) -> None:
    """Rank 0's table: busy and idle per rank, the wall with its set-up and gathering, bytes,
    the digest, the files written."""
    # The title is a line of its own: as a table title it would wrap to the narrow table.
    console.print(run_title(program.name, program.scene, summary), highlight=False, markup=False)
    table = Table()
    # With threads, the part of idle they spent waiting for the GIL after batched calls.
    gil = summary["gil_seconds"] if summary["threads"] > 1 else None
    for col in ("rank", "busy (s)", "idle (s)", *(("GIL wait (s)",) if gil else ())):
        table.add_column(col, justify="right")
    for r, (b, i) in enumerate(zip(summary["busy"], summary["idle"], strict=True)):
        table.add_row(str(r), f"{b:.3f}", f"{i:.3f}", *((f"{gil[r]:.3f}",) if gil else ()))
    console.print(table)
    console.print(
        f"wall {summary['wall_time']:.3f} s (set-up {summary['setup_seconds']:.3f} s before, "
        f"gathering {summary['gather_seconds']:.3f} s after) · {summary['messages']} "
        f"messages, {summary['bytes_sent']:,} bytes · digest {summary['fields_digest'][:16]}"
    )
    if "loads" in summary:  # partitions could move: on what, and how many proposals waited
        waited = summary.get("proposals_deferred")
        console.print(
            f"rebalanced on {'work counts' if summary['loads'] == 'work' else 'CPU seconds'}"
            + ("" if waited is None else f"; {waited} proposals not made (--lazy-moves)")
        )
    for path in (record, timeline):
        if path is not None:
            console.print(f"written: {path}")


def stopped_line(stop: Any, steps: int, ranks: int) -> str:
    """The one line a run stopped by a signal prints: where, and what to restart from."""
    from grapeshot.runtime.lifeline import SIGNALS

    why = SIGNALS.get(stop.signal, f"signal {stop.signal}")
    where = f"grapeshot: {why}; every rank stopped after step {stop.step} of {steps}"
    if stop.checkpoint is None:
        return where + " (no --checkpoint: nothing kept)"
    return (
        f"{where}; checkpoint {stop.checkpoint} (go on with: mpiexec -n {ranks} grapeshot run "
        f"--restart {stop.checkpoint})"
    )


def _given(ctx: Any) -> set[str]:
    """The options given on the command line (not defaults), by their long name; ``APP``."""
    if ctx is None:
        return set()
    out = set()
    for param in ctx.command.params:
        source = ctx.get_parameter_source(param.name)
        # By name: typer bundles a click of its own, whose ParameterSource is not click's.
        if source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP"):
            out.add(param.opts[0] if param.opts[0].startswith("-") else "APP")
    return out


def _check_checkpoint_options(
    checkpoint: Path | None,
    every: int | None,
    seconds: float | None,
    restart: Path | None,
    record: Path | None,
) -> None:
    """Refuse checkpoint options that cannot work together, before any work."""
    if checkpoint is None:
        for option, value in (("--checkpoint-every", every), ("--checkpoint-seconds", seconds)):
            if value is not None:
                raise InputError(option, "given without --checkpoint", "--checkpoint FILE.h5")
    if every is not None and (isinstance(every, bool) or every < 1):
        raise InputError("--checkpoint-every", f"got {every}", "steps >= 1")
    if seconds is not None and not 0 < seconds < float("inf"):
        raise InputError("--checkpoint-seconds", f"got {seconds}", "seconds > 0")
    if restart is not None and record is not None:
        raise InputError(
            "--record", "given with --restart", "a record of a whole run (no --restart)"
        )


def _warn_compiled(summary: dict) -> None:
    """Say on stderr when numba compiled during the steps: the wall time includes it."""
    seconds = summary.get("compile_seconds") or []
    if not any(seconds):
        return
    names = sorted({name for per_rank in summary["compiled"] for name in per_rank})
    warn(
        "run",
        f"numba compiled {', '.join(names)} during the steps ({max(seconds):.2f} s on the "
        "slowest rank, counted in the wall time): a kernel met argument types the warm-up did "
        "not give it; the next run loads it from numba's cache",
    )


def register(app: typer.Typer) -> None:
    """Add ``run`` to the command line."""
    app.command("run", cls=AppsHelp, help=HELP)(run_command)
