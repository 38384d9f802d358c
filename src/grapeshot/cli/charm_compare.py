"""``grapeshot charm-compare``: Charm++'s balancers beside grapeshot's on one step's loads."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from grapeshot.cli.output import console, emit_json
from grapeshot.model.errors import InputError

_PARAGRAPHS = (
    "Run Charm++'s load balancers (through charm4py) beside grapeshot's on one step's loads.",
    "One step K of the workload gives every partition its load. Each partition becomes a "
    "chare of a charm4py array on N processes (+pN; the processes are the nodes, "
    "oversubscribed on a small machine), placed by --initial; each chare busy-waits its "
    "load scaled to --budget seconds in all, then Charm++ balances with +balancer NAME "
    "+LBObjOnly. Charm++ measures loads itself, so both sides are compared on the loads "
    "the chares measured: grapeshot's counterpart runs on them from the same start. "
    "Per balancer: max/avg load (1 is perfect), objects moved, strategy time (Charm++'s "
    "+LBDebug figure; grapeshot's in-process, compiled beforehand).",
    "Pairs: GreedyLB / greedy, RefineLB / refine (Charm++ runs TreeLB's RefineA here; "
    "grapeshot the legacy Refiner with its threshold search, without the repack its "
    "dynamic refine adds where the Refiner stalls), GreedyRefineLB / "
    "greedy-refine, RandCentLB / birdshot (random; Charm++'s ignores quotas). Balancers "
    "the installed Charm++ does not register (MetisLB, GreedyCommLB, RefineCommLB in "
    "charm4py 1.1) are listed with the reason.",
    "Example: grapeshot charm-compare --trace flip.h5 --nodes 4 --step 10",
)
HELP = "\n\n".join(_PARAGRAPHS)

#: Charm++ balancer → grapeshot counterpart.
PAIRS = {
    "GreedyLB": "greedy",
    "RefineLB": "refine",
    "GreedyRefineLB": "greedy-refine",
    "RandCentLB": "birdshot",
    "MetisLB": None,
}
_STRATEGY_LINE = re.compile(r"strategy (\S+) time=([0-9.eE+-]+) secs")


@dataclass
class CharmRun:
    """What one Charm++ balancer did."""

    balancer: str
    ok: bool
    reason: str
    start: np.ndarray | None = None
    final: np.ndarray | None = None
    measured: np.ndarray | None = None
    strategy_seconds: float | None = None
    charm_strategy: str = ""


def charm_available() -> str | None:
    """``None`` if charm4py imports here, else why not (one line)."""
    import importlib.util

    # find_spec, not import: importing charm4py registers an exit hook that complains.
    for name in ("charm4py", "charmrun"):
        if importlib.util.find_spec(name) is None:
            return f"{name} is not installed (pip install charm4py)"
    return None


def run_charm(
    balancer: str, loads: np.ndarray, home: np.ndarray, pes: int, *, timeout: float = 300.0
) -> CharmRun:
    """Run ``balancer`` in charm4py on ``pes`` processes; loads in seconds, home PEs.

    Returns a :class:`CharmRun` whose ``ok`` is False with ``reason`` when Charm++ does not
    register the balancer or the job fails.
    """
    why = charm_available()
    if why is not None:
        return CharmRun(balancer, False, why)
    job = Path(__file__).resolve().parents[1] / "place" / "charm_job.py"
    with tempfile.TemporaryDirectory(prefix="grapeshot-charm-") as tmp:
        src, out = Path(tmp) / "in.npz", Path(tmp) / "out.json"
        np.savez(src, loads=np.asarray(loads, np.float64), home=np.asarray(home, np.int64))
        cmd = [
            sys.executable, "-m", "charmrun.start", f"+p{pes}", str(job), str(src), str(out),
            "+balancer", balancer, "+LBDebug", "1", "+LBObjOnly",
        ]  # fmt: skip
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=tmp)
        except subprocess.TimeoutExpired:
            return CharmRun(balancer, False, f"timed out after {timeout:.0f} s")
        text = proc.stdout + proc.stderr
        if "Pluggable hierarchical LB with available strategies" in text or (
            "Unknown load balancer" in text
        ):
            return CharmRun(
                balancer, False, "not registered by this Charm++ build (charm4py's libcharm)"
            )
        if proc.returncode != 0 or not out.exists():
            last = (text.strip().splitlines() or ["no output"])[-1]
            return CharmRun(balancer, False, f"charmrun exited {proc.returncode}: {last}")
        rows = np.asarray(json.loads(out.read_text())["rows"], dtype=np.float64)
    match = _STRATEGY_LINE.search(text)
    return CharmRun(
        balancer,
        True,
        "",
        start=rows[:, 1].astype(np.int64),
        final=rows[:, 2].astype(np.int64),
        measured=rows[:, 3],
        strategy_seconds=float(match.group(2)) if match else None,
        charm_strategy=match.group(1) if match else "",
    )


def grapeshot_counterpart(
    name: str, load: np.ndarray, home: np.ndarray, pes: int, seed: int
) -> tuple[np.ndarray, float]:
    """grapeshot's ``name`` on ``load`` from ``home``: ``(node_of, seconds)``, compiled first."""
    from grapeshot.place import balancers as lb
    from grapeshot.place.birdshot import place_birdshot

    cores = np.ones(pes, dtype=np.int64)

    def go() -> np.ndarray:
        if name == "greedy":
            return lb.greedy_lb(load, cores)
        if name == "refine":
            return lb.refine_lb(load, home, cores, threshold=0.05, repack=False)
        if name == "greedy-refine":
            return lb.greedy_refine_lb(load, home, cores, tolerance=1.0)
        return place_birdshot((1, load.size), cores, seed=seed).astype(np.int64)

    go()  # compile outside the clock
    started = time.perf_counter()
    node_of = go()
    return node_of, time.perf_counter() - started


