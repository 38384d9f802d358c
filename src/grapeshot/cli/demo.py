"""``grapeshot demo``: what grapeshot is for, end to end, in one command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from grapeshot.cli.output import console, emit_json, err_console

#: ``grapeshot demo --help``.
HELP = """Place, run for real on MPI, and simulate a dam break, geometrically and with Birdshot.

    1. **Placement**: a synthetic dam break on 32 modelled EC2 c4.8xlarge nodes at 4
    partitions per core; the load imbalance factor LIF = max/mean − 1 per step.

    2. **Real run** on two local MPI ranks (`mpiexec -n 2`): the shallow-water dam break,
    water on one side, with both one-block splits (one partition per rank: geometric 2×1,
    which leaves the water to one rank, and 1×2, balanced by symmetry) and with Birdshot (a
    16×16 grid of micro-partitions): busy and idle time per rank, wall time, and the digest
    of the final fields (equal: the same results). The closing sentence says which split
    Birdshot beat and how it stands against the better one.

    3. **Simulation** of the same scene at 3072 × 1536 cells on 32 nodes × 18 cores of
    `ec2-c4.8xlarge`, at 1, 2, 4 and 8 partitions per core, with the cost per wet cell
    and the runtime's overheads fitted from the real Birdshot run.

    Takes a minute or two. Writes DIR/demo.png (the three parts side by side),
    DIR/placement-node-load.png (load per node and step of both placements) and
    DIR/birdshot-run.h5 (the real Birdshot run's record, a few MB: `grapeshot show` reads it);
    prints one table.
    """


# The options, one alias each: the command's signature is one line per option.
OutDirOpt = Annotated[
    Path, typer.Option("--out-dir", help="Where the two figures and the run record go.")
]
StepsOpt = Annotated[
    int, typer.Option("--steps", help="Steps of the real and simulated runs.", min=2)
]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the placements.")]
AsJsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


def demo_command(
    out_dir: OutDirOpt = Path("grapeshot-demo"),
    steps: StepsOpt = 60,
    seed: SeedOpt = 1,
    as_json: AsJsonOpt = False,
) -> None:
    from grapeshot.model.atomic import check_output_path
    from grapeshot.report.slice_demo import real_run, run_slice

    # Checked before the minute or two of placing, running and simulating.
    check_output_path(out_dir, "--out-dir", folder=True)

    def say(message: str) -> None:
        err_console.print(message, style="dim", highlight=False)

    result = run_slice(out_dir, steps=steps, seed=seed, say=say)
    say("+   running the dam break on the same 2 MPI ranks with the other split (geometric 1x2)")
    splits = {"2×1": result.real["geometric"], "1×2": real_run("geometric", "1,2", steps, None)}
    best_split = min(splits, key=lambda name: (splits[name]["wall_time"], name))
    placement = {name: mt.lif_mean for name, mt in result.placement.metrics.items()}
    geo_sim, bird_sim = result.sim["geometric"], result.sim["birdshot"]
    best_ppc = min(bird_sim, key=lambda p: bird_sim[p]["step_time_mean"])
    speedup = geo_sim[1]["step_time_mean"] / bird_sim[best_ppc]["step_time_mean"]
    if as_json:
        emit_json(_demo_json(result, splits, best_split, placement, speedup, best_ppc))
        return
    _print_demo(result, splits, best_split, placement, speedup, best_ppc)


def _demo_json(result, splits, best_split, placement, speedup, best_ppc) -> dict:
    """What ``demo --json`` prints."""
    return {
        "placement_lif_mean": placement,
        "placement_predicted_lif_birdshot": result.placement.predicted_lif,
        "real": {**result.real, "geometric 1x2": splits["1×2"]},
        "sim": {s: {str(p): v for p, v in d.items()} for s, d in result.sim.items()},
        "real_speedup_birdshot_vs_geometric": result.real["geometric"]["wall_time"]
        / result.real["birdshot"]["wall_time"],
        "real_best_split": f"geometric {best_split}".replace("×", "x"),
        "real_speedup_birdshot_vs_best_split": splits[best_split]["wall_time"]
        / result.real["birdshot"]["wall_time"],
        "sim_speedup_birdshot_best_vs_geometric_ppc1": speedup,
        "sim_best_ppc_birdshot": best_ppc,
        "figure": str(result.figure),
        "placement_figure": str(result.node_load_figure),
    }


def _print_demo(result, splits, best_split, placement, speedup, best_ppc) -> None:
    """The demo's table and closing sentences."""
    from grapeshot.report.slice_demo import SIM_NODES

    geo_sim, bird_sim = result.sim["geometric"], result.sim["birdshot"]
    geo, bird = result.real["geometric"], result.real["birdshot"]

    def spread(summary: dict) -> str:
        busy = summary["busy"]
        return f"{max(busy) / min(busy) - 1:.2f}" if min(busy) > 0 else "inf"

    def per_rank(values: list[float]) -> str:
        return " / ".join(f"{v:.2f}" for v in values)

    def sim_row(by_ppc: dict) -> str:
        return " / ".join(f"{by_ppc[p]['step_time_mean'] * 1e3:.2f}" for p in sorted(by_ppc))

    geo12 = splits["1×2"]
    table = Table(title="grapeshot demo: the dam break, geometric vs Birdshot")
    table.add_column("")
    table.add_column("geometric", justify="right")
    table.add_column("geometric 1×2", justify="right")
    table.add_column("birdshot", justify="right")
    table.add_row(
        "1. placement, 32 EC2 nodes: LIF mean",
        f"{placement['geometric']:.2f}",
        "",
        f"{placement['birdshot']:.2f}",
    )
    table.add_row("2. real run, 2 ranks: partitions", "2×1", "1×2", "16×16")
    for label, key in (("   busy per rank (s)", "busy"), ("   idle per rank (s)", "idle")):
        table.add_row(label, *(per_rank(s[key]) for s in (geo, geo12, bird)))
    table.add_row("   busy spread (max/min − 1)", *(spread(s) for s in (geo, geo12, bird)))
    table.add_row("   wall time (s)", *(f"{s['wall_time']:.2f}" for s in (geo, geo12, bird)))
    table.add_row("   fields digest", *(s["fields_digest"][:12] for s in (geo, geo12, bird)))
    table.add_row(
        f"3. simulated {SIM_NODES} × ec2-c4.8xlarge:\n   ms per step at 1 / 2 / 4 / 8 per core",
        sim_row(geo_sim),
        "",
        sim_row(bird_sim),
    )
    console.print(table)
    same = len({s["fields_digest"] for s in (geo, geo12, bird)}) == 1
    console.print(
        f"The three real runs computed {'the same' if same else 'DIFFERENT'} fields. "
        + split_verdict(bird, splits, best_split)
    )
    console.print(
        f"Simulated on {SIM_NODES} EC2 nodes, Birdshot at {best_ppc} partitions per core is "
        f"{speedup:.2f}× faster than geometric with one partition per core (Birdshot's "
        "figure 9 reports 2.0-3.3× on its workloads)."
    )
    console.print(f"figure written to {result.figure}")
    console.print(f"per-node load of the placement part written to {result.node_load_figure}")
    console.print("next (after `make`, these commands are in .venv/bin):")
    for command in NEXT_COMMANDS:
        console.print(f"  {command}", highlight=False, soft_wrap=True)


def split_verdict(bird: dict, splits: dict[str, dict], best: str) -> str:
    """The real run in one sentence: how Birdshot's wall time stands against each one-block
    split, the worse first, and which split is the better one (``best``)."""

    def against(name: str) -> str:
        ours, theirs = bird["wall_time"], splits[name]["wall_time"]
        how = f"{theirs / ours:.2f}× faster" if ours <= theirs else f"{ours / theirs:.2f}× slower"
        return f"{how} than geometric {name} ({ours:.2f} s against {theirs:.2f} s)"

    others = [name for name in splits if name != best]
    return (
        f"With {bird['parts']} partitions Birdshot ran "
        + "".join(f"{against(name)} and " for name in others)
        + f"{against(best)}, the better one-block split on this machine (one run each; "
        "benchmarks/RESULTS.md, bench_micro_partitions, has the best of three rounds)."
    )


#: What to try after the demo.
NEXT_COMMANDS = (
    "grapeshot lif --nodes 32 --parts-per-node 72 --busy 0.3",
    "grapeshot simulate --synthetic dambreak:parts=48x48 --machine ec2-c4.8xlarge --nodes 32 "
    "--strategy geometric,birdshot --ppc 1,2,4,8",
    "mpiexec -n 2 grapeshot run sph --scene two-way-dambreak --parts 8,8 --steps 50",
    "grapeshot trace swe --scene drop --parts 8,8 --steps 100 --out drop.h5 --snapshot snaps",
)


def register(app: typer.Typer) -> None:
    """Add ``demo`` to the command line."""
    app.command("demo", help=HELP)(demo_command)
