"""``grapeshot simulate``: run placements on a modelled cluster and compare them.

The command parses its options into a :class:`~grapeshot.sim.request.SimulateRequest`,
checks the files it will write, and prints; the library (:mod:`grapeshot.sim.request`,
``grapeshot.simulate(...)`` from Python) does the rest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.progress import (
    BarColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from grapeshot.cli.options import (
    STRATEGY_OPTIONS_HELP,
    BalancerOption,
    IntervalOption,
    ThresholdOption,
    WindowOption,
    show_synthetic_kinds,
)
from grapeshot.cli.output import FIGURE_SUFFIXES, console, emit_json, err_console, warn
from grapeshot.model.atomic import check_output_path
from grapeshot.model.synthetic import describe_kinds
from grapeshot.sim.program import (
    DEFAULT_MESSAGE_OVERHEAD,
    DEFAULT_STATE_BYTES_PER_CELL,
    DEFAULT_TASK_OVERHEAD,
    SYNC_MODES,
)
from grapeshot.sim.request import (
    DEFAULT_STRATEGIES,
    PreparedSimulation,
    SimulateOutcome,
    SimulateRequest,
    prepare_simulation,
    run_name,
    run_simulation,
)
from grapeshot.sim.sweep import Run, strategy_names

_PARAGRAPHS = (
    "Predict how placements of a workload run on a modelled cluster: strategies × partitions "
    "per core, a table, a figure and an optional timeline, in seconds of host time.",
    "**What is modelled.** Every partition runs one task per step (per phase with "
    "--phases); a task waits for its partition's previous task and for one halo message from "
    "each neighbour. Each node runs its ready tasks first in, first out on any free core "
    "(Birdshot's per-node dynamic dispatch; --pin binds partitions to cores instead). A "
    "message between nodes costs latency + bytes / bandwidth, serialised at the sender's and "
    "the receiver's NIC (and on the shared links of fat-tree and 3D-torus networks, where hops "
    "add latency); with node contention (the cm5 preset) a receiver takes one message at a "
    "time. A message inside a node costs a memory copy. Every task pays a fixed overhead and "
    "every inter-node message a software overhead at both ends (--task-overhead, "
    "--msg-overhead): these per-partition costs, with the halo traffic that grows with the "
    "partition count, are why too many partitions per core get slower again. --sync adds a "
    "barrier or an allreduce per step, linear (one root) or a binomial tree (--collective). "
    "Dynamic strategies (docs/dynamic.md) rebalance during the run: greedy, refine, "
    "greedy-refine, greedy-comm, refine-comm (Charm++'s balancers) and reactive every "
    "--interval steps (30); speculative places on a coarse shadow run of a FLIP trace "
    "--window steps ahead; birdshot-dynamic swaps two partitions when a node is --threshold "
    "over the average; birdshot-best-of-k keeps the best of k random placements. Every "
    "rebalance is an allreduce of the measured loads, and a move costs the partition's "
    "state over the network; with --calibrate from a run that rebalanced, each call also "
    "costs the runtime's decision and, when it moves partitions, its re-plan, as measured.",
    "**Partitions per core.** Without --ppc the workload runs as it comes, on any machine: "
    "a trace's partitions as recorded, a synthetic SPEC's parts= as written. Every static "
    "strategy gives each node its share by cores (within one partition), so 128 partitions on 4 "
    "nodes of 18 cores run at 1.78 per core, and the table, --json and the figure say 1.78. "
    "Fewer partitions than cores run too, with a note on standard error: the cores without a "
    "partition idle. --ppc k resizes the workload, only when asked, to exactly nodes × cores "
    "× k partitions: a synthetic SPEC is regenerated over the same domain on the squarest "
    "grid with that many partitions; a trace file is coarsened by merging whole blocks of "
    "partitions (it cannot be refined); anything else stops with an error naming the numbers "
    "(docs/simulator.md).",
    "**What the numbers mean** (simulated time). step: mean time per step, from the "
    "end of one step to the end of the next. LIF: the busy-time LIF, mean over steps of the "
    "busiest node's task time per core over the balanced time per core (Σ time / Σ cores), − 1 "
    "(0 is perfect balance); task time includes every task's overheads, so it is not grapeshot "
    "place's cost LIF of the same placement (of the trace's cost alone; without overheads the "
    "two agree). hidden: the share of the time "
    "with inter-node data in flight towards a node during which its cores computed. busy: "
    "the share of all core time spent computing. MB/step: inter-node halo data per step. "
    "--json gives the same per run, for scripts (ppc: --ppc's k, or the real partitions per "
    "core of a workload run as it comes; parts_per_core: the real ratio, always).",
    "Example: grapeshot simulate --synthetic "
    "dambreak:parts=32x16x16,cells=16,steps=100,cell_bytes=40,ghost=3,cell_cost=2e-6 "
    "--machine ec2-c4.8xlarge --nodes 32 --strategy geometric,birdshot --ppc 1,2,4,8,16,32",
)
HELP = "\n\n".join(_PARAGRAPHS)
#: Where ``simulate`` writes its figure unless told otherwise (``--figure``, ``--no-figure``).
DEFAULT_FIGURE = Path("grapeshot-sim/sim-time-per-step.png")

# The options, one alias each: the command's signature is then one line per option.
MachineOpt = Annotated[
    str,
    typer.Option("--machine", help="Preset (ec2-c4.8xlarge, bluewaters-xe6, cm5, ...) or .toml."),
]
TraceOpt = Annotated[
    Path | None, typer.Option("--trace", help="Workload trace file (HDF5, docs/formats.md).")
]
SyntheticOpt = Annotated[
    str | None,
    typer.Option(
        "--synthetic",
        help="Synthetic workload KIND:key=value,...; '--synthetic help' lists them.",
        # Eager: '--synthetic help' answers before the required --machine is asked for.
        callback=show_synthetic_kinds,
        is_eager=True,
    ),
]
NodesOpt = Annotated[int | None, typer.Option("--nodes", help="Nodes (default: the machine's).")]
StrategyOpt = Annotated[
    str | None,
    typer.Option(
        "--strategy",
        help=f"Comma-separated strategies: {', '.join(strategy_names())} "
        f"(default: {DEFAULT_STRATEGIES}). {STRATEGY_OPTIONS_HELP}",
    ),
]
PpcOpt = Annotated[
    str | None,
    typer.Option(
        "--ppc",
        help="Comma-separated partitions per core, e.g. 1,2,4,8: resize the workload to "
        "nodes × cores × k partitions for each k (regenerate a SPEC, coarsen a trace). "
        "Default: none, the workload runs as it comes (any partition count on any "
        "machine; the real partitions per core are reported).",
    ),
]
PlacementOpt = Annotated[
    Path | None,
    typer.Option(
        "--placement",
        help="Simulate this placement (a file of grapeshot place --out: .json, .part, "
        ".csv or .npy) instead of "
        "--strategy and --ppc: its partitions must be the workload's, its nodes the "
        "machine's (a preset takes the placement's by default; a machine file keeps "
        "its own).",
    ),
]
StepRangeOpt = Annotated[
    str | None,
    typer.Option("--step-range", help="Simulate only steps A:B of the trace (B excluded)."),
]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of every placement.")]
PhasesOpt = Annotated[int, typer.Option("--phases", help="Halo exchanges (phases) per step.")]
SyncOpt = Annotated[
    str, typer.Option("--sync", help=f"Global operation per step: {', '.join(SYNC_MODES)}.")
]
CollectiveOpt = Annotated[
    str, typer.Option("--collective", help="linear (one root) or binomial (tree).")
]
PinOpt = Annotated[
    bool, typer.Option("--pin", help="Pin partitions to cores (no dynamic dispatch).")
]
TaskOverheadOpt = Annotated[
    float, typer.Option("--task-overhead", help="Seconds of overhead per task.")
]
MsgOverheadOpt = Annotated[
    float, typer.Option("--msg-overhead", help="Seconds per inter-node message at each end.")
]
HopLatencyOpt = Annotated[
    float | None,
    typer.Option("--hop-latency", help="Seconds per network hop (default per topology)."),
]
StateBytesOpt = Annotated[
    int, typer.Option("--state-bytes-per-cell", help="Bytes a migrated partition moves per cell.")
]
SecondsPerWorkOpt = Annotated[
    float | None,
    typer.Option("--seconds-per-work", help="Seconds per work unit (traces in work units)."),
]
BalanceOnOpt = Annotated[
    str | None,
    typer.Option(
        "--balance-on",
        help="Dynamic strategies: what they are shown as each partition's load, time (its "
        "simulated task seconds) or work (the trace's work counts, what grapeshot run's "
        "strategies measure). Default: work with --calibrate and a trace with work "
        "counts (predicting a run), else time.",
    ),
]
TimelineOpt = Annotated[
    Path | None,
    typer.Option("--timeline", help="Write a Chrome-trace timeline (Perfetto) here."),
]
TimelineRunOpt = Annotated[
    str | None,
    typer.Option(
        "--timeline-run",
        help="Run of the timeline: STRATEGY:PPC, or STRATEGY without --ppc (default: first).",
    ),
]
TimelineStepsOpt = Annotated[
    str, typer.Option("--timeline-steps", help="Steps a:b of the timeline.")
]
FigureOpt = Annotated[
    Path,
    typer.Option(
        "--figure",
        help="Where to write the figure (PNG or SVG by the suffix): time per step against "
        "partitions per core, and busy/idle time at each strategy's best.",
    ),
]
NoFigureOpt = Annotated[
    bool, typer.Option("--no-figure", help="Write no figure (and skip matplotlib).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
CalibrateOpt = Annotated[
    Path | None,
    typer.Option(
        "--calibrate",
        help="Fit the machine's network, the runtime's overheads and the seconds per work "
        "unit to this run record (grapeshot run --record) and simulate with them; "
        "replaces --task-overhead, --msg-overhead and --seconds-per-work, and, when the "
        "run rebalanced, models its calls (decision, re-plan) and replaces "
        "--state-bytes-per-cell by the bytes it moved.",
    ),
]


def simulate_command(
    machine: MachineOpt,
    trace: TraceOpt = None,
    synthetic: SyntheticOpt = None,
    nodes: NodesOpt = None,
    strategy: StrategyOpt = None,
    ppc: PpcOpt = None,
    placement: PlacementOpt = None,
    step_range: StepRangeOpt = None,
    seed: SeedOpt = 0,
    phases: PhasesOpt = 1,
    sync: SyncOpt = "none",
    collective: CollectiveOpt = "linear",
    pin: PinOpt = False,
    task_overhead: TaskOverheadOpt = DEFAULT_TASK_OVERHEAD,
    msg_overhead: MsgOverheadOpt = DEFAULT_MESSAGE_OVERHEAD,
    hop_latency: HopLatencyOpt = None,
    state_bytes: StateBytesOpt = DEFAULT_STATE_BYTES_PER_CELL,
    seconds_per_work: SecondsPerWorkOpt = None,
    interval: IntervalOption = None,
    threshold: ThresholdOption = None,
    balancer: BalancerOption = None,
    window: WindowOption = None,
    balance_on: BalanceOnOpt = None,
    timeline: TimelineOpt = None,
    timeline_run: TimelineRunOpt = None,
    timeline_steps: TimelineStepsOpt = "0:3",
    figure: FigureOpt = DEFAULT_FIGURE,
    no_figure: NoFigureOpt = False,
    as_json: JsonOpt = False,
    calibrate: CalibrateOpt = None,
) -> None:
    if synthetic == "help":
        console.print(describe_kinds(), highlight=False, markup=False)
        return
    # The files to write are checked before anything is read or simulated.
    if not no_figure:
        check_output_path(figure, "--figure", suffixes=FIGURE_SUFFIXES)
    if timeline is not None:
        check_output_path(timeline, "--timeline")
    request = SimulateRequest(
        machine=machine, trace=trace, synthetic=synthetic, nodes=nodes, strategy=strategy,
        ppc=ppc, placement=placement, step_range=step_range, seed=seed, phases=phases,
        sync=sync, collective=collective, pin=pin, task_overhead=task_overhead,
        msg_overhead=msg_overhead, hop_latency=hop_latency, state_bytes_per_cell=state_bytes,
        seconds_per_work=seconds_per_work, interval=interval, threshold=threshold,
        balancer=balancer, window=window, balance_on=balance_on,
        timeline=timeline is not None, timeline_run=timeline_run,
        timeline_steps=timeline_steps, calibrate=calibrate,
    )  # fmt: skip
    prepared = prepare_simulation(request, note=lambda text: warn("simulate", text))
    if prepared.calibration is not None:
        _print_calibration(prepared)
    outcome = _run_with_bar(prepared, quiet=as_json)
    written = [] if no_figure else [_save_figure(outcome, figure)]
    tl_run = outcome.timeline_run()
    timeline_path = None
    if tl_run is not None:
        from grapeshot.sim.timeline import write_timeline

        timeline_path = str(write_timeline(timeline, tl_run.result))
    if as_json:
        _emit_json(outcome, written, timeline_path)
        return
    m = outcome.machine
    described = outcome.source.description
    if placement is not None:
        described += f", placement {placement}"
    _print_table(outcome.runs, m.name, m.nodes, described)
    for path in written:
        console.print(f"figure written to {path}")
    if tl_run is not None:
        named = run_name(tl_run.strategy, tl_run.ppc)
        console.print(f"timeline ({named}) written to {timeline_path}")


def _emit_json(outcome: SimulateOutcome, figures: list[str], timeline: str | None) -> None:
    """``--json``: the machine, the workload and every run's summary, on one line."""
    m = outcome.machine
    emit_json(
        {
            "machine": m.name,
            "nodes": m.nodes,
            "cores_per_node": m.cores_per_node,
            "total_cores": m.total_cores,
            "workload": outcome.source.description,
            "runs": [r.summary() for r in outcome.runs],
            "figures": figures,
            "timeline": timeline,
        }
    )


