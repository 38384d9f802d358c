"""``grapeshot exchange``: schedule an all-to-many exchange, run it on MPI or predict it."""

from __future__ import annotations

from typing import Annotated

import typer

from grapeshot.cli.output import console, emit_json
from grapeshot.model.errors import InputError

ALGORITHM_NAMES = ("ac", "lp", "rsn", "rsnh", "drsn", "nbx", "alltoallv", "neighbor")


def parse_algorithms(text: str) -> list[str]:
    """``ac,lp,...`` (or ``all``) into a list of known names, in the given order."""
    if text.strip() == "all":
        return list(ALGORITHM_NAMES)
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise InputError("--algorithms", "empty", f"names from {', '.join(ALGORITHM_NAMES)}")
    for name in names:
        if name not in ALGORITHM_NAMES:
            raise InputError(
                "--algorithms",
                f"unknown algorithm {name!r}",
                f"one of {', '.join(ALGORITHM_NAMES)}",
            )
    if len(set(names)) != len(names):
        raise InputError("--algorithms", "a name is repeated", "each algorithm once")
    return names


def _simulate(pattern, algorithms, machine, nodes, repeat, seed, overhead):
    from grapeshot.exchange.timing import time_schedules
    from grapeshot.model.machine_file import load_machine
    from grapeshot.sim.exchange import simulate_exchange

    m = load_machine(machine, nodes)
    if nodes is None and m.nodes != pattern.n:
        # One node per rank: without --nodes the machine takes the pattern's ranks.
        try:
            m = m.with_nodes(pattern.n)
        except InputError as exc:
            raise InputError(
                "--simulate",
                f"{m.name} cannot have the pattern's {pattern.n} nodes ({exc.problem})",
                exc.expected,
            ) from None
    if m.nodes != pattern.n:
        raise InputError(
            "--nodes",
            f"the machine has {m.nodes} nodes, the pattern {pattern.n} ranks",
            "--nodes equal to the pattern's ranks, or no --nodes (it defaults to them)",
        )
    # Every algorithm's schedule is computed once untimed before any is timed, so the order of
    # --algorithms changes nothing (exchange/timing.py).
    planned = time_schedules(pattern, algorithms, seed=seed)
    rows = []
    for alg in algorithms:
        schedule, sched_s = planned[alg]
        r = simulate_exchange(pattern, alg, m, seed=seed, schedule=schedule, overhead=overhead)
        rows.append(
            {
                "algorithm": alg,
                "phases": r.phases,
                "schedule_seconds": sched_s,
                "comm_seconds": r.seconds,
                "total_seconds": sched_s + repeat * r.seconds,
                "bytes": pattern.total_bytes,
                "tries": r.tries,
            }
        )
    head = {"mode": "simulate", "machine": m.name, "nodes": m.nodes, "overhead": overhead}
    return head, rows


def _run_mpi(pattern, algorithms, repeat, seed, max_chunk):
    from mpi4py import MPI

    from grapeshot.exchange.timing import time_exchanges_mpi

    comm = MPI.COMM_WORLD
    if comm.size != pattern.n:
        raise InputError(
            "--pattern",
            f"{pattern.n} ranks but {comm.size} MPI ranks are running",
            f"mpiexec -n {pattern.n}, or --simulate MACHINE to predict",
        )
    # Every algorithm is planned and run once, untimed, before any is timed: the first listed
    # no longer pays MPI's first connections and collectives alone (exchange/timing.py).
    rows = time_exchanges_mpi(
        pattern.com, algorithms, comm=comm, repeat=repeat, seed=seed, max_chunk=max_chunk
    )
    return {"mode": "mpi", "ranks": comm.size}, rows