def compare(
    loads: np.ndarray, home: np.ndarray, pes: int, balancers: list[str], *, seed: int = 0
) -> list[dict[str, Any]]:
    """Every balancer of ``balancers`` in Charm++ and its grapeshot counterpart; one row each."""
    from grapeshot.place.balancers import max_over_avg

    rows = []
    for name in balancers:
        run = run_charm(name, loads, home, pes)
        row: dict[str, Any] = {"balancer": name, "grapeshot": PAIRS.get(name), "ran": run.ok}
        if not run.ok:
            row["reason"] = run.reason
            rows.append(row)
            continue
        assert run.measured is not None and run.final is not None and run.start is not None
        measured = run.measured
        cores = np.ones(pes)
        row.update(
            charm_strategy=run.charm_strategy,
            charm_max_avg=max_over_avg(measured, run.final, cores),
            charm_moved=int(np.count_nonzero(run.final != run.start)),
            charm_seconds=run.strategy_seconds,
            start_max_avg=max_over_avg(measured, run.start, cores),
        )
        if PAIRS.get(name):
            ours, seconds = grapeshot_counterpart(PAIRS[name], measured, run.start, pes, seed)
            row.update(
                grapeshot_max_avg=max_over_avg(measured, ours, cores),
                grapeshot_moved=int(np.count_nonzero(ours != run.start)),
                grapeshot_seconds=seconds,
            )
        rows.append(row)
    return rows


def step_loads(path: Path, step: int, budget: float) -> tuple[np.ndarray, dict[str, Any]]:
    """Step ``step`` of the workload at ``path``, scaled to ``budget`` seconds in all."""
    from grapeshot.model.workload_file import load_workload

    workload = load_workload(path)
    if not 0 <= step < workload.n_steps:
        raise InputError("--step", f"got {step}", f"a step in 0..{workload.n_steps - 1}")
    raw = np.asarray(workload.cost[step], dtype=np.float64)
    if raw.sum() <= 0:
        raise InputError("--step", f"step {step} of {path} has no load", "a step with work")
    info = {"parts": int(workload.n_parts), "parts_shape": list(workload.parts_shape)}
    return raw * (budget / raw.sum()), {**info, "workload": str(path), "step": step}


