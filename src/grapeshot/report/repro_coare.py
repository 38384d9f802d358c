"""Repro entries of the COARE walltime paper (004): table 5 and figure 5."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from grapeshot.jobs.correct import get_correction, ladder
from grapeshot.jobs.generate import lublin_feitelson
from grapeshot.jobs.load import YEAR_S, rate_factor
from grapeshot.jobs.metrics import bsld_upper_bound, reduction
from grapeshot.jobs.policies import PAPER_POLICIES, POLICIES
from grapeshot.jobs.simulate import Cluster
from grapeshot.jobs.study import Study, run_study
from grapeshot.jobs.swf import read_swf
from grapeshot.model.errors import InputError
from grapeshot.report.repro_result import ReproEntry, ReproResult, ReproRow

SETH_FILE = "hpc2n-seth-prefix.swf"


#: Where to get the Seth prefix when it is not beside the clone: the one line of the refusal.
#: The log is not shipped in the package: the Parallel Workloads Archive states no licence
#: for redistribution (it asks for acknowledgement and a citation), unlike grapeshot's BSD-3.
SETH_SOURCE = (
    "the header and first 3,171 jobs of the HPC2N Seth log (Parallel Workloads Archive, "
    "HPC2N-2002-2.2; the Alea simulator's data-set/hpc2n.swf) saved as "
    f"$GRAPESHOT_SWF_DIR/{SETH_FILE} (docs/jobs.md)"
)


def swf_dir_candidates() -> list[Path]:
    """Where the SWF traces are looked for, in order: $GRAPESHOT_SWF_DIR, then
    ``shared/data/swf`` beside the current directory and beside the clone."""
    env = os.environ.get("GRAPESHOT_SWF_DIR")
    beside = [
        Path.cwd().parent / "shared" / "data" / "swf",
        Path(__file__).resolve().parents[4] / "shared" / "data" / "swf",
    ]
    return [Path(env), *beside] if env else beside


def swf_dir() -> Path:
    """Where the shared SWF traces are: $GRAPESHOT_SWF_DIR, else ../shared/data/swf.

    Raises
    ------
    InputError
        In one line, naming the file and where to get it (:data:`SETH_SOURCE`).
    """
    for c in swf_dir_candidates():
        if (c / SETH_FILE).is_file():
            return c
    raise InputError(
        SETH_FILE, "not found in $GRAPESHOT_SWF_DIR or ../shared/data/swf", SETH_SOURCE
    )


# --- COARE table 5 -----------------------------------------------------------------------

#: Table 5 (average bounded slowdown) and table 4 (average wait, min), HPC2N Seth column.
PAPER_SETH_BSLD = {
    "user-estimate": 637.0,
    "easy++-power": 655.0,
    "easy++-simple": 655.0,
    "regression-power": 2.0,
    "regression-simple": 2.0,
    "power": 16.0,
    "simple": 16.0,
}
PAPER_SETH_WAIT = {
    "user-estimate": 93.38,
    "easy++-power": 111.13,
    "easy++-simple": 108.66,
    "regression-power": 53.09,
    "regression-simple": 52.61,
    "power": 70.00,
    "simple": 59.63,
}
#: The paper's COARE reductions of avgBSLD against user estimate (abstract, §6.2).
PAPER_COARE_CORRECTION_ONLY = 0.9990
PAPER_COARE_PREDICTIVE = 0.9895
SETH_CPUS = 240
#: Table 3, HPC2N Seth: cleaned jobs and period (months) of the log the paper simulated.
PAPER_SETH_JOBS = 45_333
PAPER_SETH_MONTHS = 12

#: Tables 4 (average wait, min) and 5 (avgBSLD) for all five workloads, policies in the order
#: of PAPER_POLICIES; used to check the two tables against each other (eq. 2's ceiling).
PAPER_WORKLOADS = ("COARE", "Gaia", "MetaCentrum2", "Curie", "Seth")
PAPER_TABLE4 = {
    "COARE": (4.89, 5.01, 4.88, 4.95, 5.16, 4.85, 4.90),
    "Gaia": (260.96, 289.54, 185.93, 247.22, 243.91, 1148.76, 1137.67),
    "MetaCentrum2": (28.21, 28.09, 21.50, 25.68, 25.75, 28.05, 26.93),
    "Curie": (313.94, 234.94, 237.62, 183.37, 171.31, 148.20, 151.41),
    "Seth": (93.38, 111.13, 108.66, 53.09, 52.61, 70.00, 59.63),
}
PAPER_TABLE5 = {
    "COARE": (29447.0, 160.0, 160.0, 259.0, 259.0, 30.0, 30.0),
    "Gaia": (1182.0, 53.0, 53.0, 412.0, 412.0, 5.0, 5.0),
    "MetaCentrum2": (806.0, 813.0, 822.0, 739.0, 739.0, 6.0, 6.0),
    "Curie": (958.0, 53.0, 53.0, 567.0, 567.0, 19.0, 19.0),
    "Seth": (637.0, 655.0, 655.0, 2.0, 2.0, 16.0, 16.0),
}


def paper_consistency() -> list[dict[str, Any]]:
    """Every cell of the paper's table 5 against the ceiling its table-4 wait allows.

    Eq. 2 with τ = 10 s gives avgBSLD <= avg(wait)/τ + 1 over any set of jobs
    (:func:`grapeshot.jobs.metrics.bsld_upper_bound`); a cell above it cannot be eq. 2 over
    the jobs whose average wait table 4 reports.
    """
    cells = []
    for w in PAPER_WORKLOADS:
        for p, wait, bsld in zip(PAPER_POLICIES, PAPER_TABLE4[w], PAPER_TABLE5[w], strict=True):
            ceiling = bsld_upper_bound(wait * 60.0)
            cells.append({"workload": w, "policy": p, "wait_min": wait, "bsld": bsld,
                          "ceiling": ceiling, "possible": bsld <= ceiling})  # fmt: skip
    return cells


def _coare_reductions(study: Study) -> dict[str, float]:
    m = study.by_policy()
    base = m["user-estimate"].avg_bsld
    return {p: reduction(base, m[p].avg_bsld) for p in m if p != "user-estimate"}


def coare_table5(quick: bool) -> ReproResult:
    """Seth prefix under the seven policies; COARE mode on Seth and on a generated trace.

    Besides the paper's runs: the schedule the Seth log itself records (the real Maui run),
    the clairvoyant schedule (perfect walltimes: the room any policy has), the prefix with
    arrivals compressed to the paper's Seth job rate (table 3), conservative backfilling
    (closer to Slurm's backfill, which reserves for every job it tests) for COARE mode, and
    the check of the paper's tables 4 and 5 against eq. 2's ceiling. Each is reported apart.
    """
    policies = [POLICIES[p] for p in PAPER_POLICIES]
    diag = [*policies, POLICIES["clairvoyant"]]
    seth = read_swf(swf_dir() / SETH_FILE).trace
    machine = Cluster(SETH_CPUS)
    plain = run_study(seth, diag, machine, seed=0)
    logged = plain.logged
    assert logged is not None  # the Seth log records every job's wait
    factor = rate_factor(plain.cleaned.trace, PAPER_SETH_JOBS, PAPER_SETH_MONTHS / 12 * YEAR_S)
    dense = run_study(seth, diag, machine, seed=0, compress=factor)
    coare_seth = run_study(seth, diag, machine, default_walltime_h=72.0, default_share=0.8,
                           seed=0)  # fmt: skip
    coare_seth_cons = run_study(seth, diag, machine, default_walltime_h=72.0, default_share=0.8,
                                seed=0, backfill="conservative")  # fmt: skip
    n_gen = 2000 if quick else 20000
    gen_cpus = 128
    gen = lublin_feitelson(n_gen, cpus=gen_cpus, load=0.75, seed=1, default_walltime_h=168.0,
                           default_share=0.8)  # fmt: skip
    coare_gen = run_study(gen, diag, Cluster(gen_cpus), seed=0)
    coare_gen_cons = run_study(gen, diag, Cluster(gen_cpus), seed=0, backfill="conservative")
    consistency = paper_consistency()

    rows: list[ReproRow] = []
    ours = plain.by_policy()
    for p in PAPER_POLICIES:
        rows.append(ReproRow(f"Seth avgBSLD {p}", PAPER_SETH_BSLD[p], ours[p].avg_bsld))
    for p in PAPER_POLICIES:
        rows.append(ReproRow(f"Seth avg wait {p}", PAPER_SETH_WAIT[p], ours[p].avg_wait_min,
                             "min"))  # fmt: skip
    rows.append(ReproRow("Seth avgBSLD clairvoyant (diagnostic)", None,
                         ours["clairvoyant"].avg_bsld))  # fmt: skip
    rows.append(ReproRow("Seth as logged (real Maui run) avgBSLD", None, logged.avg_bsld))
    rows.append(ReproRow("Seth as logged avg wait", None, logged.avg_wait_min, "min"))
    rows.append(ReproRow("Seth as logged: waiting time with enough idle CPUs", None,
                         100 * logged.idle_while_waiting, "%"))  # fmt: skip
    dn = dense.by_policy()
    for p in (*PAPER_POLICIES, "clairvoyant"):
        rows.append(ReproRow(f"Seth, arrivals ×{factor:.2f} (paper's job rate) avgBSLD {p}",
                             PAPER_SETH_BSLD.get(p), dn[p].avg_bsld))  # fmt: skip
    red = {"seth-72h": _coare_reductions(coare_seth),
           "seth-72h-conservative": _coare_reductions(coare_seth_cons),
           "generated": _coare_reductions(coare_gen),
           "generated-conservative": _coare_reductions(coare_gen_cons)}  # fmt: skip
    for label, r in red.items():
        corr = min(r["power"], r["simple"])
        pred = min(r[p] for p in ("easy++-power", "easy++-simple", "regression-power",
                                  "regression-simple"))  # fmt: skip
        rows.append(ReproRow(f"COARE mode ({label}): correction-only cut, worst",
                             100 * PAPER_COARE_CORRECTION_ONLY, 100 * corr, "%"))  # fmt: skip
        rows.append(ReproRow(f"COARE mode ({label}): predictive-corrective cut, worst",
                             100 * PAPER_COARE_PREDICTIVE, 100 * pred, "%"))  # fmt: skip
        rows.append(ReproRow(f"COARE mode ({label}): clairvoyant cut (room for any policy)",
                             None, 100 * r["clairvoyant"], "%"))  # fmt: skip
    for c in consistency:
        if c["workload"] in ("Seth", "COARE") and c["policy"] == "user-estimate":
            rows.append(ReproRow(f"paper {c['workload']} user-estimate avgBSLD vs eq.-2 ceiling "
                                 "from its table-4 wait", c["bsld"], c["ceiling"]))  # fmt: skip
    impossible = [c for c in consistency if not c["possible"]]
    order_ok = max(ours["power"].avg_bsld, ours["simple"].avg_bsld) < 0.5 * min(
        ours["user-estimate"].avg_bsld, ours["easy++-power"].avg_bsld,
        ours["easy++-simple"].avg_bsld)  # fmt: skip
    notes = [
        "Eq. 2 with τ = 10 s bounds the average: avgBSLD <= avg(wait)/τ + 1 (each job's "
        "(w + R)/max(R, τ) <= w/τ + 1). Checked against the paper's own table 4, "
        f"{len(impossible)} of {len(consistency)} cells of its table 5 exceed that ceiling, "
        "among them Seth user-estimate (637 > 561 from 93.38 min) and COARE user-estimate "
        "(29,447 > 30.3 from 4.89 min). The targets 637 and 99.90 % / 98.95 % are therefore not "
        "eq. 2 over the jobs of table 4; no simulator computing eq. 2 can reproduce them.",
        f"Seth as logged (the real Maui schedule in field 3): avg wait {logged.avg_wait_min:.0f} "
        f"min, avgBSLD {logged.avg_bsld:.0f}, against our user-estimate "
        f"{ours['user-estimate'].avg_wait_min:.0f} min / {ours['user-estimate'].avg_bsld:.1f}. "
        f"During {100 * logged.idle_while_waiting:.0f} % of the logged waiting time enough CPUs "
        "were idle for the waiting job: the real waits came from site policy (Maui per-user "
        "limits, reservations or nodes down), which SWF does not record, not from capacity.",
        "Seth: the paper simulated the cleaned 12-month HPC2N log (45,333 jobs) in the Slurm "
        "simulator (multifactor priority, Slurm's periodic backfill with its window, node "
        "counts predicted by a decision tree); we simulate the 3,145 runnable jobs of the "
        "shared 2-month prefix with exact FCFS + EASY on 240 CPUs (offered load "
        f"{plain.offered_load:.2f}). The ordering user-estimate, EASY++ ≫ correction-only "
        f"(here: at least twice) is {'reproduced' if order_ok else 'NOT reproduced'}; even the "
        "clairvoyant "
        f"schedule has avgBSLD {ours['clairvoyant'].avg_bsld:.1f}, so no policy could go far "
        "below user-estimate here.",
        f"Compressed Seth (arrivals ×{factor:.2f}, the paper's 45,333 jobs per 12 months; "
        f"offered load {dense.offered_load:.2f}): a different workload, reported apart. "
        "Slowdowns reach the paper's hundreds, but correction-only from a 10 min start is "
        "worse than user-estimate: every job looks 10 min long, backfilled jobs overrun the "
        "head job's reservation and it keeps slipping.",
        "Regression's 2 in the paper is below its own correction-only 16 and below what even "
        "the clairvoyant schedule reaches on this prefix. The paper lists 'job runtime' among "
        "its regression's inputs (§4.3: 'duration is one of the assumed features'), i.e. it "
        "may have seen each job's own run time; ours is trained online on completed jobs only "
        "and predicts from user, CPUs, memory and request (no peeking).",
        "COARE mode: with EASY the cut is measured against a baseline that exact EASY with "
        "80 % of requests at the default produces; with conservative backfilling (closer to "
        "Slurm's backfill, which plans every job it tests) the baseline is higher and the cuts "
        "larger. The clairvoyant cut (perfect walltimes) shows the room a walltime policy has; "
        "EASY is not monotone in walltime accuracy, so it is a reference, not a strict bound.",
    ]
    for label, r in red.items():
        corr = min(r["power"], r["simple"])
        preds = {p: r[p] for p in ("easy++-power", "easy++-simple", "regression-power",
                                   "regression-simple")}  # fmt: skip
        ok = [p for p, v in preds.items() if v >= 0.85]
        notes.append(
            f"Must-show on {label}: correction-only >= 90 % "
            f"{'holds' if corr >= 0.90 else 'does not hold'} ({100 * corr:.1f} % worst); "
            f"predictive-corrective >= 85 % holds for {', '.join(ok) if ok else 'none'} of the "
            f"four (worst {100 * min(preds.values()):.1f} %); perfect walltimes cut "
            f"{100 * r['clairvoyant']:.1f} %."
        )
    data = {
        "seth": [m.as_dict() for m in plain.metrics],
        "seth_cleaning": [s.__dict__ for s in plain.cleaned.steps],
        "seth_offered_load": plain.offered_load,
        "seth_logged": logged.as_dict(),
        "seth_compressed": {
            "factor": factor,
            "offered_load": dense.offered_load,
            "metrics": [m.as_dict() for m in dense.metrics],
        },
        "coare_seth_72h": [m.as_dict() for m in coare_seth.metrics],
        "coare_seth_72h_conservative": [m.as_dict() for m in coare_seth_cons.metrics],
        "coare_seth_defaulted": coare_seth.defaulted,
        "coare_generated": [m.as_dict() for m in coare_gen.metrics],
        "coare_generated_conservative": [m.as_dict() for m in coare_gen_cons.metrics],
        "reductions": red,
        "paper_consistency": consistency,
        "paper": {
            "seth_bsld": PAPER_SETH_BSLD,
            "seth_wait_min": PAPER_SETH_WAIT,
            "coare_correction_only": PAPER_COARE_CORRECTION_ONLY,
            "coare_predictive": PAPER_COARE_PREDICTIVE,
            "table4_wait_min": PAPER_TABLE4,
            "table5_bsld": PAPER_TABLE5,
        },
    }
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    x = np.arange(len(PAPER_POLICIES))
    axes[0].bar(x - 0.27, [PAPER_SETH_BSLD[p] for p in PAPER_POLICIES], 0.27, label="paper")
    axes[0].bar(x, [ours[p].avg_bsld for p in PAPER_POLICIES], 0.27, label="grapeshot")
    axes[0].bar(x + 0.27, [dn[p].avg_bsld for p in PAPER_POLICIES], 0.27,
                label=f"grapeshot, arrivals ×{factor:.2f}")  # fmt: skip
    axes[0].axhline(ours["clairvoyant"].avg_bsld, color="grey", linestyle=":",
                    label="grapeshot clairvoyant (prefix uncompressed)")  # fmt: skip
    axes[0].set_yscale("log")
    axes[0].set_title("HPC2N Seth: average bounded slowdown")
    cs = coare_seth.by_policy()
    cg = coare_gen.by_policy()
    cc = coare_gen_cons.by_policy()
    axes[1].bar(x - 0.27, [cs[p].avg_bsld for p in PAPER_POLICIES], 0.27,
                label="Seth, 80 % at 72 h")  # fmt: skip
    axes[1].bar(x, [cg[p].avg_bsld for p in PAPER_POLICIES], 0.27,
                label="generated, 80 % at 168 h, EASY")  # fmt: skip
    axes[1].bar(x + 0.27, [cc[p].avg_bsld for p in PAPER_POLICIES], 0.27,
                label="generated, conservative")  # fmt: skip
    axes[1].set_yscale("log")
    axes[1].set_title("COARE mode: average bounded slowdown")
    for ax in axes:
        ax.set_xticks(x, PAPER_POLICIES, rotation=35, ha="right")
        ax.legend(fontsize=7)
    inputs = {"seth": SETH_FILE, "cpus": SETH_CPUS, "backfill": "easy", "seed": 0,
              "seth_compress": {"factor": factor, "paper_jobs": PAPER_SETH_JOBS,
                                "paper_months": PAPER_SETH_MONTHS},
              "generated": {"jobs": n_gen, "cpus": gen_cpus, "load": 0.75, "seed": 1,
                            "default_walltime_h": 168.0, "default_share": 0.8,
                            "backfill": ["easy", "conservative"]},
              "seth_coare": {"default_walltime_h": 72.0, "default_share": 0.8}}  # fmt: skip
    return ReproResult("coare-table5", "COARE paper, table 5 (HPC2N Seth) and COARE-mode cuts",
                       rows, notes, data, fig, inputs)  # fmt: skip


# --- COARE figure 5 ----------------------------------------------------------------------


def coare_fig5(quick: bool) -> ReproResult:
    """Simple and power ladders for an 8 h job from 2 h and 6 h headstarts."""
    runtime = 8 * 3600.0
    series = {}
    for corr in ("simple", "power"):
        for head in (2, 6):
            series[f"{corr}-{head}h"] = ladder(head * 3600.0, runtime, get_correction(corr)) / 3600
    iters = {k: len(v) - 1 for k, v in series.items()}
    rows = [ReproRow(f"iterations to cover 8 h: {k}", None, float(v)) for k, v in iters.items()]
    rows.append(ReproRow("power faster than simple from 2 h (paper: yes)", 1.0,
                         float(iters["power-2h"] < iters["simple-2h"])))  # fmt: skip
    rows.append(ReproRow("simple faster than power from 6 h (paper: yes)", 1.0,
                         float(iters["simple-6h"] < iters["power-6h"])))  # fmt: skip
    notes = [
        "The paper's figure 5 gives no numbers, only that from a close headstart (6 h) simple "
        "reaches the run time sooner and from a poor one (2 h) power does; the rows check it.",
        "Power adds 15·2^(i−2) min at the i-th correction (15, 30, 60, 120, … min); simple "
        "adds 1 h each time.",
    ]
    fig, ax = plt.subplots(figsize=(7, 4))
    for k, v in series.items():
        ax.plot(np.arange(len(v)), v, marker="o" if "simple" in k else "s",
                color="black" if k.endswith("2h") else "grey", label=k)  # fmt: skip
    ax.axhline(8.0, linestyle="--", color="red", label="run time 8 h")
    ax.set_xlabel("correction iteration")
    ax.set_ylabel("walltime (h)")
    ax.set_title("Figure 5: walltime corrections of an 8 h job")
    ax.legend()
    data = {"walltimes_h": {k: v.tolist() for k, v in series.items()}, "iterations": iters}
    return ReproResult("coare-fig5", "COARE paper, figure 5", rows, notes, data, fig,
                       {"runtime_h": 8.0, "headstarts_h": [2.0, 6.0]})  # fmt: skip


ENTRIES: tuple[ReproEntry, ...] = (
    ReproEntry(
        "coare-table5",
        "COARE walltime paper (SCFA 2020), tables 4-5, §6.2",
        "7 walltime policies (+ clairvoyant) on the HPC2N Seth prefix, as logged and with "
        "arrivals compressed to the paper's job rate; the logged Maui run; COARE mode on "
        "Seth (80 % at 72 h) and on a Lublin-Feitelson trace (80 % at 168 h, EASY and "
        "conservative); tables 4-5 against eq. 2's ceiling",
        "~30 s",
        "~15 s",
        coare_table5,
    ),
    ReproEntry(
        "coare-fig5",
        "COARE walltime paper (SCFA 2020), figure 5",
        "simple vs power correction ladders, 8 h job, 2 h / 6 h headstarts",
        "< 1 s",
        "< 1 s",
        coare_fig5,
    ),
)