def _print_calibration(prepared: PreparedSimulation) -> None:
    """One line on standard error: what ``--calibrate`` fitted."""
    cal, request, over = prepared.calibration, prepared.request, prepared.options.overheads
    calls = ""
    if cal.state_bytes_per_cell is not None:
        calls = (
            f"; a rebalance {cal.rebalance_overhead * 1e3:.2f} ms + re-plan "
            f"{cal.replan_overhead * 1e6:.0f} µs per partition held, "
            f"{prepared.options.state_bytes_per_cell} B moved per cell"
        )
    err_console.print(
        f"calibrated from {request.calibrate}: latency {cal.latency * 1e6:.1f} µs, bandwidth "
        f"{cal.bandwidth / 1e9:.2f} GB/s, {over.task * 1e6:.1f} µs per task, "
        f"{cal.task_scale:.3g} s per work unit{calls}",
        highlight=False,
    )


def _run_with_bar(prepared: PreparedSimulation, *, quiet: bool) -> SimulateOutcome:
    """The runs, with a bar on a terminal (not with --json, not in a pipe): the runs done and
    the share of the current one simulated, from the kernel (a million partitions take a
    minute)."""
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
        disable=quiet or not err_console.is_terminal,
    ) as bar:
        job = bar.add_task("simulating", total=len(prepared.pairs))

        def report(done: float, total: int, label: str) -> None:
            count = f" ({min(int(done) + 1, total)}/{total})" if total > 1 else ""
            # Drawn at once: updates come seconds apart on long runs, and a short run
            # would otherwise end before the bar's next refresh.
            bar.update(job, completed=done, description=f"simulating {label}{count}", refresh=True)

        return run_simulation(prepared, report)


