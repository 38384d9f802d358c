"""``grapeshot simulate`` as a library call: a request with the command line's defaults, its
checks, and the runs.

:class:`SimulateRequest` holds one field per option of the command (the same names, the same
defaults); :func:`prepare_simulation` checks it and loads what it names (machine, workload,
placement, calibration) before anything is simulated, and :func:`run_simulation` runs the
sweep (or the one placement) with an optional progress callback. ``grapeshot.simulate(...)``
does both::

    import grapeshot

    outcome = grapeshot.simulate(machine="plafrim", nodes=4,
                                 synthetic="binary:parts=16x16,steps=10")
    for run in outcome.runs:
        print(run.strategy, run.result.step_time_mean)

The command line only parses its options into a request, draws the progress bar, and writes
the table, the figure (:func:`grapeshot.report.sweep_figure.sweep_figure`) and the timeline.
Every refusal is an :class:`~grapeshot.model.errors.InputError` naming the option.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from grapeshot.model.errors import InputError
from grapeshot.model.machine import MAX_NODES, Machine
from grapeshot.model.machine_file import is_machine_file, load_machine
from grapeshot.model.workload_file import load_workload
from grapeshot.sim.program import (
    DEFAULT_MESSAGE_OVERHEAD,
    DEFAULT_STATE_BYTES_PER_CELL,
    DEFAULT_TASK_OVERHEAD,
    Overheads,
    SimOptions,
)
from grapeshot.sim.resize import WorkloadSource, sparse_note
from grapeshot.sim.sweep import Progress, Run, check_strategy, run_sweep

#: Strategies simulated when the request names none.
DEFAULT_STRATEGIES = "geometric,birdshot"


@dataclass(frozen=True, kw_only=True)
class SimulateRequest:
    """What ``grapeshot simulate`` is asked: one field per option (``--msg-overhead`` is
    ``msg_overhead``), the command line's defaults. Lists are the command line's text
    (``strategy="geometric,birdshot"``, ``ppc="1,2,4"``, ``step_range="10:20"``).

    ``timeline``: keep the tasks of ``timeline_steps`` of the run ``timeline_run`` (the
    command line's ``--timeline FILE`` sets it; the file is the command's to write).
    """

    machine: str
    trace: Path | str | None = None
    synthetic: str | None = None
    nodes: int | None = None
    strategy: str | None = None
    ppc: str | None = None
    placement: Path | str | None = None
    step_range: str | None = None
    seed: int = 0
    phases: int = 1
    sync: str = "none"
    collective: str = "linear"
    pin: bool = False
    task_overhead: float = DEFAULT_TASK_OVERHEAD
    msg_overhead: float = DEFAULT_MESSAGE_OVERHEAD
    hop_latency: float | None = None
    state_bytes_per_cell: int = DEFAULT_STATE_BYTES_PER_CELL
    seconds_per_work: float | None = None
    interval: int | None = None
    threshold: float | None = None
    balancer: str | None = None
    window: int | None = None
    balance_on: str | None = None
    timeline: bool = False
    timeline_run: str | None = None
    timeline_steps: str = "0:3"
    calibrate: Path | str | None = None


@dataclass(frozen=True, eq=False)
class PreparedSimulation:
    """A checked request, with what it loaded; :func:`run_simulation` runs it.

    Attributes
    ----------
    machine
        The machine at the node count simulated.
    source
        The workload (trace or SPEC, step range) and its description.
    pairs
        ``(strategy, partitions per core or None)`` of each run, in order (``("placement",
        None)`` for a placement file).
    calibration
        The :class:`~grapeshot.sim.calibrate.Calibration` fitted with ``calibrate``, or
        ``None``.
    timeline
        ``(strategy, ppc, (first step, end step))`` of the run whose tasks are kept, or
        ``None``.
    """

    request: SimulateRequest
    machine: Machine
    source: WorkloadSource
    options: SimOptions
    pairs: list[tuple[str, int | None]]
    strategies: list[str]
    ppcs: list[int] | None
    dynamic_options: dict[str, Any]
    steps: tuple[int, int] | None
    workload: Any
    placement: Any
    calibration: Any
    timeline: tuple[str, int | None, tuple[int, int]] | None


@dataclass(frozen=True, eq=False)
class SimulateOutcome:
    """The runs of a request, in the order of :attr:`PreparedSimulation.pairs`."""

    prepared: PreparedSimulation
    runs: list[Run]

    @property
    def machine(self) -> Machine:
        """The machine simulated."""
        return self.prepared.machine

    @property
    def source(self) -> WorkloadSource:
        """The workload simulated."""
        return self.prepared.source

    def timeline_run(self) -> Run | None:
        """The run whose tasks were kept for a timeline, if any."""
        tl = self.prepared.timeline
        if tl is None:
            return None
        return next(r for r in self.runs if (r.strategy, r.ppc) == (tl[0], tl[1]))


def simulate(**options: Any) -> SimulateOutcome:
    """Run ``grapeshot simulate`` from Python: keywords as :class:`SimulateRequest`'s fields
    (``machine=`` and one of ``trace=`` / ``synthetic=`` at least), the command line's
    defaults for the rest. Notes (too few partitions for the cores) come as warnings."""
    return run_simulation(prepare_simulation(SimulateRequest(**options)))


def prepare_simulation(
    request: SimulateRequest, note: Callable[[str], None] | None = None
) -> PreparedSimulation:
    """Check ``request`` and load what it names, before anything is simulated.

    ``note(text)`` hears what the run will do that the user may not expect (more cores than
    partitions); default: a :class:`UserWarning`.

    Raises
    ------
    InputError
        Naming the option, for anything the runs could not do.
    """
    r = request
    if (r.trace is None) == (r.synthetic is None):
        raise InputError("--trace/--synthetic", "need exactly one of them", "a file or a SPEC")
    placement_path = None if r.placement is None else Path(r.placement)
    trace = None if r.trace is None else Path(r.trace)
    fixed = None if placement_path is None else _read_placement(r, placement_path)
    nodes = r.nodes
    # A preset's node count is its paper's example size: it takes the placement's (up to
    # grapeshot's limit; past it, placement_on_machine names the partition). A machine file's
    # is the user's description of their cluster: only --nodes resizes it.
    if fixed is not None and nodes is None and not is_machine_file(r.machine):
        nodes = fixed.nodes if fixed.nodes <= MAX_NODES else None
    text = DEFAULT_STRATEGIES if r.strategy is None else r.strategy
    strategies = [s.strip() for s in text.split(",") if s.strip()]
    if not strategies:
        raise InputError("--strategy", f"got {text!r}", "comma-separated strategy names")
    for name in strategies:
        check_strategy(name)
    dynamic_options = _dynamic_options(
        strategies, interval=r.interval, threshold=r.threshold, window=r.window,
        balancer=r.balancer,
    )  # fmt: skip
    # Without --ppc the workload runs as it comes: resizing happens only when asked.
    ppcs = None if r.ppc is None else _int_list(r.ppc, "--ppc")
    steps = _steps(r.step_range, "--step-range")
    window = _steps(r.timeline_steps, "--timeline-steps")
    machine = load_machine(r.machine, nodes)
    if fixed is not None:
        assert placement_path is not None
        sized_by = "--nodes" if r.nodes is not None else r.machine
        fixed = placement_on_machine(fixed, placement_path, machine, sized_by)
    workload = load_workload(trace) if trace is not None else None
    overheads = Overheads(task=r.task_overhead, message=r.msg_overhead)
    seconds_per_work, state_bytes, cal = r.seconds_per_work, r.state_bytes_per_cell, None
    if r.calibrate is not None:
        from grapeshot.sim.calibrate import calibration_from_record

        cal = calibration_from_record(str(r.calibrate))
        seconds = workload is not None and workload.units == "s"
        machine, overheads = cal.apply(machine, phases=r.phases, measured_costs=seconds)
        seconds_per_work = cal.task_scale
        if cal.state_bytes_per_cell is not None:
            state_bytes = round(cal.state_bytes_per_cell)
    balance_on = r.balance_on
    if balance_on is None:
        # A calibrated simulation predicts a run of the runtime, whose strategies see work.
        counted = workload is not None and workload.work is not None
        balance_on = "work" if r.calibrate is not None and counted else "time"
    options = SimOptions(
        phases=r.phases, sync=r.sync, collective=r.collective, pin=r.pin, overheads=overheads,
        hop_latency=r.hop_latency, state_bytes_per_cell=state_bytes,
        seconds_per_work=seconds_per_work, balance_on=balance_on,
    )  # fmt: skip
    source = (
        WorkloadSource(spec=r.synthetic, steps=steps)
        if r.synthetic is not None
        else WorkloadSource(workload=workload, steps=steps)
    )
    if fixed is not None:
        pairs: list[tuple[str, int | None]] = [("placement", None)]
    else:
        pairs = [(s, k) for k in (ppcs or [None]) for s in strategies]
    selected = _timeline_run(r.timeline_run, pairs) if r.timeline else None
    tl = None if selected is None or window is None else (selected[0], selected[1], window)
    _check_sweep_memory(
        trace, r.synthetic, workload, steps, r.ppc, ppcs, machine, r.phases,
        None if tl is None else (tl[1], tl[2][1] - tl[2][0]),
    )  # fmt: skip
    if ppcs is None:
        # Every input is checked by now: the note comes before the run, not before an error.
        n_given = fixed.n_parts if fixed is not None else source.as_given().n_parts
        remedy = "fewer --nodes, or a finer partition grid" + (
            "" if r.synthetic is None else " (parts=, or --ppc K to regenerate the SPEC)"
        )
        text = sparse_note(n_given, machine, remedy)
        if text is not None:
            (note or (lambda t: warnings.warn(t, stacklevel=3)))(text)
    return PreparedSimulation(
        r, machine, source, options, pairs, strategies, ppcs, dynamic_options, steps,
        workload, fixed, cal, tl,
    )  # fmt: skip


def run_simulation(
    prepared: PreparedSimulation, progress: Progress | None = None
) -> SimulateOutcome:
    """Run every strategy at every partitions per core (or the one placement) of
    ``prepared``; ``progress(done, total, label)`` as :func:`~grapeshot.sim.sweep.run_sweep`."""
    p, r = prepared, prepared.request
    if p.placement is not None:
        name = str(r.placement)
        report = None if progress is None else (lambda share: progress(share, 1, name))
        trace = None if r.trace is None else Path(r.trace)
        run = simulate_placement(
            Path(r.placement), p.placement, trace, r.synthetic, p.workload, p.steps,
            p.machine, p.options, None if p.timeline is None else p.timeline[2], report,
        )  # fmt: skip
        runs = [Run(p.pairs[0][0], p.pairs[0][1], run.seed, run.parts_shape, run.result)]
    else:
        runs = run_sweep(
            p.source, p.machine, p.strategies, p.ppcs, seed=r.seed, options=p.options,
            progress=progress, timeline=p.timeline, dynamic_options=p.dynamic_options,
        )  # fmt: skip
    return SimulateOutcome(p, runs)


def _read_placement(r: SimulateRequest, path: Path) -> Any:
    """The placement file of ``r``, refused with ``--strategy``/``--ppc`` or on ranks."""
    for name, value in (("--strategy", r.strategy), ("--ppc", r.ppc)):
        if value is not None:
            raise InputError(
                "--placement", f"given with {name} {value}", f"one of --placement, {name}"
            )
    from grapeshot.model.placement import load_placement

    fixed = load_placement(path)
    if fixed.per_rank:
        raise InputError(
            f"--placement {path}",
            f"places partitions on {fixed.nodes} MPI ranks (grapeshot place --ranks)",
            "a placement on the machine's nodes (grapeshot place without --ranks)",
        )
    return fixed


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


def run_name(strategy: str, ppc: int | None) -> str:
    """How --timeline-run names a run: STRATEGY:PPC if resized, STRATEGY as it comes."""
    return strategy if ppc is None else f"{strategy}:{ppc}"


def _timeline_run(text: str | None, runs: list[tuple[str, int | None]]) -> tuple[str, int | None]:
    """The run ``--timeline-run`` names (the first by default), checked against ``runs``."""
    if text is None:
        return runs[0]
    by_name = {run_name(s, k): (s, k) for s, k in runs}
    if text not in by_name:
        choices = ", ".join(by_name)
        raise InputError("--timeline-run", f"got {text!r}", f"one of {choices}")
    return by_name[text]


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
