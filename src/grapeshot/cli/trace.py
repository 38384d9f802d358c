"""``grapeshot trace``: run a mini-app (or a trace generator) and record its workload trace.

A runnable app runs with the serial executor (:func:`grapeshot.runtime.serial.run_serial`);
its measured kernel seconds (``--units s``) or work counts (``--units work``) per partition
per step become a :class:`~grapeshot.model.workload.Workload`, written atomically to HDF5. A
trace generator (``make_trace``) writes the workload it builds. Every run ends with the trace
statistics of :mod:`grapeshot.apps.trace_stats`.

Seconds are the kernel thread's CPU time (``--clock cpu``, the default), which leaves out the
time another process held the core; ``--clock wall`` records the wall clock instead (the
other is kept in the file: ``wall``). The run warns, on one line of stderr and in ``--json``,
when the costs vary from step to step more than the work counts explain
(:func:`~grapeshot.model.workload.step_noise`), when the CPU clock is too coarse for the
kernels, and when other threads worked beside the kernels' thread (a kernel on several
threads, which the thread's CPU clock undercounts).

With ``--vtk DIR`` or ``--snapshot DIR`` the run proceeds in chunks of ``--every`` steps
(resuming from the blocks, step and time of the previous chunk, which gives the same bits as
one run) and writes the assembled fields after each chunk: VTK ImageData files (``.vti``,
cell data, with a ``.pvd`` collection that ParaView opens as a time series) and PNG images.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from grapeshot.apps import APPS, get_app, make_app_program
from grapeshot.apps.trace_stats import TraceStats, trace_stats
from grapeshot.cli.options import AppOption, chosen_app
from grapeshot.cli.output import console, emit_json, err_console, warn
from grapeshot.model.atomic import check_output_path
from grapeshot.model.errors import InputError, check_int
from grapeshot.model.memory import check_program_memory
from grapeshot.model.option_checks import parse_cells, parse_parts
from grapeshot.model.program import Program
from grapeshot.model.workload import UNITS, Workload, partition_bounds, step_noise
from grapeshot.model.workload_file import save_workload
from grapeshot.report.snapshots import snapshot
from grapeshot.report.vtk import write_pvd, write_vti
from grapeshot.runtime import serial
from grapeshot.runtime.serial import CLOCKS, SerialRun, run_recorded, run_serial

#: Steps between outputs when ``--every`` is not given.
DEFAULT_EVERY = 10
#: Step-to-step variation of the costs, unexplained by the work counts (RMS over the mean
#: cost), above which the trace warns. Noise of relative size σ on P partitions alone gives
#: a step a max/mean − 1 of about σ·sqrt(2 ln P): 0.2 on 256 partitions gives 0.67, the size
#: of the imbalances strategies are told apart by. (Gray-Scott, 16 × 16 partitions of 32²
#: cells, on a 2-core machine at load 5: 0.4-0.7 by the CPU clock, 6-9 by the wall clock.)
NOISE_LIMIT = 0.2
#: A CPU clock advancing in steps over this (seconds) counts scheduler ticks, not time.
COARSE_CLOCK = 1e-5
#: Other threads' CPU seconds over the kernels' thread's, during the steps, above which the
#: kernels probably ran on several threads (a progress bar's thread uses about 1%).
OTHER_THREADS_LIMIT = 0.25


def _warm_up(program: Program) -> None:
    """One discarded step, so the kernels' JIT compilation is not timed as partition cost."""
    run_serial(program, 1)