def _save_figure(outcome: SimulateOutcome, path: Path) -> str:
    """Write the sweep's figure to ``path``; the path written."""
    from grapeshot.report.figures import save_figure
    from grapeshot.report.sweep_figure import sweep_figure

    m = outcome.machine
    title = f"{outcome.source.description} on {m.nodes} × {m.name} ({m.describe_cores()} cores)"
    return str(save_figure(sweep_figure(outcome.runs, title=title), path))


#: The table's columns: header, justification. Short headers keep it within 80 columns;
#: :data:`LEGEND` says what each means.

_COLUMNS = (
    ("strategy", "left"), ("ppc", "right"), ("parts", "right"), ("step", "right"),
    ("LIF", "right"), ("max", "right"), ("hid", "right"), ("busy", "right"),
    ("MB/st", "right"), ("migMB", "right"),
)  # fmt: skip
LEGEND = (
    "ppc: partitions per core; step: mean simulated time per step; LIF: mean over steps of "
    "max/mean − 1 of per-core load (max: its worst step); hid: share of in-flight "
    "inter-node communication covered by computation; busy: share of core time computing; "
    "MB/st: inter-node halo MB per step; migMB: MB migrated; * fastest run."
)


def _ratio(slow: float, fast: float) -> str:
    return "as fast as" if slow <= fast * 1.005 else f"{slow / fast:.2f}× faster than"


