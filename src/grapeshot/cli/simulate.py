"""``grapeshot simulate``: run placements on a modelled cluster and compare them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import numpy as np
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
from grapeshot.model.errors import InputError
from grapeshot.model.machine import MAX_NODES
from grapeshot.model.machine_file import is_machine_file, load_machine
from grapeshot.model.synthetic import describe_kinds
from grapeshot.model.workload_file import load_workload
from grapeshot.sim.program import (
    DEFAULT_MESSAGE_OVERHEAD,
    DEFAULT_STATE_BYTES_PER_CELL,
    DEFAULT_TASK_OVERHEAD,
    SYNC_MODES,
    Overheads,
    SimOptions,
)
from grapeshot.sim.resize import WorkloadSource, sparse_note
from grapeshot.sim.sweep import Run, check_strategy, run_sweep, strategy_names
from grapeshot.sim.timeline import write_timeline

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


def _int_list(text: str, where: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(where, f"got {text!r}", "comma-separated integers, e.g. 1,2,4") from None
    if not values or min(values) < 1:
        raise InputError(where, f"got {text!r}", "comma-separated integers >= 1")
    return values


def _steps(text: str | None, where: str) -> tuple[int, int] | None:
    if text is None:
        return None
    lo, sep, hi = text.partition(":")
    try:
        a, b = int(lo), int(hi)
    except ValueError:
        a, b = -1, -1
    if not sep or a < 0 or b <= a:
        raise InputError(where, f"got {text!r}", "a:b with 0 <= a < b")
    return a, b


def _run_name(strategy: str, ppc: int | None) -> str:
    """How --timeline-run names a run: STRATEGY:PPC if resized, STRATEGY as it comes."""
    return strategy if ppc is None else f"{strategy}:{ppc}"


def _timeline_run(text: str | None, runs: list[tuple[str, int | None]]) -> tuple[str, int | None]:
    """The run ``--timeline-run`` names (the first by default), checked against ``runs``."""
    if text is None:
        return runs[0]
    by_name = {_run_name(s, k): (s, k) for s, k in runs}
    if text not in by_name:
        choices = ", ".join(by_name)
        raise InputError("--timeline-run", f"got {text!r}", f"one of {choices}")
    return by_name[text]


def sweep_figure(runs: list[Run], *, title: str):
    """Birdshot figures 9-10 style: time per step against partitions per core, per strategy,
    and each strategy's busy and idle time per core at its best partitions per core."""
    import matplotlib.pyplot as plt

    strategies = list(dict.fromkeys(r.strategy for r in runs))
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    for name in strategies:
        mine = sorted((r for r in runs if r.strategy == name), key=lambda r: r.parts_per_core)
        ax.plot(
            [r.parts_per_core for r in mine],
            [r.result.step_time_mean * 1e3 for r in mine],
            marker="o",
            label=name,
        )
    ax.set_xscale("log", base=2)
    # The real partitions per core (1.78 for 128 partitions on 72 cores), labelled as the
    # table prints them.
    ticks = {r.parts_per_core: r.label for r in runs}
    ax.set_xticks(sorted(ticks), [ticks[x] for x in sorted(ticks)])
    ax.minorticks_off()
    ax.set_xlabel("partitions per core")
    ax.set_ylabel("time per step (ms)")
    ax.set_title("time per step vs partitions per core")
    ax.grid(alpha=0.3)
    ax.legend()
    labels, busy, idle = [], [], []
    for name in strategies:
        best = min((r for r in runs if r.strategy == name), key=lambda r: r.result.total_time)
        res = best.result
        cores = float(res.cores.sum())
        labels.append(f"{name}\n{best.label}/core")
        busy.append(float(res.node_busy.sum()) / cores / res.n_steps * 1e3)
        idle.append(float(res.node_idle.sum()) / cores / res.n_steps * 1e3)
    x = np.arange(len(labels))
    bx.bar(x, busy, label="busy", color="tab:blue")
    bx.bar(x, idle, bottom=busy, label="idle", color="tab:gray")
    bx.set_xticks(x, labels)
    bx.set_ylabel("time per step per core (ms)")
    bx.set_title("busy and idle time at each strategy's best")
    bx.legend()
    fig.suptitle(title)
    return fig