class _Frames:
    """Writes the VTK files and PNG snapshots of each frame, and remembers what it wrote."""

    def __init__(self, program: Program, vtk: Path | None, snap: Path | None) -> None:
        self.program = program
        self.vtk, self.snap = vtk, snap
        self.stem = f"{program.name}-{program.scene}"
        self.spacing = tuple(getattr(program, "spacing", (1.0,) * len(program.domain_shape)))
        self.frames: list[tuple[float, str]] = []
        self.written: list[str] = []
        self.limits: tuple[float, float] | None = None
        self.field = getattr(program, "snapshot_field", None)

    def __call__(self, step: int, t: float, fields: dict[str, np.ndarray]) -> None:
        grids = {n: a for n, a in fields.items() if a.shape == self.program.domain_shape}
        if not grids:
            raise InputError(
                "--vtk" if self.vtk is not None else "--snapshot",
                f"{self.program.name} has no grid fields to write (only particles)",
                "a grid app (swe, wavefront)",
            )
        if self.vtk is not None:
            name = f"{self.stem}-{step:06d}.vti"
            write_vti(self.vtk / name, grids, self.spacing)
            self.frames.append((t, name))
            write_pvd(self.vtk / f"{self.stem}.pvd", self.frames)
            self.written.append(str(self.vtk / name))
        if self.snap is not None:
            field = self.field if self.field in grids else next(iter(grids))
            values = grids[field]
            if self.limits is None:
                # One colour scale for every frame, from the program or from the first frame.
                self.limits = getattr(self.program, "snapshot_limits", None)
            if self.limits is None:
                finite = values[np.isfinite(values)]
                lo = float(finite.min()) if finite.size else 0.0
                hi = float(finite.max()) if finite.size else 1.0
                self.limits = (min(lo, 0.0), hi if hi > lo else lo + 1.0)
            path = self.snap / f"{self.stem}-{step:06d}.png"
            snapshot(
                path, values, spacing=self.spacing,
                bounds=partition_bounds(self.program.domain_shape, self.program.parts_shape),
                title=f"{self.program.name} {self.program.scene}: step {step}, t = {t:.4g} s",
                label=field, limits=self.limits,
                cmap=getattr(self.program, "snapshot_cmap", "viridis"),
            )  # fmt: skip
            self.written.append(str(path))


def _stats_rows(stats: TraceStats, units: str) -> list[tuple[str, str]]:
    def pct(x: float) -> str:
        return "n/a" if math.isnan(x) else f"{x:.1%}"

    basis = "work == 0" if stats.counts_work else "cost == 0"
    return [
        (
            f"cost share of the busiest {stats.top:.0%} ({stats.n_top}), whole run",
            pct(stats.top_share),
        ),
        (
            f"cost share of the busiest {stats.top:.0%}, per step (mean)",
            pct(stats.top_share_per_step),
        ),
        (f"partitions idle per step ({basis})", pct(stats.idle_fraction)),
        ("partitions idle in every step", pct(stats.idle_all_steps)),
        (
            f"busiest {stats.top:.0%}: overlap first vs last quarter ({stats.quarter} steps)",
            "n/a" if math.isnan(stats.overlap) else f"{stats.overlap:.2f}",
        ),
        (f"partition max/mean − 1 per step ({units}), mean", f"{stats.imbalance:.2f}"),
    ]


# The options, one alias each: the command's signature is one line per option.
AppNameOpt = Annotated[
    str | None,
    typer.Argument(
        metavar="APP",
        help=f"The app: {', '.join(APPS)}, an installed app, or your own program as "
        "FILE.py:FACTORY or package.module:FACTORY (docs/program-api.md).",
        show_default=False,
    ),
]
PartsOpt = Annotated[
    str | None,
    typer.Option(
        "--parts",
        help="Partitions per axis PX[,PY[,PZ]] (one value: a square 2-D grid).",
        show_default=False,
    ),
]
StepsOpt = Annotated[int | None, typer.Option("--steps", help="Steps to run.", show_default=False)]
OutOpt = Annotated[
    Path | None,
    typer.Option("--out", help="Workload file to write (HDF5).", show_default=False),
]
SceneOpt = Annotated[
    str | None,
    typer.Option(
        "--scene",
        help="Scene of a built-in app (required for those); passed to a factory that takes scene=.",
        show_default=False,
    ),
]
CellsOpt = Annotated[
    str | None,
    typer.Option("--cells", help="Cells per axis NX[,NY[,NZ]] (default: the scene's)."),
]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the scene.")]
VtkOpt = Annotated[
    Path | None,
    typer.Option("--vtk", help="Write VTK ImageData (.vti + .pvd) here every --every steps."),
]
SnapOpt = Annotated[
    Path | None,
    typer.Option("--snapshot", help="Write PNG snapshots here every --every steps."),
]
EveryOpt = Annotated[int, typer.Option("--every", help="Steps between VTK files / snapshots.")]
UnitsOpt = Annotated[
    str | None,
    typer.Option(
        "--units",
        help="Cost recorded: s (measured kernel seconds) or work (the app's work counts). "
        "Default s for runnable apps, the generator's own for trace generators.",
    ),
]
ClockOpt = Annotated[
    str | None,
    typer.Option(
        "--clock",
        help="What times the kernels with --units s: cpu (the kernel thread's CPU time, "
        "without the time other processes held the core) or wall (the wall clock: right "
        "for a kernel on several threads, on a quiet machine only). Default cpu; the "
        "file keeps the wall clock's seconds too.",
        show_default=False,
    ),
]
AsJsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


