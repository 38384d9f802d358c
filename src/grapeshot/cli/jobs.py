"""``grapeshot jobs``: batch scheduling with walltime prediction and correction."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from grapeshot.cli.output import console, emit_json, err_console
from grapeshot.jobs.checkpoint import SUFFIX, checkpoint_of
from grapeshot.jobs.generate import lublin_feitelson
from grapeshot.jobs.jobs_out import check_jobs_out, write_jobs_out
from grapeshot.jobs.partitions import merged_partitions_line, partition_counts, select_partitions
from grapeshot.jobs.plugin import parse_policies
from grapeshot.jobs.policies import POLICIES
from grapeshot.jobs.sacct import read_sacct
from grapeshot.jobs.scheduler import BACKFILL
from grapeshot.jobs.simulate import Cluster
from grapeshot.jobs.study import check_checkpointable, run_study
from grapeshot.jobs.swf import SwfRead, read_swf, write_swf
from grapeshot.model.atomic import check_output_path
from grapeshot.model.errors import InputError
from grapeshot.model.memory import BYTES_PER_JOB, check_memory

jobs_app = typer.Typer(
    help="Batch-job scheduling: would walltime correction or prediction help your cluster?",
    no_args_is_help=True,
)

SIMULATE_HELP = "\n\n".join(
    [
        "Replay a workload (SWF log or `sacct --parsable2` export) on a cluster under several "
        "walltime policies and compare average wait, bounded slowdown (τ = 10 s), "
        "utilisation, jobs killed and prediction error.",
        "Policies (the COARE paper's table 2): "
        + "; ".join(f"**{p.name}**: {p.description}" for p in POLICIES.values())
        + ". `all` runs every one, `paper` the paper's seven; both mix with names "
        "(`paper,clairvoyant`) and with your own policies, `FILE.py:Class` or "
        "`package.module:Class` (a class with predict(job, history) and optionally "
        "correct(job, elapsed, limit); with numba's @njit on them, a compiled plug-in run "
        "inside the scheduler's loop, about as fast as a built-in; docs/jobs.md).",
        "`gap closed` is the share of the cut in average bounded slowdown from the users' "
        "requests (user-estimate) to perfect walltimes (clairvoyant) a policy takes; both are "
        "simulated for it even when not listed. `corr. (no-op)` counts the corrections and, "
        "of them, those that changed nothing (the job then ended within the walltime it had).",
        "The workload is cleaned first (jobs without run time, wider than --cpus, or longer "
        "than 7 days dropped; the first 1 % excluded from the metrics). Bad lines are reported "
        "by line and field and skipped; --strict refuses the file instead. "
        "--default-walltime/--default-share give a share of the jobs the site default "
        "walltime (COARE mode). --compress F divides inter-arrival times by F (a heavier, "
        "different workload; reported). If the log records wait times, the real schedule is "
        "shown as `as logged` beside the simulated policies. See docs/jobs.md.",
        "--checkpoint-cost C --checkpoint-seconds I (seconds, both): also simulate each policy "
        "with checkpointing jobs, in a row `POLICY+ckpt` beside it: every job writes a "
        "checkpoint after each I s of work, each taking C s (none at its end), and a job "
        "killed at its walltime is resubmitted at once from its last checkpoint, with the "
        "walltime it was killed at; killed before its first checkpoint, it stays killed. "
        "Its wait is its time queued and its run time the time it ran, over all its runs; "
        "`restarts` counts the resubmissions. Built-in policies only.",
    ]
)


def _report_bad(read: SwfRead, source: str) -> None:
    if read.bad:
        err_console.print(
            f"[yellow]{len(read.bad)} of {read.lines} lines of {source} skipped[/]; first: "
            + "; ".join(str(e) for e in read.bad[:3]),
            highlight=False,
        )


# The options, one alias each: the command's signature is one line per option.
SwfOpt = Annotated[Path | None, typer.Option("--swf", help="SWF workload log.")]
SacctOpt = Annotated[Path | None, typer.Option("--sacct", help="Slurm `sacct --parsable2` export.")]
CpusOpt = Annotated[
    int | None, typer.Option("--cpus", help="Processors (default: the log's MaxProcs).")
]
NodesOpt = Annotated[
    int | None,
    typer.Option("--nodes", help="Nodes: jobs then take whole nodes (cpus/nodes each)."),
]
PoliciesOpt = Annotated[
    str,
    typer.Option(
        "--policies",
        "--policy",
        help="Comma-separated policies, `all`, `paper`, or your own as FILE.py:Class.",
    ),
]
BackfillOpt = Annotated[str, typer.Option("--backfill", help="fcfs, easy, sjbf or conservative.")]
DefaultWalltimeOpt = Annotated[
    float | None,
    typer.Option("--default-walltime", help="COARE mode: site default walltime, hours."),
]
DefaultShareOpt = Annotated[
    float, typer.Option("--default-share", help="COARE mode: share of jobs given it.")
]
StrictOpt = Annotated[bool, typer.Option("--strict", help="Refuse the file at its first bad line.")]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed (COARE draw, learners).")]
CompressOpt = Annotated[
    float,
    typer.Option(
        "--compress",
        help="Divide inter-arrival times by this factor to raise the load (a different "
        "workload: reported in the output; 1 = as logged).",
    ),
]
JobsOutOpt = Annotated[
    Path | None,
    typer.Option(
        "--jobs-out",
        help="Write every job's schedule: FILE.csv (each job and policy: submit, start, "
        "end, predicted and final walltime, corrections, killed, time queued and run, "
        "restarts) or FILE.swf (one policy).",
    ),
]
PartitionOpt = Annotated[
    str | None,
    typer.Option(
        "--partition",
        help="Simulate only these partitions' jobs: names or numbers, comma-separated "
        "(sacct's Partition column; SWF field 16, named by the log's `; Partition:` "
        "header). Without it the jobs of every partition share one pool of --cpus CPUs, "
        "and the output says which were merged. An unknown name is refused.",
    ),
]
CheckpointCostOpt = Annotated[
    float | None,
    typer.Option(
        "--checkpoint-cost",
        help="Seconds each checkpoint takes: also simulate every policy with jobs that "
        "checkpoint and resume after a walltime kill (rows POLICY+ckpt; needs "
        "--checkpoint-seconds).",
    ),
]
CheckpointSecondsOpt = Annotated[
    float | None,
    typer.Option(
        "--checkpoint-seconds",
        help="Seconds of work between a job's checkpoints (with --checkpoint-cost).",
    ),
]
AsJsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


def simulate_command(
    swf: SwfOpt = None,
    sacct: SacctOpt = None,
    cpus: CpusOpt = None,
    nodes: NodesOpt = None,
    policies: PoliciesOpt = "paper",
    backfill: BackfillOpt = "easy",
    default_walltime: DefaultWalltimeOpt = None,
    default_share: DefaultShareOpt = 0.8,
    strict: StrictOpt = False,
    seed: SeedOpt = 0,
    compress: CompressOpt = 1.0,
    jobs_out: JobsOutOpt = None,
    partition: PartitionOpt = None,
    checkpoint_cost: CheckpointCostOpt = None,
    checkpoint_seconds: CheckpointSecondsOpt = None,
    as_json: AsJsonOpt = False,
) -> None:
    """Compare walltime policies on a workload; see ``SIMULATE_HELP``."""
    if (swf is None) == (sacct is None):
        raise InputError("--swf/--sacct", "give exactly one workload file")
    checkpoint = checkpoint_of(checkpoint_cost, checkpoint_seconds)
    if backfill not in BACKFILL:
        raise InputError("--backfill", f"got {backfill!r}", "one of " + ", ".join(BACKFILL))
    try:
        chosen = parse_policies(policies)
    except InputError:  # a plug-in that does not load: its own message names it
        raise
    except ValueError as exc:
        raise InputError("--policies", str(exc)) from None
    if checkpoint is not None:
        check_checkpointable(chosen)
    if jobs_out is not None:
        check_jobs_out(jobs_out, len(chosen) * (1 if checkpoint is None else 2))
    path = swf if swf is not None else sacct
    assert path is not None
    read = read_swf(path, strict=strict) if swf is not None else read_sacct(path, strict=strict)
    _report_bad(read, path.name)
    source = f"{'--swf' if swf is not None else '--sacct'} {path}"
    if len(read.trace) == 0:  # before --cpus: the log's emptiness is the news
        lines = f"{read.lines} line" + ("" if read.lines == 1 else "s")
        bad = f"; {len(read.bad)} bad, skipped" if read.bad else ""
        raise InputError(source, f"holds no jobs ({lines}{bad})", "a log with at least one job")
    workload, picked = read.trace, None
    if partition is not None:  # a counted step, reported first among the cleaning steps
        workload, picked = select_partitions(read.trace, partition, path.name)
    if cpus is None:
        cpus = read.trace.header_int("MaxProcs")
        if cpus is None or cpus < 1:
            raise InputError("--cpus", "not given and the log has no MaxProcs header")
    machine = Cluster(cpus, nodes)
    with console.status("simulating", spinner="dots") as status:
        study = run_study(
            workload, chosen, machine, backfill=backfill, default_walltime_h=default_walltime,
            default_share=default_share, seed=seed, compress=compress,
            on_policy=None if as_json else (lambda p: status.update(f"simulating {p}")),
            source=source, checkpoint=checkpoint,
        )  # fmt: skip
    if picked is not None:
        study = replace(study, cleaned=replace(study.cleaned, steps=(picked, *study.cleaned.steps)))
    written = None
    if jobs_out is not None:
        trace = study.cleaned.trace
        written = write_jobs_out(jobs_out, trace, study.schedules, study.cleaned.in_metrics)
    if as_json:
        emit_json(_study_json(path, read, study, cpus, nodes, backfill, checkpoint, written))
        return
    _print_study(
        path, read, study, cpus, nodes, backfill, checkpoint, written, default_walltime, compress
    )


def _study_json(path, read, study, cpus, nodes, backfill, checkpoint, written) -> dict:
    """What ``jobs simulate --json`` prints."""
    return {
        "source": path.name,
        "cpus": cpus,
        "nodes": nodes,
        "backfill": backfill,
        "lines": read.lines,
        "bad_lines": len(read.bad),
        "bad_examples": [str(e) for e in read.bad[:10]],
        "cleaning": [
            {"step": s.name, "jobs": s.affected, "remaining": s.remaining}
            for s in study.cleaned.steps
        ],
        "partitions": [c.as_dict() for c in partition_counts(study.cleaned.trace)],
        "defaulted": study.defaulted,
        "compress": study.compress,
        "offered_load": study.offered_load,
        "logged": None if study.logged is None else study.logged.as_dict(),
        "policies": [m.as_dict() for m in study.metrics],
        "gap": {"user_estimate_bsld": study.gap[0], "clairvoyant_bsld": study.gap[1]},
        "checkpoint": None if checkpoint is None else checkpoint.as_dict(),
        "jobs_out": None if written is None else str(written),
    }


def _print_study(
    path, read, study, cpus, nodes, backfill, checkpoint, written, default_walltime, compress
) -> None:
    """The cleaning line, the gap, a row per policy (and the logged schedule), the notes."""
    steps = ", ".join(f"{s.name} {s.affected}" for s in study.cleaned.steps if s.affected)
    console.print(
        f"{path.name}: {read.lines} lines, {len(study.cleaned.trace)} jobs after cleaning "
        f"({steps or 'nothing removed'})"
        + (f"; {study.defaulted} requests set to {default_walltime:g} h" if study.defaulted else "")
        + (f"; arrivals compressed {compress:g}×" if compress != 1.0 else "")
        + f"; offered load {study.offered_load:.2f}",
        highlight=False,
    )
    merged = merged_partitions_line(study.cleaned.trace, cpus)
    if merged is not None:
        console.print(merged, highlight=False)
    ue, cv = study.gap
    console.print(
        f"gap: avg bsld {ue:.2f} with the users' requests, {cv:.2f} with perfect walltimes "
        "(clairvoyant); gap closed = the share of that cut a policy takes",
        highlight=False,
    )
    table = Table(title=f"{cpus} CPUs" + (f", {nodes} nodes" if nodes else "") + f", {backfill}")
    columns = ("policy", "jobs", "wait (min)", "avg bsld", "gap closed", "util", "killed",
               "MAE (min)", "corr. (no-op)") + (("restarts",) if checkpoint else ())  # fmt: skip
    for name in columns:
        table.add_column(name, justify="left" if name == "policy" else "right")
    for m in study.metrics:
        table.add_row(
            m.policy,
            str(m.jobs),
            f"{m.avg_wait_min:.2f}",
            f"{m.avg_bsld:.2f}",
            "—" if m.gap_closed is None else f"{100 * m.gap_closed:.0f} %",
            f"{m.utilization:.3f}",
            str(m.killed),
            f"{m.prediction_mae_min:.1f}",
            f"{m.corrections * m.jobs:.0f} ({m.noop_corrections})" if m.corrections else "",
            *((str(m.restarts),) if checkpoint else ()),
        )
    lg = study.logged
    if lg is not None and lg.jobs:
        table.add_row(
            "as logged", str(lg.jobs), f"{lg.avg_wait_min:.2f}", f"{lg.avg_bsld:.2f}", "",
            f"{lg.utilization:.3f}", "", "", "", *(("",) if checkpoint else ()),
        )  # fmt: skip
    console.print(table)
    if lg is not None and lg.jobs:
        console.print(
            "as logged = the schedule the log records (the real scheduler); enough CPUs were "
            f"idle during {100 * lg.idle_while_waiting:.0f} % of its waiting time",
            highlight=False,
        )
    if checkpoint is not None:
        console.print(
            f"POLICY{SUFFIX}: every job checkpoints after each {checkpoint.every:g} s of work, "
            f"{checkpoint.cost:g} s each; a job killed at its walltime resumes from its last "
            "checkpoint (restarts); wait = time queued, bsld's run time = time run, over all "
            "its runs",
            highlight=False,
        )
    if written is not None:
        console.print(f"written: {written}", highlight=False, soft_wrap=True)  # a path, unbroken


def generate_command(
    out: Annotated[Path, typer.Option("--out", help="SWF file to write.")],
    jobs: Annotated[int, typer.Option("--jobs", help="Number of jobs.")] = 10000,
    cpus: Annotated[int, typer.Option("--cpus", help="Cluster size, processors.")] = 128,
    load: Annotated[float, typer.Option("--load", help="Offered load.")] = 0.8,
    users: Annotated[int, typer.Option("--users", help="Number of users.")] = 40,
    default_walltime: Annotated[
        float | None, typer.Option("--default-walltime", help="COARE mode: default, hours.")
    ] = None,
    default_share: Annotated[
        float, typer.Option("--default-share", help="COARE mode: share of jobs.")
    ] = 0.8,
    seed: Annotated[int, typer.Option("--seed", help="Seed.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Write a Lublin–Feitelson workload with users and modal estimates as SWF."""
    # The file and the memory are checked before the jobs are drawn.
    check_output_path(out, "--out")
    check_memory(BYTES_PER_JOB * max(jobs, 0), f"--jobs {jobs}", "to generate them", "fewer jobs")
    trace = lublin_feitelson(
        jobs, cpus=cpus, load=load, users=users, default_walltime_h=default_walltime,
        default_share=default_share, seed=seed,
    )  # fmt: skip
    write_swf(trace, out)
    if as_json:
        emit_json({"out": str(out), "jobs": len(trace), "cpus": cpus, "load": load, "seed": seed})
    else:
        console.print(f"wrote {len(trace)} jobs for {cpus} CPUs to {out}", highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``jobs simulate`` and ``jobs generate`` to the command line."""
    jobs_app.command("simulate", help=SIMULATE_HELP)(simulate_command)
    jobs_app.command("generate", help="Write a synthetic workload (SWF) for --cpus processors.")(
        generate_command
    )
    app.add_typer(jobs_app, name="jobs")