def _per_core(run: Run) -> str:
    """A run's partitions per core in a sentence: ``--ppc``'s k, else the real ratio."""
    return str(run.ppc) if run.ppc is not None else run.label


def _per_core_order(run: Run) -> float:
    """Sort key of runs by partitions per core (``--ppc``'s k, else the real ratio)."""
    return float(run.ppc) if run.ppc is not None else run.parts_per_core


def recommendation(runs: list[Run], scale: float, unit: str) -> str:
    """One line: which strategy and partitions per core to use, and against what.

    The fastest run is compared with the best run of the *next best strategy*; with one
    strategy, with the same strategy at its smallest partitions per core. A run is never
    compared with itself: with a single run there is nothing to compare and the line says so.
    """
    best = min(runs, key=lambda r: r.result.total_time)
    head = (
        f"Use {best.strategy} at {_per_core(best)} per core: "
        f"{best.result.step_time_mean * scale:.3f} {unit} per step"
    )
    others = [r for r in runs if r.strategy != best.strategy]
    if others:
        rival = min(others, key=lambda r: r.result.total_time)
        return (
            f"{head}, {_ratio(rival.result.total_time, best.result.total_time)} "
            f"{rival.strategy} at its best ({_per_core(rival)} per core)."
        )
    mine = [r for r in runs if r is not best]
    if not mine:
        return f"{head} (one run: nothing to compare it with)."
    base = min(runs, key=_per_core_order)
    if base is best:
        slowest = max(mine, key=lambda r: r.result.total_time)
        return (
            f"{head}; more partitions per core only slow it down "
            f"({slowest.result.total_time / best.result.total_time:.2f}× slower at "
            f"{_per_core(slowest)} per core)."
        )
    gain = _ratio(base.result.total_time, best.result.total_time)
    return f"{head}, {gain} at {_per_core(base)}."