def trace_command(
    app_name: AppNameOpt = None,
    parts: PartsOpt = None,
    steps: StepsOpt = None,
    out: OutOpt = None,
    app_option: AppOption = None,
    scene: SceneOpt = None,
    cells: CellsOpt = None,
    seed: SeedOpt = 0,
    vtk: VtkOpt = None,
    snap: SnapOpt = None,
    every: EveryOpt = DEFAULT_EVERY,
    units: UnitsOpt = None,
    clock: ClockOpt = None,
    as_json: AsJsonOpt = False,
) -> None:
    """Run a mini-app and record its per-partition cost trace (a workload file).

    Runnable apps (swe, wavefront, sph, commbench, and your own program: --app
    FILE.py:FACTORY) run here with the serial executor, partition by partition; trace
    generators (flip, zmodel) build their trace. The statistics at the end say how the load
    varies: the cost share of the busiest 10% of partitions, the share of partitions with no
    work, and whether the busiest 10% in the first quarter of the steps are still the busiest
    in the last quarter (overlap 1) or the load has moved (overlap near 0). Kernels are
    timed by their thread's CPU clock (--clock), and a warning says when the costs vary from
    step to step more than the work counts explain (a busy machine): --units work then.
    """
    app_name = chosen_app(app_name, app_option)
    part_shape, cell_shape, user, module = _checked(
        app_name, scene, parts, cells, steps, every, seed, units, clock, out, vtk, snap
    )
    written: list[str] = []
    if user or APPS[app_name].runnable:
        program = make_app_program(app_name, scene, part_shape, cell_shape, seed, steps=steps)
        summary: dict[str, Any] = {"app": program.name, "scene": program.scene, "steps": steps}
        chosen = units or "s"
        if chosen == "s":
            _warm_up(program)
        frames = _Frames(program, vtk, snap) if (vtk or snap) else None
        with _ProgressBar(as_json, f"{program.name} {program.scene}") as tick:
            run = run_recorded(
                program, steps, every=every if frames else None, on_frame=frames, progress=tick
            )
        workload = run.workload(chosen, clock or "cpu")
        summary.update(time=run.time, digest=run.digest())
        written = frames.written if frames else []
    else:
        run = None
        summary = {"app": app_name, "scene": scene, "steps": steps}
        workload = _generated(
            module, app_name, scene, part_shape, cell_shape, steps, seed, units,
            {"--vtk": vtk, "--snapshot": snap, "--clock": clock}, quiet=as_json,
        )  # fmt: skip
    save_workload(out, workload)
    stats = trace_stats(workload)
    timing = _timing(workload, run)
    warnings = _warnings(workload, timing)
    summary.update(
        parts=list(workload.parts_shape),
        cells=list(workload.domain_shape),
        units=workload.units,
        out=str(out),
        files=written,
        stats=stats.as_dict(),
        timing=timing,
        warnings=warnings,
    )
    for message in warnings:
        warn("trace", message)
    if as_json:
        emit_json(summary)
        return
    _print_summary(summary, workload, stats)


def _checked(
    app_name: str,
    scene: str | None,
    parts: str | None,
    cells: str | None,
    steps: int | None,
    every: int,
    seed: int,
    units: str | None,
    clock: str | None,
    out: Path | None,
    vtk: Path | None,
    snap: Path | None,
) -> tuple[tuple[int, ...], tuple[int, ...] | None, bool, Any]:
    """Every option of ``trace`` checked before any work (the outputs writable, the sizes
    within memory): ``(partition grid, cells or None, a user's program?, the built-in app's
    module or None)``."""
    from grapeshot.apps.user import installed_apps, is_user_app

    for option, value in (("--parts", parts), ("--steps", steps), ("--out", out)):
        if value is None:
            raise InputError(option, "missing", f"{option} with trace {app_name}")
    if units is not None and units not in UNITS:
        raise InputError("--units", f"got {units!r}", f"one of {', '.join(UNITS)}")
    if clock is not None and clock not in CLOCKS:
        raise InputError("--clock", f"got {clock!r}", f"one of {', '.join(CLOCKS)}")
    if clock is not None and units == "work":
        raise InputError("--clock", "times seconds; --units work records none", "one of them")
    check_int(steps, "--steps")
    check_int(every, "--every")
    check_output_path(out, "--out")
    for option, folder in (("--vtk", vtk), ("--snapshot", snap)):
        if folder is not None:
            check_output_path(folder, option, folder=True)
    part_shape = parse_parts(parts)
    cell_shape = parse_cells(cells, len(part_shape))
    if seed < 0:
        raise InputError("--seed", f"got {seed}", "a non-negative integer")
    user = app_name not in APPS and (is_user_app(app_name) or app_name in installed_apps())
    if not user:
        module = _load_app(app_name)
        if scene is None:
            raise InputError("--scene", "missing", f"one of {', '.join(module.SCENES)}")
        if scene not in module.SCENES:
            raise InputError(
                "--scene",
                f"{app_name} has no scene {scene!r}",
                f"one of {', '.join(module.SCENES)}",
            )
    if not user:
        given = f"--parts {parts}" + ("" if cells is None else f" --cells {cells}")
        check_program_memory(app_name, scene, part_shape, cell_shape, steps, where=given)
    return part_shape, cell_shape, user, None if user else module