def charm_compare_command(
    workload: Annotated[
        Path, typer.Option("--trace", help="Workload trace file (HDF5, docs/formats.md).")
    ],
    nodes: Annotated[
        int, typer.Option("--nodes", help="Charm++ processes (PEs) = nodes to balance over.")
    ] = 2,
    step: Annotated[int, typer.Option("--step", help="The step whose loads are used.")] = 0,
    balancer: Annotated[
        str,
        typer.Option("--balancer", help=f"Comma-separated Charm++ balancers: {', '.join(PAIRS)}."),
    ] = ",".join(PAIRS),
    initial: Annotated[
        str, typer.Option("--initial", help="Static strategy of the starting placement.")
    ] = "geometric",
    budget: Annotated[
        float,
        typer.Option("--budget", help="Seconds of busy work all objects share (per balancer)."),
    ] = 1.0,
    seed: Annotated[int, typer.Option("--seed", help="Seed of --initial and of birdshot.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    from grapeshot.place.static import get_static_strategy

    if nodes < 1 or nodes > 64:
        raise InputError("--nodes", f"got {nodes}", "an integer in 1..64 (charm4py processes)")
    if not 0 < budget <= 600:
        raise InputError("--budget", f"got {budget}", "seconds in (0, 600]")
    names = [b.strip() for b in balancer.split(",") if b.strip()]
    for name in names:
        if name not in PAIRS:
            raise InputError(
                "--balancer", f"unknown balancer {name!r}", f"one of {', '.join(PAIRS)}"
            )
    loads, info = step_loads(workload, step, budget)
    home = np.asarray(
        get_static_strategy(initial)(tuple(info["parts_shape"]), np.ones(nodes, int), seed=seed),
        dtype=np.int64,
    )
    rows = compare(loads, home, nodes, names, seed=seed)
    if as_json:
        emit_json({**info, "nodes": nodes, "initial": initial, "budget": budget, "rows": rows})
        return
    _print(rows, info, nodes, initial)


def _print(rows: list[dict[str, Any]], info: dict[str, Any], nodes: int, initial: str) -> None:
    from rich.table import Table

    console.print(
        f"{info['workload']} step {info['step']}: {info['parts']} objects on {nodes} PEs, "
        f"starting {initial}",
        highlight=False,
    )
    table = Table()
    for col in ("Charm++ / grapeshot", "max/avg C", "max/avg g", "moved C", "moved g",
                "time C s", "time g s"):  # fmt: skip
        table.add_column(col, justify="right" if col[0] != "C" else "left", no_wrap=True)

    def f(x: Any, fmt: str) -> str:
        return "—" if x is None else format(x, fmt)

    cannot = []
    for r in rows:
        if not r["ran"]:
            cannot.append(f"{r['balancer']} cannot run here: {r['reason']}")
            continue
        table.add_row(
            f"{r['balancer']} / {r['grapeshot'] or '—'}",
            f(r.get("charm_max_avg"), ".3f"), f(r.get("grapeshot_max_avg"), ".3f"),
            f(r.get("charm_moved"), "d"), f(r.get("grapeshot_moved"), "d"),
            f(r.get("charm_seconds"), ".2e"), f(r.get("grapeshot_seconds"), ".2e"),
        )  # fmt: skip
    console.print(table)
    for line in cannot:
        console.print(line, highlight=False)
    console.print(
        "C: Charm++, g: grapeshot. max/avg on the loads the chares measured (1 is perfect); "
        "moved: objects whose PE changed; time: the strategy alone.",
        style="dim",
    )


def register(app: typer.Typer) -> None:
    """Add ``charm-compare`` to the command line."""
    app.command("charm-compare", help=HELP)(charm_compare_command)