def _dynamic_options(strategies: list[str], **given: Any) -> dict[str, Any]:
    """The dynamic options given on the command line, checked against the strategies.

    Raises
    ------
    InputError
        If an option is given but no selected strategy takes it (it would be ignored).
    """
    from grapeshot.place.dynamic import DYNAMIC_STRATEGIES, factory_keywords

    dynamic = [s for s in strategies if s in DYNAMIC_STRATEGIES]
    options = {k: v for k, v in given.items() if v is not None}
    for key in options:
        takers = [s for s in dynamic if key in factory_keywords(s)]
        if not takers:
            raise InputError(
                f"--{key}",
                "is not used by any selected strategy",
                "a dynamic strategy that takes it (docs/dynamic.md)",
            )
    return options


def placement_on_machine(fixed: Any, path: Path, machine: Any, sized_by: str) -> Any:
    """The placement ``fixed``, read from ``path``, on every node of ``machine``.

    Parameters
    ----------
    fixed
        The :class:`~grapeshot.model.placement.Placement` read (on nodes, not ranks).
    path
        Its file: a file that names nodes only (``.part``, ``.csv``, ``.npy``) is taken on
        all the machine's nodes, the ones it does not name idle; a JSON file says its count.
    machine
        The :class:`~grapeshot.model.machine.Machine` simulated.
    sized_by
        What gave the machine its node count: ``"--nodes"``, or the ``--machine`` argument
        (a preset then has the placement's count, a machine file its own).

    Raises
    ------
    InputError
        In one line, if the placement puts a partition on a node the machine lacks (naming
        the partition, the node, the machine's count and what set it), or its file says
        another node count than the machine's.
    """
    from grapeshot.model.placement import states_node_count

    if fixed.n_parts:
        top = int(fixed.node_of.max())
        if top >= machine.nodes:
            part = int(np.argmax(fixed.node_of == top))
            if sized_by == "--nodes":
                has = f"the machine has {machine.nodes} nodes (--nodes)"
            elif top < MAX_NODES:
                has = f"{sized_by} has {machine.nodes} nodes (--nodes {top + 1} resizes it)"
            else:
                has = f"{sized_by} has {machine.nodes} nodes (grapeshot models at most {MAX_NODES})"
            raise InputError(
                f"--placement {path}",
                f"puts partition {part} on node {top}",
                f"nodes 0 to {machine.nodes - 1}: {has}",
            )
    if fixed.nodes == machine.nodes:
        return fixed
    if states_node_count(path):
        raise InputError(
            f"--placement {path}",
            f"is for {fixed.nodes} nodes",
            f"{machine.nodes}, the machine's ({sized_by})",
        )
    return dataclasses.replace(fixed, nodes=machine.nodes)


def simulate_placement(
    path: Path,
    fixed: Any,
    trace: Path | None,
    synthetic: str | None,
    workload: Any,
    step_range: tuple[int, int] | None,
    machine: Any,
    options: SimOptions,
    timeline_steps: tuple[int, int] | None,
    progress: Callable[[float], None] | None = None,
) -> Run:
    """Simulate the placement read from ``path`` on the workload as it comes (no resizing);
    ``progress`` is called now and then with the share of it simulated.

    Raises
    ------
    InputError
        If the placement's partitions are not the workload's, or its nodes not the machine's.
    """
    from grapeshot.model.synthetic import synthetic_workload
    from grapeshot.sim.engine import simulate
    from grapeshot.sim.network import network_model
    from grapeshot.sim.program import build_program

    wl = workload if workload is not None else synthetic_workload(synthetic)
    source = f"--trace {trace}" if trace is not None else f"--synthetic {synthetic}"
    if fixed.n_parts != wl.n_parts:
        raise InputError(
            f"--placement {path}",
            f"places {fixed.n_parts} partitions",
            f"{wl.n_parts}, the partitions of {source}",
        )
    if fixed.nodes != machine.nodes:
        raise InputError(
            f"--placement {path}",
            f"is for {fixed.nodes} nodes",
            f"{machine.nodes}, the machine's (--nodes)",
        )
    if step_range is not None:
        wl = wl.steps(*step_range)
    result = simulate(
        wl,
        fixed,
        machine,
        options,
        timeline_steps=timeline_steps,
        program=build_program(wl, options),
        network=network_model(machine, options.hop_latency),
        progress=progress,
    )
    return Run("placement", None, fixed.seed or 0, wl.parts_shape, result)