def _generated(
    module: Any,
    app_name: str,
    scene: str,
    part_shape: tuple[int, ...],
    cell_shape: tuple[int, ...] | None,
    steps: int,
    seed: int,
    units: str | None,
    runnable_only: dict[str, Any],
    *,
    quiet: bool,
) -> Workload:
    """The trace a generator app (flip, zmodel) builds; ``runnable_only``: the options only
    a runnable app takes (refused if given)."""
    lacks = {
        "--vtk": "fields to write",
        "--snapshot": "fields to write",
        "--clock": "kernels to time",
    }
    for option, value in runnable_only.items():
        if value is not None:
            raise InputError(
                option,
                f"{app_name} is a trace generator and has no {lacks[option]}",
                "a runnable app (" + ", ".join(a for a, s in APPS.items() if s.runnable) + ")",
            )
    with _ProgressBar(quiet, f"{app_name} {scene}") as tick:
        workload = module.make_trace(
            scene, part_shape, steps, cells=cell_shape, seed=seed, progress=tick
        )
    if units is not None and units != workload.units:
        raise InputError(
            "--units", f"{app_name} records {workload.units!r}", f"--units {workload.units}"
        )
    return workload


def _timing(workload: Workload, run: SerialRun | None) -> dict[str, Any]:
    """How the trace's costs were timed and how far to trust them step by step.

    Keys: ``clock`` (what timed the cost: ``cpu``, ``wall``, or ``None``), ``noise`` and
    ``work_variation`` (:class:`~grapeshot.model.workload.StepNoise`, of the cost), and for
    a run timed here: ``cpu_resolution`` (seconds, the CPU clock's smallest step),
    ``cpu_per_wall`` (the kernels' CPU seconds over their wall seconds: under 1, the core
    was taken away or the kernels waited), ``other_threads`` (other threads' CPU seconds
    over the kernels' thread's during the steps), ``median_cpu`` (seconds, a partition's
    kernels in a step), ``preemptions`` (times the system took the kernels' thread's core
    during the steps, ``None`` off Linux) and ``kernel_calls``, and the wall clock's
    ``noise_wall`` and ``imbalance_wall`` (what a wall-clock trace would have said).
    """
    noise = step_noise(workload.cost, workload.work)
    timing: dict[str, Any] = {
        "clock": workload.clock if workload.units == "s" and workload.clock else None,
        "noise": noise.unexplained,
        "work_variation": noise.work,
    }
    if run is None or run.cpu is None:
        return timing
    wall = float(run.seconds.sum())
    busy = run.cpu[run.cpu > 0]
    timing.update(
        cpu_resolution=serial.cpu_clock_resolution(),
        cpu_per_wall=float(run.cpu.sum()) / wall if wall > 0 else math.nan,
        other_threads=run.other_cpu_seconds / run.thread_cpu_seconds
        if run.thread_cpu_seconds > 0 else math.nan,
        median_cpu=float(np.median(busy)) if busy.size else 0.0,
        preemptions=run.preemptions,
        kernel_calls=run.cpu.size * len(run.program.phases),
    )  # fmt: skip
    if workload.units == "s" and workload.clock == "cpu":
        by_wall = run.workload("s", "wall")
        timing.update(
            noise_wall=step_noise(by_wall.cost, by_wall.work).unexplained,
            imbalance_wall=trace_stats(by_wall).imbalance,
        )
    return timing


