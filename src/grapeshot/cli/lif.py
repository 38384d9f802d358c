"""``grapeshot lif``: expected load imbalance of a random micro-partition placement."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from grapeshot.cli.output import console, emit_json
from grapeshot.theory.lif import (
    ASYMPTOTIC_MIN_NODES,
    BINOMIAL_WALK_LIMIT,
    DEFAULT_QUANTILES,
    DEFAULT_TRIALS,
    EXACT_COST_LIMIT,
    MC_VALUE_LIMIT,
    LifResult,
    expected_lif,
)

_QUANTILE_NAMES = {0.5: "median", 0.9: "90th percentile", 0.99: "99th percentile"}


def eq2_verdict(exact: float, eq2: float) -> str:
    """One sentence on whether eq. 2 over- or underestimates ``exact`` (both E[LIF])."""
    if exact <= 0.0:
        return "Eq. 2 and the exact value agree: no imbalance is possible here."
    err = eq2 / exact - 1.0
    if abs(err) < 0.005:
        return f"Eq. 2 matches the exact value here (within {abs(err):.1%})."
    if err > 0:
        return (
            f"Eq. 2 overestimates here by {err:.0%}: it is on the safe side "
            "(it asks for more partitions than needed)."
        )
    return (
        f"Eq. 2 underestimates here by {-err:.0%}: it is NOT on the safe side "
        "(few busy partitions per node; trust the exact value)."
    )


HELP = "\n\n".join(
    [
        "Expected load imbalance factor (LIF) of a random placement of micro-partitions.",
        "The model (Birdshot §5): n nodes hold s partitions each; a fraction p of all "
        "partitions is busy (same work each), the rest idle; partitions land on nodes at "
        "random. LIF = (busy partitions on the most loaded node) / (average busy partitions "
        "per node) − 1: 0.2 means the most loaded node has 20 % more work than the average, "
        "so a step takes 20 % longer than with perfect balance.",
        "Reports the exact E[LIF], its median, 90th and 99th percentiles (never below 0: "
        "a placement's busiest node never holds less than its average, and a placement with "
        "nothing busy has no imbalance), and Birdshot's eq. 2, "
        "E[LIF] ≈ sqrt(2·ln(n)·(1/p − 1)/s).",
        "Eq. 2 is asymptotic (many nodes, many busy partitions per node). It overestimates "
        "(the safe side) over most of the range: about 2x on 2 nodes, +12 to +43 % on 16 to "
        "10000 nodes with p = 0.5. It UNDERESTIMATES when few partitions per node are busy on "
        "many nodes (p up to ~0.25 and p·s below about 2 on 128 nodes, 8 on 1024, 20 on "
        "10000): n = 10000, s = 16, p = 0.05 gives 6.02 exactly and 4.68 by eq. 2. "
        "See docs/theory.md.",
        "Budget: every answer comes in about a second or a few (counts up to 2^63 − 1). The "
        f"binomial model is exact while its walks visit at most {BINOMIAL_WALK_LIMIT:.0e} "
        "values of k, else it is the normal approximation of the maximum with its skewness "
        "term (relative error below (0.05·ln n + 0.1)/σ², σ² = s·p·(1 − p); at most 1e-8 "
        "there; method 'asymptotic'). The "
        f"fixed-count model is exact while its plan costs at most {EXACT_COST_LIMIT:.0e} "
        f"units, else Monte Carlo while trials × n ≤ {MC_VALUE_LIMIT:,} and n·s < 1e9, else "
        f"from {ASYMPTOTIC_MIN_NODES} nodes on the binomial model at p' = B/(n·s) "
        "(its limit on many nodes; method 'asymptotic'), else a one-line refusal naming the "
        "limit. The output and --json's 'method' say which.",
    ]
)


def _lif(value: float) -> str:
    """A LIF for the table: 4 decimals, or 4 significant digits when that would show 0."""
    return f"{value:.4f}" if value == 0.0 or abs(value) >= 1e-3 else f"{value:.3e}"


def lif_command(
    nodes: Annotated[int, typer.Option("--nodes", help="Number of nodes n (1 to 2^63 − 1).")],
    parts_per_node: Annotated[
        int, typer.Option("--parts-per-node", help="Partitions per node s (1 to 2^63 − 1).")
    ],
    busy: Annotated[
        float,
        typer.Option(
            "--busy",
            help="Fraction p of partitions that carry work, in (0, 1]; the rest are idle.",
        ),
    ],
    model: Annotated[
        str,
        typer.Option(
            "--model",
            help="binomial: each node's busy count is Binomial(s, p), LIF normalised by p·s "
            "(the paper's appendix; always exact). fixed-count: exactly round(p·n·s) busy "
            "partitions spread over the n·s slots, as Birdshot really places them (exact when "
            "affordable, else Monte Carlo, else asymptotic: see the budget above).",
        ),
    ] = "binomial",
    trials: Annotated[
        int,
        typer.Option(
            "--trials",
            help="Placements sampled if the fixed-count model falls back (>= 2; trials × n "
            f"at most {MC_VALUE_LIMIT:,}).",
        ),
    ] = DEFAULT_TRIALS,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of that Monte Carlo; same seed, same estimate.")
    ] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Print the exact E[LIF], its quantiles and eq. 2 for one (n, s, p); see ``HELP``."""
    result = expected_lif(
        nodes,
        parts_per_node,
        busy,
        model=model,
        quantiles=DEFAULT_QUANTILES,
        seed=seed,
        trials=trials,
    )
    if as_json:
        emit_json(
            {
                "nodes": result.nodes,
                "parts_per_node": result.parts_per_node,
                "busy": result.busy,
                "model": result.model,
                "mean_exact": result.mean,
                "mean_eq2": result.mean_eq2,
                "quantiles": {str(q): v for q, v in result.quantiles.items()},
                "method": result.method,
                "stderr": result.stderr,
            }
        )
        return
    _print_lif(result, trials)


def _print_lif(result: LifResult, trials: int) -> None:
    """The table of one (n, s, p): E[LIF] (exact, Monte Carlo or asymptotic), eq. 2, the
    quantiles, and whether eq. 2 holds there."""
    title = (
        f"LIF of n = {result.nodes} nodes, s = {result.parts_per_node} partitions per node, "
        f"p = {result.busy:g} busy ({result.model} model)"
    )
    table = Table(title=title)
    table.add_column("quantity")
    table.add_column("LIF", justify="right")
    if result.method == "exact":
        table.add_row("E[LIF], exact", _lif(result.mean))
    elif result.method == "asymptotic":
        table.add_row("E[LIF], asymptotic (see below)", _lif(result.mean))
    else:
        table.add_row(
            f"E[LIF], Monte Carlo ({trials} trials)",
            f"{_lif(result.mean)} ± {_lif(result.stderr)}",
        )
    table.add_row("E[LIF], eq. 2 (asymptotic)", _lif(result.mean_eq2))
    for q, value in result.quantiles.items():
        table.add_row(_QUANTILE_NAMES.get(q, f"{q:g} quantile"), _lif(value))
    console.print(table)
    if result.note:
        console.print(f"Asymptotic: {result.note}.", highlight=False)
    console.print(eq2_verdict(result.mean, result.mean_eq2), highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``lif`` to the command line."""
    app.command("lif", help=HELP)(lif_command)
