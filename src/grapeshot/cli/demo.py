"""``grapeshot demo``: what grapeshot is for, in one command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from grapeshot.cli.output import console, emit_json


def demo_command(
    out_dir: Annotated[Path, typer.Option("--out-dir", help="Where the figure goes.")] = Path(
        "grapeshot-demo"
    ),
    steps: Annotated[int, typer.Option("--steps", help="Steps of the dam break.", min=2)] = 200,
    seed: Annotated[int, typer.Option("--seed", help="Seed of Birdshot's placement.")] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Place a dam break on 32 EC2 c4.8xlarge nodes, geometrically and by Birdshot.

    The synthetic dam break (water collapsing from one wall and sweeping along the floor) is
    split into 4 partitions per core (2,304 partitions on 32 × 18 cores). Geometric placement
    gives each node one contiguous box; Birdshot gives each node the same number of randomly
    chosen partitions. The table shows each one's load imbalance factor (LIF = max/mean − 1 of
    per-node load, per step); the figure shows per-node load over time for both.
    """
    from grapeshot.report.placement_demo import run_demo

    with console.status("placing the dam break with geometric and birdshot ..."):
        result = run_demo(out_dir, steps=steps, seed=seed)
    if as_json:
        emit_json(
            {
                "machine": result.machine.name,
                "nodes": result.machine.nodes,
                "parts": result.workload.n_parts,
                "parts_per_core": result.parts_per_core,
                "steps": result.workload.n_steps,
                "busy_fraction": result.busy_fraction,
                "predicted_lif_birdshot": result.predicted_lif,
                "strategies": {
                    name: {
                        "lif_mean": mt.lif_mean,
                        "lif_max": mt.lif_max,
                        "bytes_cut": mt.bytes_cut,
                    }
                    for name, mt in result.metrics.items()
                },
                "figure": str(result.figure),
            }
        )
        return
    m, w = result.machine, result.workload
    table = Table(
        title=(
            f"dam break, {w.n_parts} partitions ({result.parts_per_core} per core) on "
            f"{m.nodes} × {m.name}, {w.n_steps} steps"
        )
    )
    table.add_column("strategy")
    table.add_column("LIF mean", justify="right")
    table.add_column("LIF max", justify="right")
    table.add_column("halo bytes cut / step", justify="right")
    for name, mt in result.metrics.items():
        table.add_row(name, f"{mt.lif_mean:.3f}", f"{mt.lif_max:.3f}", f"{mt.bytes_cut:,}")
    console.print(table)
    geo, bird = result.metrics["geometric"], result.metrics["birdshot"]
    console.print(
        f"On the slowest node, a step takes {1 + geo.lif_mean:.2f}× the balanced time with "
        f"geometric placement and {1 + bird.lif_mean:.2f}× with Birdshot."
    )
    console.print(
        f"Theory: {result.busy_fraction:.0%} of partitions are wet on average; for that busy "
        f"fraction `grapeshot lif` predicts E[LIF] ≈ {result.predicted_lif:.3f} for Birdshot."
    )
    console.print(f"figure written to {result.figure}")
    console.print(
        "next: grapeshot lif --nodes 32 --parts-per-node 72 --busy 0.3 · "
        "grapeshot advise --nodes 32 --busy 0.3 --target-lif 0.1 --cores-per-node 18 · "
        "grapeshot place --synthetic help"
    )


def register(app: typer.Typer) -> None:
    """Add ``demo`` to the command line."""
    app.command("demo")(demo_command)