def _check_sweep_memory(
    trace: Path | None,
    synthetic: str | None,
    workload: Any,
    steps_ab: tuple[int, int] | None,
    ppc_text: str | None,
    ppcs: list[int] | None,
    machine: Any,
    phases: int,
    timeline: tuple[int | None, int] | None,
) -> None:
    """Refuse, before anything is built or simulated, a sweep that needs more memory than
    the machine has available.

    The sweep keeps the workload of every partition count it builds (one per ``--ppc``
    level) and runs one simulation at a time, so it needs the sum of the workloads plus the
    largest run: a synthetic workload's build, or the simulator's tasks (and the timeline's
    window, on the run it records). A trace file is in memory already.

    Raises
    ------
    InputError
        Naming ``--ppc`` if a resized level is the largest, else the workload's option.
    """
    import math

    from grapeshot.model import memory
    from grapeshot.model.synthetic import parse_spec

    if synthetic is not None:
        _, params = parse_spec(synthetic)
        shape, steps = tuple(params["parts"]), params["steps"]
    else:
        shape, steps = tuple(workload.parts_shape), workload.n_steps
    run_steps = steps if steps_ab is None else max(min(steps_ab[1], steps) - steps_ab[0], 1)
    kept, peak, largest, worst = 0, 0, -1, None
    for k in ppcs or [None]:
        if k is None:
            n = math.prod(shape)
            messages = (
                memory.grid_messages(shape) if synthetic is not None else len(workload.halo.indices)
            )
        else:
            n = machine.total_cores * k
            messages = n * memory.NEIGHBOURS[len(shape)]
        if synthetic is None and k is None:
            resident = build = 0  # the trace as read, already in memory
        else:
            resident = memory.workload_bytes(n, steps, messages)
            build = resident + (
                memory.HALO_BUILD_BYTES_PER_MESSAGE * messages if synthetic is not None else 0
            )
        window = timeline[1] if timeline is not None and timeline[0] == k else 0
        run = memory.simulation_bytes(n, run_steps, phases, machine.nodes, window=window)
        kept += resident
        peak = max(peak, build - resident, run)
        if resident + run > largest:
            largest, worst = resident + run, k
    if worst is not None:
        where = f"--ppc {ppc_text}"
    else:
        where = f"--trace {trace}" if trace is not None else f"--synthetic {synthetic}"
    memory.check_memory(
        kept + peak, where, "to simulate every run", "fewer partitions (--ppc, parts=) or steps"
    )


