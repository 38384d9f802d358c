"""``grapeshot place``: place a workload on a machine, statically or replaying a dynamic one."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich.table import Table

from grapeshot.cli.options import (
    STRATEGY_OPTIONS_HELP,
    BalancerOption,
    IntervalOption,
    ThresholdOption,
    WindowOption,
    show_synthetic_kinds,
)
from grapeshot.cli.output import FIGURE_SUFFIXES, Stages, console, emit_json, warn
from grapeshot.model.atomic import check_output_path
from grapeshot.model.errors import InputError
from grapeshot.model.machine import MAX_RANKS
from grapeshot.model.machine_file import load_machine
from grapeshot.model.option_checks import parse_sizes, refuse_dynamic_options
from grapeshot.model.placement import (
    RANK_SPLIT_BYTES_PER_PARTITION,
    Placement,
    placement_format,
    placement_metrics,
    save_placement,
    split_over_ranks,
)
from grapeshot.model.source import open_workload
from grapeshot.model.synthetic import describe_kinds
from grapeshot.place import STATIC_STRATEGIES, place, place_grid
from grapeshot.place.static import is_static, parse_strategy
from grapeshot.sim.resize import parts_per_core, sparse_note

#: ``grapeshot place --help``.
HELP = """Place a workload's partitions on a machine's nodes and report the load balance.

    Any trace or synthetic SPEC on any machine: the workload's partitions are placed as they
    come, whatever their number (nothing is merged or regenerated; grapeshot simulate --ppc
    resizes), and the report gives the real partitions per core (128 partitions on 4 nodes of 18
    cores: 1.78). Every static strategy gives each node a partition count proportional to its
    cores (within one). With fewer partitions than cores a note on standard error says how many
    cores (or nodes) get none. A dynamic strategy starts from its static placement and is
    replayed over the trace: every --interval steps it sees the costs of the steps since its
    last call and may move partitions, which then stay there (no time passes: what a move costs
    in run time is grapeshot simulate's answer). The report gives the cost LIF, the load
    imbalance factor of the trace's cost in each step: the busiest node's cost per core over
    the balanced cost per core (Σ cost / Σ cores), − 1 (its mean and max over the steps; not
    grapeshot simulate's busy-time LIF, whose task times include every task's overheads), the
    halo bytes per step that cross between nodes, how many other nodes each node talks to, and for a
    dynamic strategy the migrations; --out writes the last step's placement. With --grid
    instead of a workload, a static strategy places the bare partition grid and the report
    gives partitions per node (what your own MPI code reads from --out). With --ranks or
    --ranks-per-node, --out gives each partition its MPI rank, for your own MPI code
    (examples/read_part.c).
    """


# The options, one alias each: the command's signature is one line per option.
MachineOpt = Annotated[
    str,
    typer.Option(
        "--machine", help="Preset name (ec2-c4.8xlarge, plafrim, cm5, ...) or a .toml file."
    ),
]
StrategyOpt = Annotated[
    str,
    typer.Option(
        "--strategy",
        help=f"Static strategy ({', '.join(STATIC_STRATEGIES)}) or a dynamic one, replayed "
        "over the trace's steps: reactive, greedy, refine, greedy-refine, greedy-comm, "
        "refine-comm, speculative, birdshot-dynamic, birdshot-best-of-k, treematch-lb "
        f"(docs/dynamic.md). {STRATEGY_OPTIONS_HELP}",
    ),
]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed; same seed, same placement.")]
TraceOpt = Annotated[
    Path | None,
    typer.Option("--trace", help="Workload trace file (HDF5, docs/formats.md)."),
]
SyntheticOpt = Annotated[
    str | None,
    typer.Option(
        "--synthetic",
        help="Synthetic workload KIND:key=value,..., e.g. dambreak:parts=64x64,steps=200. "
        "'--synthetic help' lists the kinds and keys.",
        # Eager: '--synthetic help' answers before the required --machine is asked for.
        callback=show_synthetic_kinds,
        is_eager=True,
    ),
]
GridOpt = Annotated[
    str | None,
    typer.Option(
        "--grid",
        help="Place a bare grid of partitions PXxPY[xPZ] (e.g. 10000x10000) instead of a "
        "workload: static strategies only, no costs or halos, so sizes whose workload "
        "would not fit in memory place in seconds; the report gives partitions per node.",
    ),
]
NodesOpt = Annotated[
    int | None, typer.Option("--nodes", help="Nodes to use (default: the machine's).")
]
RanksOpt = Annotated[
    int | None,
    typer.Option(
        "--ranks",
        help="Write one MPI rank per partition instead of a node, for N ranks in all "
        "(mpiexec -n N): nodes get ranks in proportion to their cores, in block order "
        "(node 0 the first ones), and each node's partitions are split over its ranks, "
        "as many a rank within one, neighbours together (docs/placement.md).",
    ),
]
RanksPerNodeOpt = Annotated[
    int | None,
    typer.Option(
        "--ranks-per-node",
        help="As --ranks, with K ranks on every node (mpiexec -n NODES*K -ppn K).",
    ),
]
OutOpt = Annotated[
    Path | None,
    typer.Option(
        "--out",
        help="Write the placement here, atomically, in the format of its extension: .json "
        "(grapeshot's, with seed and metrics), .part (METIS-style: line i holds partition "
        "i's node), .csv (partition,node,core), .npy (int32 node per partition). With "
        "--ranks, ranks instead of nodes, and a .part or .csv opens with a '# grapeshot "
        "placement: ...' line giving the grid and counts (docs/formats.md).",
    ),
]
OutFormatOpt = Annotated[
    str | None,
    typer.Option(
        "--format",
        help="Format of --out whatever its extension: json, part, csv or npy (docs/formats.md).",
    ),
]
FigureOpt = Annotated[
    Path | None,
    typer.Option("--figure", help="Write a PNG/SVG of per-node load per step and LIF."),
]
FullOpt = Annotated[bool, typer.Option("--full", help="Include node_of in --json.")]
AsJsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


def place_command(
    machine: MachineOpt,
    strategy: StrategyOpt = "birdshot",
    interval: IntervalOption = None,
    threshold: ThresholdOption = None,
    balancer: BalancerOption = None,
    window: WindowOption = None,
    seed: SeedOpt = 0,
    trace: TraceOpt = None,
    synthetic: SyntheticOpt = None,
    grid: GridOpt = None,
    nodes: NodesOpt = None,
    ranks: RanksOpt = None,
    ranks_per_node: RanksPerNodeOpt = None,
    out: OutOpt = None,
    out_format: OutFormatOpt = None,
    figure: FigureOpt = None,
    full: FullOpt = False,
    as_json: AsJsonOpt = False,
) -> None:
    if synthetic == "help":
        console.print(describe_kinds(), highlight=False, markup=False)
        return
    # The file to write is checked before the placement is computed.
    if out is None and out_format is not None:
        raise InputError("--format", f"given without --out ({out_format})", "--out FILE")
    if out is not None:
        out_format = placement_format(out, out_format)
        check_output_path(out, "--out")
    if figure is not None:
        check_output_path(figure, "--figure", suffixes=FIGURE_SUFFIXES)
    options = {
        "interval": interval, "threshold": threshold, "balancer": balancer, "window": window
    }  # fmt: skip
    if trace is None and synthetic is None and grid is None:
        raise InputError(
            "--trace/--synthetic/--grid", "none given", "a trace file, a SPEC or a grid"
        )
    if grid is not None:
        parts = _grid_shape(grid, strategy, trace, synthetic, figure, options)
        m = load_machine(machine, nodes)
        per_node = _ranks_per_node(m, ranks, ranks_per_node)
        _place_grid(parts, m, strategy, seed, out, out_format, full, as_json, per_node)
        return
    m = load_machine(machine, nodes)  # before the workload, which may take minutes to build
    per_node = _ranks_per_node(m, ranks, ranks_per_node)
    with Stages(as_json) as stage:
        stage("building the workload" if synthetic is not None else f"reading {trace}")
        wl = open_workload(trace, synthetic)
        _check_place_memory(wl, m, strategy, trace, synthetic, ranked=per_node is not None)
        note = sparse_note(wl.n_parts, m)  # fewer partitions than nodes, or than cores
        if note is not None:
            warn("place", note)
        stage(f"placing {wl.n_parts:,} partitions ({strategy}) and measuring the placement")
        placement, metrics, replay = _place(wl, m, strategy, seed, **options)
        ranked = None
        if per_node is not None:
            stage(f"splitting each node's partitions over its ranks ({per_node.sum():,})")
            ranked = split_over_ranks(placement, per_node, wl.parts_shape)
    summary = _summary(strategy, seed, m, wl, metrics, replay, ranked, per_node)
    if out is not None:
        save_placement(out, placement if ranked is None else ranked, out_format, metrics=summary)
    if figure is not None:
        _save_node_figure(figure, strategy, metrics, wl, m)
    if as_json:
        emit_json({**summary, **(_lists(placement, ranked) if full else {})})
        return
    _print_placement(summary, placement, ranked, metrics, replay, wl, m)
    for label, path in (("placement", out), ("figure", figure)):
        if path is not None:
            console.print(f"{label} written to {path}")


def _summary(strategy, seed, m, wl, metrics, replay, ranked, per_node) -> dict[str, Any]:
    """What ``place --json`` prints (and a ``.json`` placement keeps): the placement's
    balance and cut, a dynamic strategy's migrations, the ranks' own balance with --ranks."""
    summary: dict[str, Any] = {
        "strategy": strategy,
        "seed": seed,
        "machine": m.name,
        "nodes": m.nodes,
        "parts": wl.n_parts,
        "parts_per_core": parts_per_core(wl.n_parts, m),
        "steps": wl.n_steps,
        "lif_mean": metrics.lif_mean,
        "lif_max": metrics.lif_max,
        "bytes_cut": metrics.bytes_cut,
        "bytes_total": metrics.bytes_total,
        "neighbour_nodes_mean": float(metrics.neighbour_nodes.mean()),
    }
    if replay is not None:
        # As in simulate: migrations counts partitions moved; rebalances, the calls that moved.
        summary["migrations"] = sum(mig.parts for mig in replay.migrations)
        summary["migrated_bytes"] = replay.migrated_bytes
        summary["rebalances"] = len(replay.migrations)
    if ranked is not None:
        summary.update(_rank_summary(ranked, per_node))
        # The ranks' own balance and cut: ranks as equal "nodes" (a rank is one core's work).
        by_rank = placement_metrics(ranked, wl)
        summary.update(
            rank_lif_mean=by_rank.lif_mean,
            rank_lif_max=by_rank.lif_max,
            rank_bytes_cut=by_rank.bytes_cut,
        )
    return summary


def _save_node_figure(figure, strategy, metrics, wl, m) -> None:
    """``--figure``: each node's load per step, and the LIF."""
    from grapeshot.report.figures import node_load_figure, save_figure

    fig = node_load_figure(
        {strategy: metrics.node_load},
        {strategy: metrics.lif},
        title=f"{wl.app} {wl.scene}: {wl.n_parts} partitions on {m.nodes} × {m.name}",
        units=wl.units,
    )
    save_figure(fig, figure)


def _print_placement(summary, placement, ranked, metrics, replay, wl, m) -> None:
    """The table of one placement: partitions, balance, cut, migrations, ranks."""
    strategy, seed = summary["strategy"], summary["seed"]
    counts = placement.counts()
    table = Table(title=f"{strategy} on {m.nodes} × {m.name} (seed {seed})")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row("partitions", f"{wl.n_parts} ({wl.n_parts / m.total_cores:.2f} per core)")
    table.add_row("partitions per node", f"{counts.min()}–{counts.max()}")
    table.add_row("steps", str(wl.n_steps))
    table.add_row("LIF mean over steps", f"{metrics.lif_mean:.4f}")
    table.add_row("LIF max over steps", f"{metrics.lif_max:.4f}")
    share = metrics.bytes_cut / metrics.bytes_total if metrics.bytes_total else 0.0
    table.add_row("halo bytes cut per step", f"{metrics.bytes_cut:,} ({share:.1%} of all)")
    table.add_row("neighbour nodes per node", f"{np.mean(metrics.neighbour_nodes):.1f} mean")
    if replay is not None:
        moved = sum(mig.parts for mig in replay.migrations)
        table.add_row("migrations", f"{moved} partitions in {len(replay.migrations)} rebalances")
        table.add_row("state bytes migrated", f"{replay.migrated_bytes:,}")
    _rank_rows(table, summary)
    if ranked is not None:
        table.add_row("LIF over ranks, mean / max", f"{summary['rank_lif_mean']:.4f} / "
                      f"{summary['rank_lif_max']:.4f}")  # fmt: skip
        table.add_row("halo bytes cut between ranks", f"{summary['rank_bytes_cut']:,}")
    console.print(table)


def _grid_shape(grid, strategy, trace, synthetic, figure, options) -> tuple[int, ...]:
    """``--grid``'s partition grid, after refusing what needs a workload: a trace or SPEC
    too, a dynamic strategy or its options, a figure of loads."""
    if trace is not None or synthetic is not None:
        given = "--trace" if trace is not None else "--synthetic"
        raise InputError("--grid", f"given with {given}", "one of --trace, --synthetic, --grid")
    if not is_static(strategy):
        raise InputError(
            "--strategy", f"got {strategy!r} with --grid",
            f"a static strategy ({', '.join(STATIC_STRATEGIES)}); a dynamic one needs a "
            "workload's costs (--trace or --synthetic)",
        )  # fmt: skip
    parse_strategy(strategy)  # its options, before any work
    refuse_dynamic_options(strategy, {k: v for k, v in options.items() if v is not None})
    if figure is not None:
        raise InputError("--figure", "given with --grid", "--trace or --synthetic (its loads)")
    expected = "2 or 3 positive integers joined by 'x', e.g. 10000x10000"
    try:
        parts = parse_sizes(grid, "--grid")
    except InputError:
        raise InputError("--grid", f"got {grid!r}", expected) from None
    if len(parts) not in (2, 3):
        raise InputError("--grid", f"got {grid!r}", expected)
    return parts


def _place_grid(parts, m, strategy, seed, out, out_format, full, as_json, per_node) -> None:
    """``place --grid``: place the bare grid ``parts``, write it, report partitions per node
    (and per rank, split over the ranks ``per_node`` of each node unless None)."""
    from grapeshot.model.memory import check_memory, grid_placement_bytes

    n = math.prod(parts)
    grid = "x".join(map(str, parts))
    # --full --json prints every node number (and rank) as a Python integer at once (files
    # are written a chunk at a time).
    whole = full and as_json
    need = grid_placement_bytes(n, whole=whole)
    if per_node is not None:
        need = need * (2 if whole else 1) + RANK_SPLIT_BYTES_PER_PARTITION * n
    check_memory(
        need, f"--grid {grid}", "to place it",
        "fewer partitions" + (", or --out FILE rather than --full --json" if whole else ""),
    )  # fmt: skip
    note = sparse_note(n, m)
    if note is not None:
        warn("place", note)
    with Stages(as_json) as stage:
        stage(f"placing {n:,} partitions ({strategy})")
        placement = place_grid(parts, m, strategy, seed=seed)
        counts = placement.counts()
        summary = {
            "strategy": strategy,
            "seed": seed,
            "machine": m.name,
            "nodes": m.nodes,
            "grid": list(parts),
            "parts": n,
            "parts_per_core": parts_per_core(n, m),
            "parts_per_node_min": int(counts.min()),
            "parts_per_node_max": int(counts.max()),
        }
        ranked = None
        if per_node is not None:
            stage(f"splitting each node's partitions over its ranks ({per_node.sum():,})")
            ranked = split_over_ranks(placement, per_node, parts)
            summary.update(_rank_summary(ranked, per_node))
        if out is not None:
            stage(f"writing {out}")
            save_placement(
                out, placement if ranked is None else ranked, out_format, metrics=summary
            )
    if as_json:
        emit_json({**summary, **(_lists(placement, ranked) if full else {})})
        return
    table = Table(title=f"{strategy} on {m.nodes} × {m.name} (seed {seed})")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row("partitions", f"{grid} = {n:,} ({n / m.total_cores:.2f} per core)")
    table.add_row("partitions per node", f"{counts.min():,}–{counts.max():,}")
    _rank_rows(table, summary)
    console.print(table)
    console.print("a bare grid: no costs or halos (--trace or --synthetic for loads and halos)")
    if out is not None:
        console.print(f"placement written to {out}")


def _ranks_per_node(m, ranks: int | None, ranks_per_node: int | None) -> np.ndarray | None:
    """The ranks of each node that ``--ranks N`` or ``--ranks-per-node K`` ask for (None
    without either), checked before anything is placed.

    ``--ranks N`` shares the ranks in proportion to the nodes' cores, as partitions are
    (the one quota rule: ``N / nodes`` each on equal nodes, the first nodes one more when
    it does not divide); ``--ranks-per-node K`` gives every node ``K``. Every node needs a
    rank, since it holds partitions.
    """
    if ranks is None and ranks_per_node is None:
        return None
    if ranks is not None and ranks_per_node is not None:
        raise InputError(
            "--ranks", f"given with --ranks-per-node {ranks_per_node}",
            "one of --ranks, --ranks-per-node",
        )  # fmt: skip
    if ranks_per_node is not None:
        total = ranks_per_node * m.nodes
        if not 1 <= total <= MAX_RANKS:
            got = f"got {ranks_per_node}"
            if total > MAX_RANKS:
                got += f": {total:,} ranks on {m.nodes:,} nodes"
            raise InputError(
                "--ranks-per-node", got, f"a positive integer, at most {MAX_RANKS:,} ranks in all"
            )
        return np.full(m.nodes, ranks_per_node, dtype=np.int64)
    if not m.nodes <= ranks <= MAX_RANKS:
        raise InputError(
            "--ranks", f"got {ranks} for {m.nodes:,} nodes",
            f"at least one rank a node ({m.nodes:,} to {MAX_RANKS:,}), or fewer --nodes",
        )  # fmt: skip
    from grapeshot.place.quota import quotas

    cores = m.cores()
    per_node = quotas(ranks, cores)
    if per_node.min() < 1:
        node = int(np.argmin(per_node))
        raise InputError(
            "--ranks", f"got {ranks}: node {node} ({cores[node]} cores) gets no rank by its "
            f"share of the cores", "more ranks, or --ranks-per-node",
        )  # fmt: skip
    return per_node


def _rank_summary(ranked: Placement, per_node: np.ndarray) -> dict[str, int]:
    """The facts ``--ranks`` adds to the report: ranks, and partitions per rank; a note on
    standard error if some ranks get none."""
    fewest, most = ranked.count_range()
    if fewest == 0:
        warn(
            "place",
            f"{ranked.n_parts:,} partitions on {ranked.nodes:,} ranks: some ranks get none "
            "and idle; fewer ranks, or a finer partition grid",
        )
    return {
        "ranks": ranked.nodes,
        "ranks_per_node_min": int(per_node.min()),
        "ranks_per_node_max": int(per_node.max()),
        "parts_per_rank_min": fewest,
        "parts_per_rank_max": most,
    }


def _rank_rows(table: Table, summary: dict) -> None:
    """The rows of :func:`_rank_summary` in the human view, if ranks were asked for."""
    if "ranks" not in summary:
        return
    low, high = summary["ranks_per_node_min"], summary["ranks_per_node_max"]
    per_node = f"{low:,}" if low == high else f"{low:,}–{high:,}"
    table.add_row("MPI ranks", f"{summary['ranks']:,} ({per_node} per node)")
    table.add_row(
        "partitions per rank",
        f"{summary['parts_per_rank_min']:,}–{summary['parts_per_rank_max']:,}",
    )


def _lists(placement: Placement, ranked: Placement | None) -> dict[str, np.ndarray]:
    """What ``--full`` adds to ``--json``: the node of each partition, and its rank."""
    return {"node_of": placement.node_of, **({"rank_of": ranked.node_of} if ranked else {})}


def _check_place_memory(wl, m, strategy, trace, synthetic, *, ranked: bool) -> None:
    """Refuse, before placing, a workload whose placement and metrics need more memory than
    the machine has (a synthetic SPEC's build is checked by itself, before it is built)."""
    from grapeshot.model.memory import check_memory, placement_bytes
    from grapeshot.place.dynamic import DYNAMIC_STRATEGIES

    need = placement_bytes(
        wl.n_parts, wl.n_steps, len(wl.halo.indices), m.nodes,
        replay=strategy in DYNAMIC_STRATEGIES,
    ) + (RANK_SPLIT_BYTES_PER_PARTITION * wl.n_parts if ranked else 0)  # fmt: skip
    where = f"--trace {trace}" if trace is not None else f"--synthetic {synthetic}"
    check_memory(need, where, "to place and measure it", "fewer partitions or steps")


def _place(wl, m, strategy, seed, **options):
    """(placement, metrics, replay or None) of a static or a replayed dynamic strategy."""
    from grapeshot.place.dynamic import DYNAMIC_STRATEGIES
    from grapeshot.sim.sweep import check_strategy, dynamic_strategy

    given = {k: v for k, v in options.items() if v is not None}
    if strategy not in DYNAMIC_STRATEGIES:
        check_strategy(strategy)
        refuse_dynamic_options(strategy, given)
        placement = place(wl, m, strategy, seed=seed)
        return placement, placement_metrics(placement, wl, m), None
    from grapeshot.place.replay import cells_per_part, replay_dynamic, replay_metrics
    from grapeshot.sim.program import DEFAULT_STATE_BYTES_PER_CELL

    dynamic = dynamic_strategy(strategy, wl, m, seed, given)
    initial = place(wl, m, dynamic.initial, seed=seed).node_of
    state_bytes = cells_per_part(wl) * DEFAULT_STATE_BYTES_PER_CELL
    replay = replay_dynamic(wl, m, dynamic, initial, state_bytes)
    final = Placement(node_of=replay.node_of[-1], nodes=m.nodes, strategy=strategy, seed=seed)
    return final, replay_metrics(replay, wl, m), replay


def register(app: typer.Typer) -> None:
    """Add ``place`` to the command line."""
    app.command("place", help=HELP)(place_command)
