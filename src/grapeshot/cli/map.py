"""``grapeshot map``: map communicating tasks onto a tree of cores (TreeMatch and others)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from grapeshot.cli.options import show_synthetic_kinds

HELP = """Map communicating tasks onto a machine's cores (TreeMatch, graph partitioners, ...).

Reads a symmetric affinity matrix (MatrixMarket: bytes or messages between tasks) and a tree
of cores, either TreeMatch's `tleaf` text (`--tleaf "tleaf 3 32 1000 2 100 16 10"`: 32 nodes
of 2 sockets of 16 cores, level costs 1000, 100, 10) or a machine (`--machine plafrim --nodes
2`: its nodes above its node tree, physical core numbering). Prints where each task goes
(`core_of`: task → physical leaf id), the mapping time alone (`seconds`), and the costs: SUM_COM
(Σ bytes × cost of the level where the two tasks meet, costs cumulated bottom-up), MAX_COM (the
largest such term) and hop-bytes (Σ bytes × 2 × levels climbed). With more tasks than cores,
`--oversub K` slots per core (default ceil(tasks / cores)); every core gets floor or ceil of
tasks / cores tasks.

Strategies: treematch, packed, round-robin, metis, kahip, scotch (the last three need pymetis,
kahip, pyscotch). `--strategy all` maps with every available strategy and compares them.