def _warnings(workload: Workload, timing: dict[str, Any]) -> list[str]:
    """One line each, for seconds timed here (a generator's costs vary as it models them):
    costs noisier than their work, a coarse CPU clock, threaded kernels."""
    found: list[str] = []
    if timing["clock"] is None:
        return found
    noise, varies = timing["noise"], timing["work_variation"]
    if noise > NOISE_LIMIT:
        told = "" if math.isnan(varies) else f" (the work itself varies by {varies:.2f})"
        busy = []
        if timing["clock"] == "wall":
            busy.append("--clock cpu leaves out the time other processes held the core")
        if timing.get("preemptions"):
            busy.append(
                f"the kernels' thread was preempted {timing['preemptions']} times in the "
                f"steps' {timing['kernel_calls']} kernel calls"
            )
        machine = f"a busy machine ({'; '.join(busy)})" if busy else "a busy machine"
        found.append(
            f"the costs vary from step to step by {noise:.2f} of their mean (RMS, over "
            f"{NOISE_LIMIT}) beyond what the work counts explain{told}: {machine}, or work "
            "counts that miss what the kernels do; the imbalance is partly noise; --units "
            "work records the work counts instead"
        )
    if timing["clock"] == "wall" or "cpu_resolution" not in timing:
        return found
    resolution, median = timing["cpu_resolution"], timing["median_cpu"]
    if math.isinf(resolution):
        found.append(
            "the CPU clock did not advance: every cost is 0; --clock wall on a quiet "
            "machine, or --units work"
        )
    elif resolution > COARSE_CLOCK and median < 100 * resolution:
        found.append(
            f"the CPU clock advances in steps of {resolution * 1e3:.3g} ms here and a "
            f"partition's kernels take {median * 1e6:.3g} µs a step (median): each tick "
            "goes to the kernel running, so costs are right on average over the steps but "
            "coarse in each; --units work, or more cells per partition"
        )
    if timing["other_threads"] > OTHER_THREADS_LIMIT:
        found.append(
            f"other threads used {timing['other_threads']:.0%} as much CPU as the kernels' "
            "thread during the steps: a kernel on several threads (numba parallel=True, a "
            "threaded BLAS) is undercounted by its thread's CPU clock; --clock wall on a "
            "quiet machine, or --units work"
        )
    return found


def _load_app(name: str) -> Any:
    module_name = f"grapeshot.apps.{APPS[name].module}" if name in APPS else None
    try:
        return get_app(name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        raise InputError("APP", f"app {name!r} is not in this build", None) from None


class _ProgressBar:
    """A rich progress bar on stderr (none with ``--json``); yields ``tick(done, total)``."""

    def __init__(self, quiet: bool, label: str) -> None:
        self.quiet, self.label = quiet, label
        self.bar: Progress | None = None

    def __enter__(self) -> Callable[[int, int], None]:
        if self.quiet:
            return lambda done, total: None
        self.bar = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), console=err_console, transient=True,
        )  # fmt: skip
        self.bar.__enter__()
        task = self.bar.add_task(self.label, total=None)
        bar = self.bar

        def tick(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        return tick

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)


def _share(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.0%}"


def _print_summary(summary: dict[str, Any], workload: Workload, stats: TraceStats) -> None:
    table = Table(title=f"{summary['app']} {summary['scene']}: trace of {workload.n_steps} steps")
    table.add_column("")
    table.add_column("value", justify="right")
    table.add_row("partitions", " × ".join(map(str, workload.parts_shape)) + f" = {stats.n_parts}")
    table.add_row("cells", " × ".join(map(str, workload.domain_shape)))
    if "time" in summary:
        table.add_row("simulated time", f"{summary['time']:.4g} s")
    timing = summary["timing"]
    clock = {"cpu": "thread CPU time", "wall": "wall clock"}.get(timing["clock"] or "")
    table.add_row("cost units", workload.units + (f" ({clock})" if clock else ""))
    if "cpu_per_wall" in timing:
        table.add_row("kernels' CPU time / wall time", _share(timing["cpu_per_wall"]))
    if timing.get("preemptions") is not None:
        table.add_row(
            "kernels' thread preempted (times / kernel calls)",
            f"{timing['preemptions']} / {timing['kernel_calls']}",
        )
    label = f"{workload.units}, {timing['clock']}" if timing["clock"] else workload.units
    for name, value in _stats_rows(stats, label):
        table.add_row(name, value)
    if "imbalance_wall" in timing:
        table.add_row(
            "partition max/mean − 1 per step (s, wall clock), mean",
            f"{timing['imbalance_wall']:.2f}",
        )
    if workload.units == "s":
        table.add_row(
            "cost's step-to-step noise beyond its work (RMS / mean)",
            "n/a" if math.isnan(timing["noise"]) else f"{timing['noise']:.2f}",
        )
    console.print(table)
    console.print(f"trace written to {summary['out']}")
    if summary["files"]:
        console.print(f"{len(summary['files'])} field files written, last {summary['files'][-1]}")


def register(app: typer.Typer) -> None:
    """Add ``trace`` to the command line."""
    app.command("trace")(trace_command)