def simulate_command(
    machine: Annotated[
        str,
        typer.Option(
            "--machine", help="Preset (ec2-c4.8xlarge, bluewaters-xe6, cm5, ...) or .toml."
        ),
    ],
    trace: Annotated[
        Path | None, typer.Option("--trace", help="Workload trace file (HDF5, docs/formats.md).")
    ] = None,
    synthetic: Annotated[
        str | None,
        typer.Option(
            "--synthetic",
            help="Synthetic workload KIND:key=value,...; '--synthetic help' lists them.",
            # Eager: '--synthetic help' answers before the required --machine is asked for.
            callback=show_synthetic_kinds,
            is_eager=True,
        ),
    ] = None,
    nodes: Annotated[
        int | None, typer.Option("--nodes", help="Nodes (default: the machine's).")
    ] = None,
    strategy: Annotated[
        str | None,
        typer.Option(
            "--strategy",
            help=f"Comma-separated strategies: {', '.join(strategy_names())} "
            f"(default: geometric,birdshot). {STRATEGY_OPTIONS_HELP}",
        ),
    ] = None,
    ppc: Annotated[
        str | None,
        typer.Option(
            "--ppc",
            help="Comma-separated partitions per core, e.g. 1,2,4,8: resize the workload to "
            "nodes × cores × k partitions for each k (regenerate a SPEC, coarsen a trace). "
            "Default: none, the workload runs as it comes (any partition count on any "
            "machine; the real partitions per core are reported).",
        ),
    ] = None,
    placement: Annotated[
        Path | None,
        typer.Option(
            "--placement",
            help="Simulate this placement (a file of grapeshot place --out: .json, .part, "
            ".csv or .npy) instead of "
            "--strategy and --ppc: its partitions must be the workload's, its nodes the "
            "machine's (a preset takes the placement's by default; a machine file keeps "
            "its own).",
        ),
    ] = None,
    step_range: Annotated[
        str | None,
        typer.Option("--step-range", help="Simulate only steps A:B of the trace (B excluded)."),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of every placement.")] = 0,
    phases: Annotated[int, typer.Option("--phases", help="Halo exchanges (phases) per step.")] = 1,
    sync: Annotated[
        str, typer.Option("--sync", help=f"Global operation per step: {', '.join(SYNC_MODES)}.")
    ] = "none",
    collective: Annotated[
        str, typer.Option("--collective", help="linear (one root) or binomial (tree).")
    ] = "linear",
    pin: Annotated[
        bool, typer.Option("--pin", help="Pin partitions to cores (no dynamic dispatch).")
    ] = False,
    task_overhead: Annotated[
        float, typer.Option("--task-overhead", help="Seconds of overhead per task.")
    ] = DEFAULT_TASK_OVERHEAD,
    msg_overhead: Annotated[
        float,
        typer.Option("--msg-overhead", help="Seconds per inter-node message at each end."),
    ] = DEFAULT_MESSAGE_OVERHEAD,
    hop_latency: Annotated[
        float | None,
        typer.Option("--hop-latency", help="Seconds per network hop (default per topology)."),
    ] = None,
    state_bytes: Annotated[
        int,
        typer.Option("--state-bytes-per-cell", help="Bytes a migrated partition moves per cell."),
    ] = DEFAULT_STATE_BYTES_PER_CELL,
    seconds_per_work: Annotated[
        float | None,
        typer.Option("--seconds-per-work", help="Seconds per work unit (traces in work units)."),
    ] = None,
    interval: IntervalOption = None,
    threshold: ThresholdOption = None,
    balancer: BalancerOption = None,
    window: WindowOption = None,
    balance_on: Annotated[
        str | None,
        typer.Option(
            "--balance-on",
            help="Dynamic strategies: what they are shown as each partition's load, time (its "
            "simulated task seconds) or work (the trace's work counts, what grapeshot run's "
            "strategies measure). Default: work with --calibrate and a trace with work "
            "counts (predicting a run), else time.",
        ),
    ] = None,
    timeline: Annotated[
        Path | None,
        typer.Option("--timeline", help="Write a Chrome-trace timeline (Perfetto) here."),
    ] = None,
    timeline_run: Annotated[
        str | None,
        typer.Option(
            "--timeline-run",
            help="Run of the timeline: STRATEGY:PPC, or STRATEGY without --ppc (default: first).",
        ),
    ] = None,
    timeline_steps: Annotated[
        str, typer.Option("--timeline-steps", help="Steps a:b of the timeline.")
    ] = "0:3",
    figure: Annotated[
        Path,
        typer.Option(
            "--figure",
            help="Where to write the figure (PNG or SVG by the suffix): time per step against "
            "partitions per core, and busy/idle time at each strategy's best.",
        ),
    ] = DEFAULT_FIGURE,
    no_figure: Annotated[
        bool, typer.Option("--no-figure", help="Write no figure (and skip matplotlib).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
    calibrate: Annotated[
        Path | None,
        typer.Option(
            "--calibrate",
            help="Fit the machine's network, the runtime's overheads and the seconds per work "
            "unit to this run record (grapeshot run --record) and simulate with them; "
            "replaces --task-overhead, --msg-overhead and --seconds-per-work, and, when the "
            "run rebalanced, models its calls (decision, re-plan) and replaces "
            "--state-bytes-per-cell by the bytes it moved.",
        ),
    ] = None,
) -> None:
    if synthetic == "help":
        console.print(describe_kinds(), highlight=False, markup=False)
        return
    if (trace is None) == (synthetic is None):
        raise InputError("--trace/--synthetic", "need exactly one of them", "a file or a SPEC")
    # The files to write are checked before anything is read or simulated.
    if not no_figure:
        check_output_path(figure, "--figure", suffixes=FIGURE_SUFFIXES)
    if timeline is not None:
        check_output_path(timeline, "--timeline")
    fixed = None
    if placement is not None:
        for name, value in (("--strategy", strategy), ("--ppc", ppc)):
            if value is not None:
                raise InputError(
                    "--placement", f"given with {name} {value}", f"one of --placement, {name}"
                )
        from grapeshot.model.placement import load_placement

        fixed = load_placement(placement)
        if fixed.per_rank:
            raise InputError(
                f"--placement {placement}",
                f"places partitions on {fixed.nodes} MPI ranks (grapeshot place --ranks)",
                "a placement on the machine's nodes (grapeshot place without --ranks)",
            )
    # A preset's node count is its paper's example size: it takes the placement's (up to
    # grapeshot's limit; past it, placement_on_machine names the partition). A machine file's
    # is the user's description of their cluster: only --nodes resizes it.
    resized = nodes is not None
    if fixed is not None and nodes is None and not is_machine_file(machine):
        nodes = fixed.nodes if fixed.nodes <= MAX_NODES else None
    strategy = "geometric,birdshot" if strategy is None else strategy
    strategies = [s.strip() for s in strategy.split(",") if s.strip()]
    if not strategies:
        raise InputError("--strategy", f"got {strategy!r}", "comma-separated strategy names")
    for name in strategies:
        check_strategy(name)
    dynamic_options = _dynamic_options(strategies, interval=interval, threshold=threshold,
                                       window=window, balancer=balancer)  # fmt: skip
    # Without --ppc the workload runs as it comes: resizing happens only when asked.
    ppcs = None if ppc is None else _int_list(ppc, "--ppc")
    steps_ab = _steps(step_range, "--step-range")
    window = _steps(timeline_steps, "--timeline-steps")
    m = load_machine(machine, nodes)
    if fixed is not None:
        assert placement is not None
        fixed = placement_on_machine(fixed, placement, m, "--nodes" if resized else machine)
    workload = load_workload(trace) if trace is not None else None
    overheads = Overheads(task=task_overhead, message=msg_overhead)
    if calibrate is not None:
        from grapeshot.sim.calibrate import calibration_from_record

        cal = calibration_from_record(str(calibrate))
        seconds = workload is not None and workload.units == "s"
        m, overheads = cal.apply(m, phases=phases, measured_costs=seconds)
        seconds_per_work = cal.task_scale
        calls = ""
        if cal.state_bytes_per_cell is not None:
            state_bytes = round(cal.state_bytes_per_cell)
            calls = (
                f"; a rebalance {cal.rebalance_overhead * 1e3:.2f} ms + re-plan "
                f"{cal.replan_overhead * 1e6:.0f} µs per partition held, {state_bytes} B "
                "moved per cell"
            )
        err_console.print(
            f"calibrated from {calibrate}: latency {cal.latency * 1e6:.1f} µs, bandwidth "
            f"{cal.bandwidth / 1e9:.2f} GB/s, {overheads.task * 1e6:.1f} µs per task, "
            f"{cal.task_scale:.3g} s per work unit{calls}",
            highlight=False,
        )
    if balance_on is None:
        # A calibrated simulation predicts a run of the runtime, whose strategies see work.
        counted = workload.work is not None if workload is not None else False
        balance_on = "work" if calibrate is not None and counted else "time"
    options = SimOptions(
        phases=phases,
        sync=sync,
        collective=collective,
        pin=pin,
        overheads=overheads,
        hop_latency=hop_latency,
        state_bytes_per_cell=state_bytes,
        seconds_per_work=seconds_per_work,
        balance_on=balance_on,
    )
    source = (
        WorkloadSource(spec=synthetic, steps=steps_ab)
        if synthetic is not None
        else WorkloadSource(workload=workload, steps=steps_ab)
    )
    pairs: list[tuple[str, int | None]]
    if fixed is not None:
        assert placement is not None
        pairs = [("placement", None)]
    else:
        pairs = [(s, k) for k in (ppcs or [None]) for s in strategies]
    selected = _timeline_run(timeline_run, pairs) if timeline is not None else None
    tl = None if selected is None or window is None else (selected[0], selected[1], window)
    _check_sweep_memory(
        trace, synthetic, workload, steps_ab, ppc, ppcs, m, phases,
        None if tl is None else (tl[1], tl[2][1] - tl[2][0]),
    )  # fmt: skip
    if ppcs is None:
        # Every input is checked by now: the note comes before the run, not before an error.
        n_given = fixed.n_parts if fixed is not None else source.as_given().n_parts
        remedy = "fewer --nodes, or a finer partition grid" + (
            "" if synthetic is None else " (parts=, or --ppc K to regenerate the SPEC)"
        )
        note = sparse_note(n_given, m, remedy)
        if note is not None:
            warn("simulate", note)

    # A bar on a terminal (not with --json, not in a pipe): the runs done and the share of
    # the current one simulated, from the kernel (a million partitions take a minute).
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
        disable=as_json or not err_console.is_terminal,
    ) as bar:
        job = bar.add_task("simulating", total=len(pairs))

        def report(done: float, total: int, label: str) -> None:
            count = f" ({min(int(done) + 1, total)}/{total})" if total > 1 else ""
            # Drawn at once: updates come seconds apart on long runs, and a short run
            # would otherwise end before the bar's next refresh.
            bar.update(job, completed=done, description=f"simulating {label}{count}", refresh=True)

        if fixed is not None:
            assert placement is not None
            name = str(placement)
            run = simulate_placement(
                placement, fixed, trace, synthetic, workload, steps_ab, m, options,
                None if tl is None else tl[2], lambda share: report(share, 1, name),
            )  # fmt: skip
            runs = [Run(pairs[0][0], pairs[0][1], run.seed, run.parts_shape, run.result)]
        else:
            runs = run_sweep(
                source, m, strategies, ppcs, seed=seed, options=options, progress=report,
                timeline=tl, dynamic_options=dynamic_options,
            )  # fmt: skip

    written: list[str] = []
    if not no_figure:
        from grapeshot.report.figures import save_figure

        fig = sweep_figure(
            runs,
            title=f"{source.description} on {m.nodes} × {m.name} ({m.describe_cores()} cores)",
        )
        written.append(str(save_figure(fig, figure)))
    timeline_path = None
    if tl is not None:
        run = next(r for r in runs if (r.strategy, r.ppc) == (tl[0], tl[1]))
        timeline_path = str(write_timeline(timeline, run.result))
    if as_json:
        emit_json(
            {
                "machine": m.name,
                "nodes": m.nodes,
                "cores_per_node": m.cores_per_node,
                "total_cores": m.total_cores,
                "workload": source.description,
                "runs": [r.summary() for r in runs],
                "figures": written,
                "timeline": timeline_path,
            }
        )
        return
    described = source.description + ("" if placement is None else f", placement {placement}")
    _print_table(runs, m.name, m.nodes, described)
    for path in written:
        console.print(f"figure written to {path}")
    if timeline_path is not None:
        console.print(f"timeline ({_run_name(tl[0], tl[1])}) written to {timeline_path}")


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
