"""``grapeshot advise``: how many partitions per node keep the imbalance under a target."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from grapeshot.cli.output import console, emit_json
from grapeshot.theory.advisor import advise

HELP = "\n\n".join(
    [
        "Smallest number of partitions per node whose expected load imbalance meets a target.",
        "Same model as `grapeshot lif`: n nodes, s partitions per node, a fraction p of them "
        "busy, placed at random; LIF = (busy partitions on the most loaded node) / (average "
        "per node) − 1.",
        "The answer is the smallest s whose EXACT E[LIF] is at most the target. E[LIF] wobbles "
        "with s (a node holds whole partitions), so every smaller s is checked, not just a "
        "bisection. Birdshot's eq. 2 answer, ceil(2·ln(n)·(1/p − 1)/L²), is shown beside it; "
        "it asks for more partitions than needed over most of the range and too few when few "
        "partitions per node are busy. With --cores-per-node C it also gives the smallest "
        "partitions per core k (s = k·C).",
    ]
)


def advise_command(
    nodes: Annotated[int, typer.Option("--nodes", help="Number of nodes n (>= 1).")],
    busy: Annotated[
        float,
        typer.Option(
            "--busy",
            help="Fraction p of partitions that carry work, in (0, 1]. Use the smallest "
            "fraction the simulation goes through: sparse phases need the most partitions.",
        ),
    ],
    target_lif: Annotated[
        float,
        typer.Option(
            "--target-lif",
            help="Largest acceptable expected LIF L (> 0); 0.05 = the most loaded node has "
            "5 % more work than the average, in expectation.",
        ),
    ],
    cores_per_node: Annotated[
        int | None,
        typer.Option(
            "--cores-per-node",
            help="Cores per node C: also answer in partitions per core k (s = k·C).",
        ),
    ] = None,
    model: Annotated[
        str,
        typer.Option(
            "--model",
            help="binomial (the paper's model; fast at any size) or fixed-count (exactly "
            "round(p·n·s) busy partitions; exact, slower, refused beyond its budget).",
        ),
    ] = "binomial",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Print the smallest partitions per node (and per core) meeting the target; see HELP."""
    advice = advise(nodes, busy, target_lif, cores_per_node=cores_per_node, model=model)
    if as_json:
        emit_json(
            {
                "parts_per_node": advice.parts_per_node,
                "parts_per_core": advice.parts_per_core,
                "mean_exact": advice.mean_exact,
                "parts_per_node_eq2": advice.parts_per_node_eq2,
            }
        )
        return
    table = Table(title=f"Partitions for E[LIF] ≤ {target_lif:g} on {nodes} nodes, p = {busy:g}")
    table.add_column("answer")
    table.add_column("value", justify="right")
    table.add_row("partitions per node (exact)", str(advice.parts_per_node))
    table.add_row("E[LIF] there", f"{advice.mean_exact:.4f}")
    if advice.parts_per_core is not None and cores_per_node is not None:
        s_core = advice.parts_per_core * cores_per_node
        table.add_row(
            f"partitions per core ({cores_per_node} cores)",
            f"{advice.parts_per_core} (s = {s_core})",
        )
        table.add_row("E[LIF] there", f"{advice.mean_exact_per_core:.4f}")
    table.add_row("partitions per node by eq. 2", str(advice.parts_per_node_eq2))
    console.print(table)


def register(app: typer.Typer) -> None:
    """Add ``advise`` to the command line."""
    app.command("advise", help=HELP)(advise_command)
