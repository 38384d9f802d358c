"""``grapeshot theorem1``: TreeMatchLB's case for a global load-balancing phase."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from grapeshot.cli.output import console, emit_json
from grapeshot.theory.theorem1 import theorem1

HELP = "\n\n".join(
    [
        "Probability that node loads drift apart without a global load-balancing step "
        "(TreeMatchLB, theorem 1).",
        "m nodes each run n chares (tasks) whose durations are uniform between a and b. A "
        "node's total load is then nearly normal (central limit theorem; n above ~30).",
        "p = 2 − 2·Φ(α·sqrt(6n)/2 · (b+a)/(b−a)) is the chance that a given pair of nodes "
        "differs by more than α times the mean node load; q = 1 − (1 − p)^(m(m+1)/2) is the "
        "chance that at least one pair does (the paper's pair count, pairs taken as "
        "independent). Both are printed as percentages, and as fractions with --json.",
        "Table 1, row 2 of the paper prints q = 94.8 % for m = 16; the formula gives 53.3 % "
        "there and 94.8 % for m = 32 (see docs/theory.md).",
        "Budget: a closed form, answered at once for any n and m up to 2^63 − 1.",
    ]
)


def theorem1_command(
    chares_per_node: Annotated[
        int,
        typer.Option("--chares-per-node", help="Chares (tasks) per node n (1 to 2^63 − 1)."),
    ],
    nodes: Annotated[int, typer.Option("--nodes", help="Nodes in the run m (1 to 2^63 − 1).")],
    alpha: Annotated[
        float,
        typer.Option(
            "--alpha", help="Imbalance ratio threshold (>= 0); 0.05 = 5 % of a node's mean load."
        ),
    ],
    a: Annotated[float, typer.Option("--a", help="Shortest chare duration (>= 0, any time unit).")],
    b: Annotated[float, typer.Option("--b", help="Longest chare duration (> a, same unit).")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON for scripts (p and q as fractions).")
    ] = False,
) -> None:
    """Print theorem 1's p and q for one run; see ``HELP``."""
    result = theorem1(chares_per_node, nodes, alpha, a, b)
    if as_json:
        emit_json({"p": result.p, "q": result.q})
        return
    table = Table(
        title=f"Theorem 1: n = {chares_per_node} chares/node, m = {nodes} nodes, "
        f"α = {alpha:g}, durations uniform from {a:g} to {b:g}"
    )
    table.add_column("probability")
    table.add_column("value", justify="right")
    table.add_row("p: a given pair differs by more than α", f"{result.p:.4%}")
    table.add_row("q: at least one pair does", f"{result.q:.4%}")
    console.print(table)


def register(app: typer.Typer) -> None:
    """Add ``theorem1`` to the command line."""
    app.command("theorem1", help=HELP)(theorem1_command)