With a workload instead of a matrix (`--trace FILE` or `--synthetic SPEC`, and `--machine`),
its halo graph is mapped onto the whole machine (nodes laid on the network) by each strategy,
plus `treematch-lb` (balanced once from the geometric placement with the trace's mean loads)
and `geometric` for reference; each is reported with its halo bytes between nodes, its network
hop-bytes and its simulated run time, and the best of each is named.
"""


# The options, one alias each: the command's signature is one line per option.
MatrixOpt = Annotated[
    Path | None, typer.Option("--matrix", help="Affinity matrix, MatrixMarket (.mtx).")
]
TraceOpt = Annotated[
    Path | None, typer.Option("--trace", help="Instead of --matrix: a workload trace file.")
]
SyntheticOpt = Annotated[
    str | None,
    typer.Option(
        "--synthetic",
        help="Instead of --matrix: a synthetic workload SPEC; '--synthetic help' lists them.",
        callback=show_synthetic_kinds,
        is_eager=True,
    ),
]
TleafOpt = Annotated[
    str | None,
    typer.Option("--tleaf", help='TreeMatch tree, e.g. "tleaf 3 32 1000 2 100 16 10".'),
]
MachineOpt = Annotated[
    str | None,
    typer.Option("--machine", help="Instead of --tleaf: a preset name or a .toml file."),
]
NodesOpt = Annotated[
    int | None, typer.Option("--nodes", help="Nodes of --machine (default: its own).")
]
OversubOpt = Annotated[
    int | None, typer.Option("--oversub", help="Slots per core (default ceil(n / cores)).")
]
StrategyOpt = Annotated[
    str,
    typer.Option(
        "--strategy", help="treematch, packed, round-robin, metis, kahip, scotch, or all."
    ),
]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the partitioners.")]
OutOpt = Annotated[
    Path | None, typer.Option("--out", help="Write the result (JSON) here, atomically.")
]
AsJsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


def map_command(
    matrix: MatrixOpt = None,
    trace: TraceOpt = None,
    synthetic: SyntheticOpt = None,
    tleaf: TleafOpt = None,
    machine: MachineOpt = None,
    nodes: NodesOpt = None,
    oversub: OversubOpt = None,
    strategy: StrategyOpt = "treematch",
    seed: SeedOpt = 0,
    out: OutOpt = None,
    as_json: AsJsonOpt = False,
) -> None:
    from grapeshot.cli.output import Stages, emit_json
    from grapeshot.model.atomic import check_output_path, write_text_atomic
    from grapeshot.model.errors import InputError
    from grapeshot.model.json_text import json_text
    from grapeshot.model.seed import as_generator
    from grapeshot.model.topology import machine_topology, parse_tleaf, read_affinity_matrix
    from grapeshot.place.mapping import MAPPING_STRATEGIES, map_tasks
    from grapeshot.place.partitioners import available

    as_generator(seed)
    if out is not None:  # checked before any file is read or mapping computed
        check_output_path(out, "--out")
    if trace is not None or synthetic is not None:
        if matrix is not None:
            raise InputError("--matrix", "given with a workload", "--matrix or --trace/--synthetic")
        _compare_on_workload(trace, synthetic, machine, nodes, tleaf, strategy, seed, out, as_json)
        return
    if matrix is None:
        raise InputError("--matrix", "missing", "--matrix FILE, or --trace/--synthetic")
    if (tleaf is None) == (machine is None):
        raise InputError("--tleaf/--machine", "give exactly one", "a tleaf text or a machine")
    if machine is not None:
        from grapeshot.model.machine_file import load_machine

        tree = machine_topology(load_machine(machine, nodes))
    else:
        if nodes is not None:
            raise InputError("--nodes", "needs --machine", "--machine NAME --nodes N")
        tree = parse_tleaf(tleaf)
    a = read_affinity_matrix(matrix)
    if strategy == "all":
        names = [
            n for n in MAPPING_STRATEGIES if n not in ("metis", "kahip", "scotch") or available(n)
        ]
    else:
        names = [strategy]
    if "treematch" in names:
        _check_treematch_memory(a.shape[0], tree.leaves, oversub, matrix)
        from grapeshot.place.treematch import warm_up

        warm_up()  # load the compiled kernels outside the timed mapping
    results = []
    with Stages(as_json) as stage:
        for name in names:
            stage(f"mapping {a.shape[0]:,} tasks onto {tree.leaves:,} cores ({name})")
            results.append(map_tasks(a, tree, name, oversub=oversub, seed=seed))
    payload = results[0] if len(results) == 1 else {"strategies": results}
    if out is not None:
        write_text_atomic(out, json_text(payload) + "\n")
    if as_json:
        emit_json(payload)
        return
    _print_mappings(results, a.shape[0], tree.to_tleaf(), out)


def _print_mappings(results: list[dict], tasks: int, tleaf: str, out: Path | None) -> None:
    """A row per strategy: its hop-bytes, SUM_COM, MAX_COM and seconds."""
    from rich.table import Table

    from grapeshot.cli.output import console

    table = Table(title=f"{tasks} tasks on {tleaf} (oversub {results[0]['oversub']})")
    for col in ("strategy", "hop-bytes", "SUM_COM", "MAX_COM", "seconds"):
        table.add_column(col, justify="left" if col == "strategy" else "right")
    for r in results:
        c = r["cost"]
        table.add_row(
            r["strategy"],
            f"{c['hop_bytes']:.6g}",
            f"{c['sum_com']:.6g}",
            f"{c['max_com']:.6g}",
            f"{r['seconds']:.4f}",
        )
    console.print(table)
    if out is not None:
        console.print(f"result written to {out}")


def _check_treematch_memory(tasks: int, cores: int, oversub: int | None, matrix: Path) -> None:
    """Refuse, before TreeMatch builds its tree of slots (``cores × --oversub``), one that
    needs more memory than the machine has. A bad ``--oversub`` is left to the mapping's own
    check, which names what is wrong with it."""
    import math

    from grapeshot.model.memory import TREEMATCH_BYTES_PER_SLOT, check_memory

    if oversub is None:
        slots, where = cores * max(1, math.ceil(tasks / cores)), f"--matrix {matrix}"
    elif isinstance(oversub, int) and not isinstance(oversub, bool) and oversub >= 1:
        slots, where = cores * oversub, f"--oversub {oversub}"
    else:
        return
    check_memory(
        TREEMATCH_BYTES_PER_SLOT * slots,
        where,
        f"for TreeMatch's {slots:,} slots (cores × slots per core)",
        "a smaller --oversub (default: ceil(tasks / cores))",
    )


def _compare_on_workload(
    trace, synthetic, machine, nodes, tleaf, strategy, seed, out, as_json
) -> None:
    """Every strategy on a workload and a machine: bytes cut, hop-bytes, simulated time."""
    import time

    from rich.table import Table

    from grapeshot.cli.output import console, emit_json
    from grapeshot.model.atomic import write_text_atomic
    from grapeshot.model.errors import InputError
    from grapeshot.model.json_text import json_text
    from grapeshot.model.machine_file import load_machine
    from grapeshot.model.placement import Placement
    from grapeshot.model.source import open_workload
    from grapeshot.place import place
    from grapeshot.place.mapping import (
        MAPPING_STRATEGIES,
        network_metrics,
        place_by_mapping,
        workload_comm,
    )
    from grapeshot.place.partitioners import available
    from grapeshot.place.treematch import warm_up
    from grapeshot.place.treematch_lb import treematch_lb
    from grapeshot.sim import simulate

    if machine is None:
        raise InputError("--machine", "missing", "a machine for the workload (preset or .toml)")
    if tleaf is not None:
        raise InputError("--tleaf", "given with a workload", "--machine (the workload's machine)")
    wl = open_workload(trace, synthetic)
    m = load_machine(machine, nodes)
    extra = ("treematch-lb", "geometric")
    if strategy == "all":
        names = [
            n for n in MAPPING_STRATEGIES if n not in ("metis", "kahip", "scotch") or available(n)
        ] + list(extra)
    elif strategy in extra:
        names = [strategy]
    else:
        from grapeshot.place.mapping import get_mapping_strategy

        get_mapping_strategy(strategy)
        names = [strategy]
    warm_up()
    rows = []
    for name in names:
        started = time.perf_counter()
        if name == "geometric":
            placement = place(wl, m, "geometric", seed=seed)
        elif name == "treematch-lb":
            start = place(wl, m, "geometric", seed=seed).node_of
            lb = treematch_lb(wl.cost.mean(axis=0), workload_comm(wl), start, m, seed=seed)
            placement = Placement(lb.node_of, m.nodes, name, seed, lb.core_of)
        else:
            placement = place_by_mapping(wl, m, name, seed=seed)
        seconds = time.perf_counter() - started
        result = simulate(wl, placement, m)
        rows.append(
            {
                "strategy": name,
                "seconds": seconds,
                **network_metrics(wl, placement.node_of, m),
                "simulated_time": result.total_time,
                "lif_mean": result.lif_mean,
            }
        )
    best = {
        key: min(rows, key=lambda r, k=key: r[k])["strategy"]
        for key in ("hop_bytes", "simulated_time")
    }
    payload = {
        "machine": m.name,
        "nodes": m.nodes,
        "parts": wl.n_parts,
        "steps": wl.n_steps,
        "strategies": rows,
        "best": best,
    }
    if out is not None:
        write_text_atomic(out, json_text(payload) + "\n")
    if as_json:
        emit_json(payload)
        return
    table = Table(title=f"{wl.app} {wl.scene}: {wl.n_parts} partitions on {m.nodes} × {m.name}")
    for col in ("strategy", "bytes between nodes", "hop-bytes", "simulated s", "LIF", "mapping s"):
        table.add_column(col, justify="left" if col == "strategy" else "right")
    for r in rows:
        table.add_row(
            r["strategy"],
            f"{r['bytes_cut']:.4g}",
            f"{r['hop_bytes']:.4g}",
            f"{r['simulated_time']:.4g}",
            f"{r['lif_mean']:.3f}",
            f"{r['seconds']:.3f}",
        )
    console.print(table)
    console.print(
        f"least hop-bytes: {best['hop_bytes']}; fastest simulated run: {best['simulated_time']}"
    )


def register(app: typer.Typer) -> None:
    """Add ``map`` to the command line."""
    app.command("map", help=HELP)(map_command)