def _print_table(runs: list[Run], machine: str, nodes: int, description: str) -> None:
    longest = max(r.result.step_time_mean for r in runs)
    scale, unit = (1.0, "s") if longest >= 1 else (1e3, "ms") if longest >= 1e-3 else (1e6, "µs")
    console.print(f"{description}\non {nodes} × {machine}", highlight=False, markup=False)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1))
    for header, justify in _COLUMNS:
        header = f"step {unit}" if header == "step" else header
        table.add_column(header, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    fastest = min(r.result.total_time for r in runs)
    for r in runs:
        res = r.result
        table.add_row(
            r.strategy + ("*" if res.total_time == fastest else ""),
            r.label,
            str(res.n_parts),
            f"{res.step_time_mean * scale:.3f}",
            f"{res.lif_mean:.3f}",
            f"{res.lif_max:.3f}",
            f"{res.hidden_comm_fraction:.0%}",
            f"{res.busy_fraction:.0%}",
            f"{res.bytes_sent_total / max(res.n_steps, 1) / 1e6:.1f}",
            f"{res.bytes_migrated / 1e6:.1f}",
        )
    console.print(table)
    console.print(LEGEND, style="dim", highlight=False)
    console.print(recommendation(runs, scale, unit), highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``simulate`` to the command line."""
    app.command("simulate", help=HELP)(simulate_command)