# The options, one alias each: the command's signature is one line per option.
PatternOpt = Annotated[
    str,
    typer.Option(
        "--pattern",
        help="Pattern spec KIND:key=value,... (regular:d=16,unit=512,seed=1; "
        "nonuniform:d=31,unit=64; airfoil:points=9428,unit=128) or a pattern file "
        "(text 'ranks N' + 'SRC DST BYTES' lines, or an (n, n) .npy). "
        "'--pattern help' lists the kinds and keys.",
    ),
]
AlgorithmsOpt = Annotated[
    str,
    typer.Option(
        "--algorithms",
        help=f"Comma-separated algorithms, or 'all': {', '.join(ALGORITHM_NAMES)}.",
    ),
]
RepeatOpt = Annotated[
    int, typer.Option("--repeat", min=1, help="Exchanges per plan (plan once, run K times).")
]
SimulateOpt = Annotated[
    str | None,
    typer.Option(
        "--simulate",
        help="Predict on this machine (preset name or .toml) instead of running on MPI.",
    ),
]
NodesOpt = Annotated[
    int | None,
    typer.Option(
        "--nodes",
        min=1,
        help="Nodes of the simulated machine: the pattern's ranks (the default).",
    ),
]
SeedOpt = Annotated[int, typer.Option("--seed", min=0, help="Seed of the schedules.")]
OverheadOpt = Annotated[
    float,
    typer.Option(
        "--overhead",
        min=0.0,
        help="With --simulate: CPU seconds a rank spends per message posted or completed "
        "(LogP's o; 0 = free). benchmarks/bench_exchange_mpi.py fits it for your host.",
    ),
]
MaxChunkOpt = Annotated[
    int,
    typer.Option("--max-chunk", min=1, max=2**31 - 1, help="Largest MPI message piece, bytes."),
]
AsJsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


def exchange_command(
    pattern: PatternOpt,
    algorithms: AlgorithmsOpt = "ac,lp,rsn,rsnh,drsn,nbx,alltoallv",
    repeat: RepeatOpt = 1,
    simulate: SimulateOpt = None,
    nodes: NodesOpt = None,
    seed: SeedOpt = 0,
    overhead: OverheadOpt = 0.0,
    max_chunk: MaxChunkOpt = 1 << 30,
    as_json: AsJsonOpt = False,
) -> None:
    """Schedule an irregular all-to-many exchange (AC, LP, RS_N, RS_NH, DRS_N, NBX) and time
    it on MPI or predict it on a modelled machine.

    Every algorithm is planned and run once untimed before any is timed, so the order of
    ``--algorithms`` does not change the times or the verdict. Under ``mpiexec -n N`` (N = the
    pattern's ranks) each is then planned once, run once untimed, then ``--repeat`` times back
    to back with real payloads; the untimed run and the last one are checked byte for byte
    (CRC-32 per pair). ``comm_seconds`` is the median over the timed runs of the slowest rank's
    time. With ``--simulate MACHINE`` the exchange is predicted on the simulator's network
    model instead, the machine resized to the pattern's ranks unless ``--nodes`` says
    otherwise. ``schedule_seconds`` is the planning cost (Generate_Recv and the schedule table),
    ``phases`` the table's phases (0 for AC, DRS_N, NBX).
    """
    import numpy as np

    from grapeshot.exchange.spec import describe_kinds, load_pattern

    if pattern == "help":
        console.print(describe_kinds(), highlight=False, markup=False)
        return
    algs = parse_algorithms(algorithms)
    pat = load_pattern(pattern)
    if simulate is None and nodes is not None:
        raise InputError("--nodes", "given without --simulate", "--simulate MACHINE --nodes N")
    if simulate is None and overhead:
        raise InputError(
            "--overhead", "given without --simulate", "--simulate MACHINE --overhead SECONDS"
        )
    if simulate is not None:
        head, rows = _simulate(pat, algs, simulate, nodes, repeat, seed, overhead)
        is_root = True
    else:
        head, rows = _run_mpi(pat, algs, repeat, seed, max_chunk)
        from mpi4py import MPI

        is_root = MPI.COMM_WORLD.rank == 0
    if not is_root:
        return
    payload = {
        "pattern": pat.name,
        **head,
        "repeat": repeat,
        "seed": seed,
        "summary": pat.summary(),
        "algorithms": rows,
    }
    if as_json:
        emit_json(payload)
        return
    from rich.table import Table

    where = head.get("machine", f"MPI, {head.get('ranks')} ranks")
    table = Table(title=f"{pat.name} on {where}: {pat.messages} messages, {pat.total_bytes} B")
    for col in ("algorithm", "phases", "schedule (ms)", "comm (ms)", f"total x{repeat} (ms)"):
        table.add_column(col, justify="right")
    # What the user waits for: planning once plus --repeat exchanges.
    best = int(np.argmin([r["total_seconds"] for r in rows]))
    table.caption = f"* fastest in total: planned once, run {repeat} time(s)"
    for k, r in enumerate(rows):
        table.add_row(
            ("* " if k == best else "") + r["algorithm"],
            str(r["phases"]),
            f"{r['schedule_seconds'] * 1e3:.3f}",
            f"{r['comm_seconds'] * 1e3:.3f}",
            f"{r['total_seconds'] * 1e3:.3f}",
        )
    console.print(table)


def register(app: typer.Typer) -> None:
    """Add ``exchange`` to the command line."""
    app.command("exchange")(exchange_command)
