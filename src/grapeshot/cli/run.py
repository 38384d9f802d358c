"""``grapeshot run``: run a mini-app for real, on MPI ranks, with a placement strategy."""

from __future__ import annotations

import contextlib
import sys
import time
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
    parse_cells,
    parse_parts,
    refuse_dynamic_options,
)
from grapeshot.cli.output import console, emit_json, node_share, rank_zero_decides, warn
from grapeshot.model.errors import (
    GrapeshotError,
    InputError,
    check_int,
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


def placed_strategy(placement: Path | None, strategy: str | None, n_parts: int, ranks: int) -> Any:
    """The ``strategy`` of ``run_program``: a name, or a placement file's fixed node per part.

    Raises
    ------
    InputError
        If both are given, or the file's partitions are not the program's ``n_parts``, or it
        places on more nodes than there are ``ranks`` (a rank is a node in ``run``).
    """
    if placement is None:
        return strategy or "birdshot"
    if strategy is not None:
        raise InputError(
            "--placement", f"given with --strategy {strategy}", "one of --placement, --strategy"
        )
    from grapeshot.model.placement import load_placement
    from grapeshot.place.static import fixed_strategy

    fixed = load_placement(placement)
    if fixed.n_parts != n_parts:
        raise InputError(
            f"--placement {placement}",
            f"places {fixed.n_parts} partitions",
            f"{n_parts}, the program's (--parts, or place --synthetic with the same parts)",
        )
    if fixed.nodes != ranks:
        unit = "ranks" if fixed.per_rank else "nodes"
        raise InputError(
            f"--placement {placement}",
            f"is for {fixed.nodes} {unit}",
            f"{ranks}, the ranks of this run (mpiexec -n {fixed.nodes}"
            + (")" if fixed.per_rank else ", one rank per node)"),
        )
    return fixed_strategy(fixed.node_of)


def dynamic_for_run(strategy: str | None, seed: int, **options: Any) -> Any:
    """The dynamic strategy ``--strategy`` names (with ``--interval`` ...), or ``None``.

    Raises
    ------
    InputError
        If a dynamic option is given without a dynamic strategy that takes it, or the
        strategy needs a coarse shadow run (speculative), which ``run``'s apps do not have.
    """
    from grapeshot.place.dynamic import (
        DYNAMIC_STRATEGIES,
        factory_keywords,
        make_dynamic_strategy,
    )

    given = {k: v for k, v in options.items() if v is not None}
    if strategy not in DYNAMIC_STRATEGIES:
        refuse_dynamic_options(strategy or "birdshot", given)
        return None
    if "seed" in factory_keywords(strategy):
        given.setdefault("seed", seed)
    dynamic = make_dynamic_strategy(strategy, **given)
    if getattr(dynamic, "needs_shadow", False):
        raise InputError(
            f"--strategy {strategy}",
            "needs a coarse shadow run of the app, which sph, swe and wavefront do not have",
            "grapeshot simulate --trace FLIP.h5 --strategy speculative",
        )
    return dynamic


def migration_line(m: Any) -> str:
    """One printed line per migration: step, partitions moved, bytes, seconds, per-rank counts."""

    def counts(c: tuple[int, ...]) -> str:
        return "/".join(map(str, c)) if len(c) <= 8 else f"{min(c)}–{max(c)}"

    return (
        f"migration at step {m.step}: {plural(m.parts_moved, 'partition')} moved, "
        f"{m.bytes:,} bytes, {m.seconds:.3f} s; per rank "
        f"{counts(m.ranks_before)} → {counts(m.ranks_after)}"
    )


def _check_before_work(
    comm: Any,
    app_name: str,
    scene: str | None,
    part_shape: tuple[int, ...],
    cell_shape: tuple[int, ...] | None,
    steps: int,
    *,
    given: str,
    outputs: dict[str, Path | None],
    serial: bool,
) -> None:
    """Refuse, before any rank builds the program, an output path rank 0 cannot write
    (``--record``, ``--timeline``: rank 0 writes them) or a program too big for this node.

    With ``serial`` (``--executor serial``) rank 0 holds the whole program. Rank 0 decides
    and every rank takes its verdict, so all ranks stop together (none waits
    in a collective for a rank that gave up) and the refusal is printed once.

    Raises
    ------
    InputError
        The same one on every rank.
    """
    from grapeshot.apps import APPS, default_scene
    from grapeshot.model.atomic import check_output_path
    from grapeshot.model.memory import check_program_memory

    # Each rank holds its share of the partitions; rank 0's node holds its ranks'.
    share = None if serial else node_share(comm)

    def check() -> None:
        for option, path in outputs.items():
            if path is not None:
                check_output_path(path, option)
        check_program_memory(
            app_name,
            scene or (default_scene(app_name) if app_name in APPS else None),
            part_shape, cell_shape, steps,
            where=given, share=share,
        )  # fmt: skip

    rank_zero_decides(comm, check)


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

    if not 0 < timeout < float("inf"):
        raise InputError("--timeout", f"got {timeout}", "seconds > 0")
    _check_checkpoint_options(checkpoint, checkpoint_every, checkpoint_seconds, restart, record)
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

        from grapeshot.runtime.checkpoint import RunStopped
        from grapeshot.runtime.watch import abort_run

        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        try:
            from grapeshot.runtime.driver import run_program

            setup = _set_up(
                comm, given=given, restart=restart, app_name=app_name, app_option=app_option,
                scene=scene, parts=parts, cells=cells, seed=seed, steps=steps,
                strategy=strategy, placement=placement, executor=executor, threads=threads,
                outputs={"--record": record, "--timeline": timeline, "--checkpoint": checkpoint},
                dynamic_options=dict(
                    interval=interval, threshold=threshold, window=window, balancer=balancer
                ),
            )  # fmt: skip
            program, dynamic, index, steps = setup.program, setup.dynamic, setup.index, setup.steps
            n_threads = int(threads)
            migrations: list[dict[str, Any]] = []

            def on_migrate(m: Any) -> None:
                keys = ("step", "parts_moved", "bytes", "seconds")
                migrations.append({k: getattr(m, k) for k in keys})
                if not as_json:
                    line = migration_line(m)
                    bar.console.print(line, highlight=False, markup=False, soft_wrap=True)

            with Progress(
                console=console,
                transient=True,
                disable=rank != 0 or as_json or not console.is_terminal,
            ) as bar:
                first = 0 if index is None else index.step
                task = bar.add_task(f"{program.name} {program.scene}", total=steps)
                bar.update(task, completed=first)
                progress = (lambda s: bar.update(task, completed=s + 1)) if rank == 0 else None
                starting.close()
                # From here a signal stops every rank at a step boundary (with a checkpoint).
                with guard.deferred():
                    outcome = run_program(
                        program, steps=steps, strategy=setup.chosen, seed=setup.seed, comm=comm,
                        threads=n_threads, executor=executor, reduction=reduction,
                        exchange=exchange, shm=shm, migrate_at=migrate_at, timeout=timeout,
                        on_step=progress, on_migrate=on_migrate, dynamic=dynamic,
                        # A record is what the simulator calibrates on: add the network's
                        # own figures.
                        probe_network=record is not None, setup_started=setup.started,
                        restart=index, checkpoint=setup.writer, checkpoint_every=checkpoint_every,
                        checkpoint_seconds=checkpoint_seconds,
                        pending_signal=lambda: guard.pending,
                    )  # fmt: skip
            if outcome is None:
                return
            _finish(
                outcome, program, placement=placement, dynamic=dynamic, migrate_at=migrate_at,
                migrations=migrations, record=record, timeline=timeline,
            )  # fmt: skip
        except RunStopped as stop:
            if rank == 0:
                sys.stderr.write(stopped_line(stop, steps, comm.Get_size()) + "\n")
            raise typer.Exit(128 + stop.signal) from None
        except GrapeshotError as exc:
            if rank == 0:
                sys.stderr.write(f"grapeshot: error: {exc}\n")
            raise typer.Exit(2) from None
        except Exception as exc:
            if comm.Get_size() == 1:
                raise
            # Raised on this rank alone, where the others may be waiting for it in a
            # collective: end them all, with one line (not a traceback per rank).
            at = raised_at(exc)
            abort_run(comm, f"rank {rank}: {exception_line(exc)}" + (f" ({at})" if at else ""))
        summary = outcome.summary
        _warn_compiled(summary)
        if as_json:
            emit_json(summary)
            return
        _print_run(program, summary, record, timeline)


@dataclass(frozen=True)
class _SetUp:
    """What every rank built before the run: the program, the dynamic strategy (or
    ``None``), the placement strategy, ``--restart``'s checkpoint index (or ``None``), the
    checkpoint writer (or ``None``), the steps of the whole run and the seed (a checkpoint's
    where restarting), and when building started (``time.perf_counter()``)."""

    program: Any
    dynamic: Any
    chosen: Any
    index: Any
    writer: Any
    steps: int
    seed: int
    started: float


def _set_up(
    comm, *, given, restart, app_name, app_option, scene, parts, cells, seed, steps, strategy,
    placement, executor, threads, outputs, dynamic_options,
) -> _SetUp:  # fmt: skip
    """Read ``--restart``'s checkpoint, check the options and the ``outputs`` (``{option:
    path or None}``), and build the program and the strategies on every rank (a failure on
    one is every rank's, in one line)."""
    from grapeshot.apps import make_app_program
    from grapeshot.runtime.agreement import agreed

    index = None
    if restart is not None:
        from grapeshot.model.checkpoint_file import read_index

        index = agreed(comm, lambda: read_index(restart))
        app_name, scene, parts, cells, seed, steps, strategy = _from_checkpoint(
            index, given, app_name, scene, parts, cells, seed, steps, strategy, placement
        )
    app_name = chosen_app(app_name, app_option)
    part_shape = parse_parts(parts)
    cell_shape = parse_cells(cells, len(part_shape))
    _check_before_work(
        comm, app_name, scene, part_shape, cell_shape, steps,
        given=f"--parts {parts}" + ("" if cells is None else f" --cells {cells}"),
        outputs=outputs, serial=executor == "serial",
    )  # fmt: skip
    started = time.perf_counter()
    # A user's program is sized from one partition against the share this node holds (a
    # collective: before the ranks build on their own).
    share = None if executor == "serial" else node_share(comm)

    def build() -> tuple[Any, Any, Any]:
        program = make_app_program(
            app_name, scene, part_shape, cell_shape, seed, steps=steps, share=share
        )
        check_int(threads, "--threads")
        dynamic = dynamic_for_run(strategy, seed, **dynamic_options)
        initial = strategy if dynamic is None else dynamic.initial
        chosen = placed_strategy(placement, initial, program.n_parts, comm.Get_size())
        return program, dynamic, chosen

    # Every rank calls the factory: a failure on one ends all of them, in one line.
    program, dynamic, chosen = agreed(comm, build)
    writer = _checkpoint_writer(
        app_name, scene, program, seed, index, outputs["--checkpoint"], comm, steps, strategy
    )
    return _SetUp(program, dynamic, chosen, index, writer, steps, seed, started)


def _finish(outcome, program, *, placement, dynamic, migrate_at, migrations, record, timeline):
    """Rank 0's outcome: the strategy as the user named it, the migrations, and the record
    and the timeline written."""
    from grapeshot.runtime.record import write_run_record, write_timeline

    if placement is not None:
        outcome.summary["strategy"] = f"placement {placement}"
    if dynamic is not None:
        outcome.summary["strategy"] = dynamic.name
    if migrate_at is not None or dynamic is not None:
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


def _from_checkpoint(index, given, app_name, scene, parts, cells, seed, steps, strategy, placement):
    """``--restart``: what the command line did not give, from the checkpoint ``index``:
    ``(app, scene, parts, cells, seed, steps, strategy)``."""
    saved = index.identity
    if "APP" not in given and "--app" not in given:
        app_name = saved["source"]
    scene = scene if "--scene" in given else saved["scene_option"]
    parts = parts if "--parts" in given else ",".join(map(str, saved["parts"]))
    cells = cells if "--cells" in given else ",".join(map(str, saved["cells"]))
    seed = seed if "--seed" in given else int(saved["seed"])
    steps = steps if "--steps" in given else index.total_steps
    if "--strategy" not in given and placement is None:
        strategy = index.strategy
    return app_name, scene, parts, cells, seed, steps, strategy


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
