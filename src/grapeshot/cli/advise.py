"""``grapeshot advise``: how many partitions per node keep the imbalance under a target."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from grapeshot.cli.output import console, emit_json
from grapeshot.theory.advisor import ADVISE_FIXED_COUNT_LIMIT, ADVISE_WALK_LIMIT, advise

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
        "Budget: the answer comes within seconds. The scan is estimated before it starts: a "
        f"binomial scan beyond {ADVISE_WALK_LIMIT:.0e} steps of its walks bisects between the "
        "gallop's last two points instead (exact values; the smallest s if E[LIF] decreases "
        "with s there, as it did in every scan we ran) and says so ('search': 'bisection' "
        f"in --json); a fixed-count scan beyond {ADVISE_FIXED_COUNT_LIMIT:.0e} units of work "
        "is refused in one line naming the limit and the binomial model's answer. Targets "
        "needing more than 2^20 partitions per node are refused.",
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
            "round(p·n·s) busy partitions; exact, slower, refused beyond its budget: see "
            "above).",
        ),
    ] = "binomial",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Print the smallest partitions per node (and per core) meeting the target; see HELP."""
    advice = advise(nodes, busy, target_lif, cores_per_node=cores_per_node, model=model)
    if as_json:
        doc = {
            "parts_per_node": advice.parts_per_node,
            "parts_per_core": advice.parts_per_core,
            "mean_exact": advice.mean_exact,
            "parts_per_node_eq2": advice.parts_per_node_eq2,
        }
        if advice.search != "scan":  # only when not every smaller s was checked
            doc["search"] = advice.search
        emit_json(doc)
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
    if advice.search == "bisection":
        console.print(
            "Found by bisection: checking every smaller s is beyond the budget; this is the "
            "smallest s if E[LIF] decreases with s here (as in every scan we ran).",
            highlight=False,
        )


def register(app: typer.Typer) -> None:
    """Add ``advise`` to the command line."""
    app.command("advise", help=HELP)(advise_command)
