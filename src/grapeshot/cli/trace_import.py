"""``grapeshot trace import``: a workload trace from the user's own timings (CSV files).

The parsing is :mod:`grapeshot.model.trace_csv`; this module checks the options and the
output path before any file is read, writes the trace atomically and says what it holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from grapeshot.cli.output import console, emit_json
from grapeshot.model.atomic import check_output_path
from grapeshot.model.option_checks import parse_cells, parse_parts
from grapeshot.model.trace_csv import GRID_CELL_BYTES, GRID_GHOST, import_trace

# The options, one alias each: the command's signature is one line per option.
CostsOpt = Annotated[
    Path,
    typer.Option(
        "--csv",
        help="Cost file: columns step,partition,seconds (header required).",
        show_default=False,
    ),
]
PartsOpt = Annotated[
    str,
    typer.Option(
        "--parts",
        help="Partitions per axis PX,PY[,PZ]; partition ids flatten the grid in C order "
        "(last axis fastest). No grid in your code: --parts P,1.",
        show_default=False,
    ),
]
OutOpt = Annotated[
    Path,
    typer.Option("--out", help="Workload file to write (HDF5), atomically.", show_default=False),
]
HaloOpt = Annotated[
    Path | None,
    typer.Option(
        "--halo",
        help="Halo file: columns src,dst,bytes, bytes sent from src to dst in every step "
        f"(default: the grid's halo, {GRID_GHOST} ghost layer of {GRID_CELL_BYTES}-byte "
        "cells to every neighbour).",
    ),
]
CellsOpt = Annotated[
    str | None,
    typer.Option(
        "--cells",
        help="Cells per axis NX[,NY[,NZ]] (default: one cell per partition). They size the "
        "grid halo and the state a migrated partition carries.",
    ),
]
AsJsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


def trace_import_command(
    costs: CostsOpt,
    parts: PartsOpt,
    out: OutOpt,
    halo: HaloOpt = None,
    cells: CellsOpt = None,
    as_json: AsJsonOpt = False,
) -> None:
    """Import your own timings as a workload trace, for grapeshot place and simulate.

    Time your code however you like and write a **cost file** (CSV, header required, columns
    in any order, rows in any order):

    - `step`: the step, 0 to S-1 (every step present);
    - `partition`: the partition, 0 to P-1, P the product of --parts (every partition in
      every step, once; a partition idle in a step is a row with 0 seconds);
    - `seconds`: what that partition's work took in that step, a number >= 0.

    Optionally a **halo file** (--halo; CSV, header required) lists what moves between
    partitions in every step, one row per directed message, each pair once (list both
    directions of an exchange):

    - `src`, `dst`: the sending and the receiving partition;
    - `bytes`: the bytes src sends dst in every step, an integer >= 0.

    Without --halo the halo is the partition grid's over --cells. Example: `grapeshot trace
    import --csv costs.csv --halo halo.csv --parts 8,8 --out mine.h5`, then `grapeshot
    simulate --trace mine.h5 --machine plafrim`. Formats: docs/formats.md.
    """
    part_shape = parse_parts(parts)
    cell_shape = parse_cells(cells, len(part_shape))
    check_output_path(out, "--out")
    workload = import_trace(costs, part_shape, cells=cell_shape, halo=halo)
    from grapeshot.apps.trace_stats import trace_stats
    from grapeshot.model.workload_file import save_workload

    save_workload(out, workload)
    per_step = workload.cost.sum(axis=1)
    summary: dict[str, Any] = {
        "csv": str(costs),
        "halo": str(halo) if halo is not None else "grid",
        "parts": list(workload.parts_shape),
        "cells": list(workload.domain_shape),
        "steps": workload.n_steps,
        "units": workload.units,
        "seconds_per_step_mean": float(per_step.mean()),
        "halo_messages": workload.halo.n_messages,
        "halo_bytes_per_step": int(workload.halo.nbytes.sum()),
        "out": str(out),
        "stats": trace_stats(workload).as_dict(),
    }
    if as_json:
        emit_json(summary)
        return
    table = Table(title=f"{costs}: trace of {workload.n_steps} steps")
    table.add_column("")
    table.add_column("value", justify="right")
    table.add_row("partitions", " × ".join(map(str, workload.parts_shape)))
    table.add_row("cells", " × ".join(map(str, workload.domain_shape)))
    table.add_row(
        "seconds per step (all partitions), mean", f"{summary['seconds_per_step_mean']:.4g}"
    )
    source = f"from {halo}" if halo is not None else "from the grid"
    table.add_row(f"halo messages per step ({source})", f"{workload.halo.n_messages:,}")
    table.add_row("halo bytes per step", f"{summary['halo_bytes_per_step']:,}")
    table.add_row("partition max/mean − 1 per step, mean", f"{summary['stats']['imbalance']:.2f}")
    console.print(table)
    console.print(f"trace written to {out}")


def register(app: typer.Typer) -> None:
    """Add ``import`` (reached as ``grapeshot trace import``) to the command line."""
    app.command("import")(trace_import_command)
