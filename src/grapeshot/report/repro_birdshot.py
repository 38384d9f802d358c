"""Repro entries of Birdshot (000): figures 3 and 4 (theory), figures 9 and 10 (simulator).

Figures 3 and 4 print no numbers, only curves and the claims of §5.2 (more partitions per node
pull the LIF towards zero; to hold E[LIF] the partitions per node grow like log n); the rows
check those claims and put eq. 2 beside the exact expectation. Figures 9 and 10 are measured
on the paper's cluster (32 × c4.8xlarge, 576 cores) by the simulator, on the synthetic 3-D dam
break of docs/simulator.md standing in for PhysBAM.
"""

from __future__ import annotations

from functools import lru_cache

import matplotlib.pyplot as plt
import numpy as np

from grapeshot.model.machine_file import load_machine
from grapeshot.model.placement import load_imbalance
from grapeshot.place.birdshot import place_birdshot
from grapeshot.report.repro_result import ReproEntry, ReproResult, ReproRow
from grapeshot.sim import SimOptions, WorkloadSource, run_sweep
from grapeshot.theory.advisor import parts_per_node_eq2
from grapeshot.theory.lif import expected_lif, lif_eq2, max_cdf

#: Figures 3-4: n = 32 nodes, p = 0.6 busy; figure 3 at s = 32 and 128, figure 4 at E = 0.21.
FIG3_NODES = 32
FIG3_BUSY = 0.6
FIG3_PARTS = (32, 128)
FIG4_TARGET = 0.21


def _lif_pmf(nodes: int, parts: int, busy: float) -> tuple[np.ndarray, np.ndarray]:
    """The exact distribution of the LIF (fixed-count model): values and probabilities."""
    k, cdf, mean_busy = max_cdf(nodes, parts, busy, model="fixed-count")
    pmf = np.diff(cdf, prepend=0.0)
    keep = pmf > 1e-12
    return k[keep] / mean_busy - 1.0, pmf[keep]


def _sampled_lif(nodes: int, parts: int, busy: float, trials: int, seed: int) -> np.ndarray:
    """LIF of ``trials`` real Birdshot placements of a binary workload (one draw each)."""
    rng = np.random.default_rng(seed)
    total = nodes * parts
    n_busy = round(busy * total)
    cores = np.ones(nodes, dtype=np.int64)
    out = np.empty(trials)
    for t in range(trials):
        node_of = place_birdshot((nodes, parts), cores, seed=rng)
        busy_parts = rng.permutation(total)[:n_busy]
        counts = np.bincount(node_of[busy_parts], minlength=nodes)
        out[t] = load_imbalance(counts)
    return out


def birdshot_fig3(quick: bool) -> ReproResult:
    """The distribution of the LIF at 32 and 128 partitions per node (n = 32, p = 0.6)."""
    trials = 200 if quick else 2000
    seed = 3
    rows: list[ReproRow] = []
    data: dict = {"exact": {}, "sampled": {}, "eq2": {}}
    fig, ax = plt.subplots(figsize=(7, 4))
    for s, color in zip(FIG3_PARTS, ("black", "tab:blue"), strict=True):
        values, pmf = _lif_pmf(FIG3_NODES, s, FIG3_BUSY)
        exact = expected_lif(FIG3_NODES, s, FIG3_BUSY, model="fixed-count", method="exact")
        sample = _sampled_lif(FIG3_NODES, s, FIG3_BUSY, trials, seed + s)
        eq2 = lif_eq2(FIG3_NODES, s, FIG3_BUSY)
        data["exact"][s] = {"lif": values.tolist(), "probability": pmf.tolist(), "mean": exact.mean}
        data["sampled"][s] = {"mean": float(sample.mean()), "p95": float(np.quantile(sample, 0.95))}
        data["eq2"][s] = eq2
        ax.bar(
            values,
            pmf,
            width=0.6 / (FIG3_BUSY * s),
            color=color,
            alpha=0.6,
            label=f"s = {s}: exact (fixed count)",
        )
        ax.axvline(eq2, color=color, linestyle="--", label=f"s = {s}: eq. 2")
        rows += [
            ReproRow(f"E[LIF], s = {s}: eq. 2 (paper's model) vs exact", eq2, exact.mean),
            ReproRow(
                f"E[LIF], s = {s}: exact vs {trials} real Birdshot placements",
                exact.mean,
                float(sample.mean()),
            ),
        ]
    ratio = data["exact"][32]["mean"] / data["exact"][128]["mean"]
    rows.append(ReproRow("E[LIF] at s = 32 over s = 128 (eq. 2: sqrt(4) = 2)", 2.0, ratio))
    ax.set_xlabel("load imbalance factor")
    ax.set_ylabel("probability")
    ax.set_title(f"Figure 3: LIF distribution, n = {FIG3_NODES}, p = {FIG3_BUSY}")
    ax.legend(fontsize=8)
    notes = [
        "The paper draws the two distributions without printing numbers; the rows put its "
        "eq. 2 beside the exact expectation (grapeshot.theory.lif, fixed-count model: exactly "
        "p·n·s busy partitions) and beside real Birdshot placements (place_birdshot, "
        f"{trials} seeds).",
        "Eq. 2 is the leading term of an extreme-value expansion; at n = 32 it overstates "
        "the expectation (docs/theory.md maps where it is and is not on the safe side).",
        "Quadrupling s halves the LIF, as eq. 2's 1/sqrt(s) says, within the small-n bias.",
    ]
    inputs = {
        "nodes": FIG3_NODES,
        "busy": FIG3_BUSY,
        "parts_per_node": list(FIG3_PARTS),
        "trials": trials,
        "seed": seed,
    }
    return ReproResult(
        "birdshot-fig3", "Birdshot figure 3: the LIF's distribution", rows, notes, data, fig, inputs
    )


def _smallest_s_exact(nodes: int, busy: float, target: float, start: int) -> int:
    """Smallest s with exact E[LIF] (binomial model, the appendix's) <= target."""
    lo, hi = 1, max(2, start)
    while expected_lif(nodes, hi, busy, method="exact").mean > target:
        lo, hi = hi, hi * 2
    while lo < hi:
        mid = (lo + hi) // 2
        if expected_lif(nodes, mid, busy, method="exact").mean <= target:
            hi = mid
        else:
            lo = mid + 1
    return hi


def birdshot_fig4(quick: bool) -> ReproResult:
    """Partitions per node that hold E[LIF] = 0.21 at p = 0.6, against the node count."""
    nodes = np.array(
        [2, 4, 8, 16, 32, 64, 128, 256]
        if quick
        else [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
    )
    eq2 = np.array([parts_per_node_eq2(int(n), FIG3_BUSY, FIG4_TARGET) for n in nodes])
    exact = np.array(
        [
            _smallest_s_exact(int(n), FIG3_BUSY, FIG4_TARGET, int(e))
            for n, e in zip(nodes, eq2, strict=True)
        ]
    )
    # Logarithmic growth: s is an affine function of ln n; the fit's residual says how well.
    ln = np.log(nodes.astype(float))
    slope, intercept = np.polyfit(ln, exact, 1)
    fitted = slope * ln + intercept
    r2 = 1.0 - float(np.sum((exact - fitted) ** 2) / np.sum((exact - exact.mean()) ** 2))
    rows = [
        ReproRow(f"s for E[LIF] = {FIG4_TARGET} at n = {n}: eq. 2 vs exact", float(e), float(x))
        for n, e, x in zip(nodes, eq2, exact, strict=True)
    ]
    rows.append(
        ReproRow("R² of s = a·ln n + b through the exact points (paper: logarithmic)", 1.0, r2)
    )
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(nodes, eq2, "o--", color="grey", label="eq. 2 solved for s")
    ax.plot(nodes, exact, "s-", color="black", label="exact (binomial model)")
    ax.plot(nodes, fitted, ":", color="tab:red", label=f"{slope:.1f}·ln n + {intercept:.1f}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("nodes n")
    ax.set_ylabel("partitions per node s")
    ax.set_title(f"Figure 4: s holding E[LIF] = {FIG4_TARGET} (p = {FIG3_BUSY})")
    ax.legend()
    notes = [
        "The paper's figure 4 plots eq. 2 solved for s; it prints no values. Both curves here "
        "grow like ln n (the R² row); the exact one needs fewer partitions than eq. 2 at small "
        "n, where eq. 2's asymptotic expansion overstates the LIF, and the ratio of the two "
        "approaches 1 as n grows.",
        "Eq. 2 with the natural logarithm, as in the paper's appendix (A.2).",
    ]
    data = {
        "nodes": nodes.tolist(),
        "eq2": eq2.tolist(),
        "exact": exact.tolist(),
        "fit": {"slope": float(slope), "intercept": float(intercept), "r2": r2},
    }
    return ReproResult(
        "birdshot-fig4",
        "Birdshot figure 4: partitions per node against nodes",
        rows,
        notes,
        data,
        fig,
        {"busy": FIG3_BUSY, "target_lif": FIG4_TARGET},
    )


#: The dam break of docs/simulator.md (512 × 256 × 256 cells, 2 µs per wet cell, 3 ghost
#: layers of 40 bytes) on Birdshot's cluster; quick runs sample its trajectory more coarsely.
DAMBREAK = "dambreak:parts=32x16x16,cells=16,steps={steps},cell_bytes=40,ghost=3,cell_cost=2e-6"
FIG_PPCS = (1, 2, 4, 8, 16, 32, 64)
QUICK_PPCS = (1, 2, 4, 8, 16)
#: Figure 9's speedups (reference → micro+no random → micro+random), PhysBAM, PARSEC, Lassen.
PAPER_FIG9 = {"micro": (1.3, 1.5, 2.0), "random": (1.5, 1.5, 1.7), "total": (2.0, 2.3, 3.4)}
#: Figure 10: speedup from 1 to 2 partitions per core and the best range, same three apps.
PAPER_FIG10_1TO2 = (1.5, 1.8, 2.5)
PAPER_FIG10_BEST = ((2, 4), (4, 8), (16, 32))


@lru_cache(maxsize=2)
def _dambreak_sweep(quick: bool) -> dict[tuple[str, int], float]:
    """Step time (s) of geometric and Birdshot at every partitions-per-core."""
    steps = 6 if quick else 100
    ppcs = QUICK_PPCS if quick else FIG_PPCS
    machine = load_machine("ec2-c4.8xlarge", 32)
    runs = run_sweep(
        WorkloadSource(spec=DAMBREAK.format(steps=steps)),
        machine,
        ["geometric", "birdshot"],
        ppcs,
        seed=1,
        options=SimOptions(),
    )
    return {(r.strategy, r.ppc): r.result.step_time_mean for r in runs}


def _sweep_inputs(quick: bool) -> dict:
    return {
        "machine": "ec2-c4.8xlarge",
        "nodes": 32,
        "seed": 1,
        "workload": DAMBREAK.format(steps=6 if quick else 100),
        "ppc": list(QUICK_PPCS if quick else FIG_PPCS),
    }


def birdshot_fig9(quick: bool) -> ReproResult:
    """Reference, micro-partitioned and randomised step times on 32 × 18 cores."""
    t = _dambreak_sweep(quick)
    ppcs = sorted({k for _, k in t})
    reference = t[("geometric", 1)]
    best_k = min(ppcs, key=lambda k: t[("birdshot", k)])
    micro = t[("geometric", best_k)]
    best = t[("birdshot", best_k)]
    rows = [
        ReproRow(
            "micro-partitioning alone (geometric 1 → k per core), PhysBAM",
            PAPER_FIG9["micro"][0],
            reference / micro,
            "×",
        ),
        ReproRow(
            "randomised placement at k per core, PhysBAM",
            PAPER_FIG9["random"][0],
            micro / best,
            "×",
        ),
        ReproRow(
            "Birdshot over the reference, PhysBAM", PAPER_FIG9["total"][0], reference / best, "×"
        ),
        ReproRow(
            "Birdshot over the reference, best of the paper's three apps",
            PAPER_FIG9["total"][2],
            reference / best,
            "×",
        ),
    ]
    fig, ax = plt.subplots(figsize=(6, 4))
    labels = [
        "reference\n(geometric, 1/core)",
        f"micro\n(geometric, {best_k}/core)",
        f"micro+random\n(Birdshot, {best_k}/core)",
    ]
    ax.bar(labels, [reference * 1e3, micro * 1e3, best * 1e3], color=["grey", "tab:blue", "black"])
    ax.set_ylabel("simulated time per step (ms)")
    ax.set_title("Figure 9: dam break, 32 × c4.8xlarge (simulated)")
    notes = [
        f"k = {best_k} partitions per core is Birdshot's best in this sweep; the paper picks "
        "each app's best the same way.",
        "One app, not three: the synthetic 3-D dam break stands in for PhysBAM; the paper's "
        "PARSEC and Lassen panels need traces at 36,864 partitions that take too long to "
        "generate here (grapeshot trace sph / wavefront make smaller ones).",
        "More from randomisation, less from micro-partitioning than the paper: dry cells cost "
        "nothing in the synthetic dam break, so geometric leaves most nodes idle, and there is "
        "one exchange per step and no Poisson solve whose latency micro-partitions could hide "
        "(docs/simulator.md, 'Measured: Birdshot figures 9 and 10').",
        "A clean modelled machine: no OS noise, stragglers or TCP retransmissions.",
    ]
    if quick:
        notes.append("--quick: 6 steps and up to 16 per core instead of 100 steps and 64.")
    data = {"step_seconds": {f"{s}@{k}": v for (s, k), v in t.items()}, "best_ppc": best_k}
    return ReproResult(
        "birdshot-fig9",
        "Birdshot figure 9: where the speedup comes from",
        rows,
        notes,
        data,
        fig,
        _sweep_inputs(quick),
    )


def birdshot_fig10(quick: bool) -> ReproResult:
    """Birdshot's step time against partitions per core: better, then worse."""
    t = _dambreak_sweep(quick)
    ppcs = sorted({k for _, k in t})
    bird = np.array([t[("birdshot", k)] for k in ppcs])
    best_k = ppcs[int(np.argmin(bird))]
    one_to_two = bird[0] / bird[1]
    rows = [
        ReproRow(
            "speedup from 1 to 2 partitions per core, PhysBAM", PAPER_FIG10_1TO2[0], one_to_two, "×"
        ),
        ReproRow(
            "largest single-doubling speedup is 1 → 2 (1 = yes)",
            1.0,
            float(one_to_two == max(bird[:-1] / bird[1:])),
        ),
        ReproRow("best partitions per core (paper: PhysBAM 2-4, PARSEC 4-8)", None, float(best_k)),
        ReproRow(
            "slower again past the best (1 = yes; needs the full sweep)",
            1.0,
            float(best_k != ppcs[-1]),
        ),
    ]
    fig, ax = plt.subplots(figsize=(7, 4))
    for s, style in (("geometric", "o--"), ("birdshot", "s-")):
        ax.plot(ppcs, [t[(s, k)] * 1e3 for k in ppcs], style, label=s)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("partitions per core")
    ax.set_ylabel("simulated time per step (ms)")
    ax.set_title("Figure 10: dam break on 32 × c4.8xlarge (simulated)")
    ax.legend()
    notes = [
        "The optimum sits at 4-8 per core rather than PhysBAM's 2-4: the synthetic dam break's "
        "halos are small next to its work, so more partitions keep paying off a little longer "
        "(PARSEC's 4-8 is the paper's nearest panel).",
        "The upturn comes from the halo traffic (it grows with the partition count, every cut "
        "crossing the network under a random placement) and from the modelled per-task and "
        "per-message overheads (20 µs and 5 µs, docs/simulator.md).",
    ]
    if quick:
        notes.append("--quick: 6 steps, up to 16 per core.")
    data = {
        "ppc": ppcs,
        "birdshot_ms": (bird * 1e3).tolist(),
        "geometric_ms": [t[("geometric", k)] * 1e3 for k in ppcs],
    }
    return ReproResult(
        "birdshot-fig10",
        "Birdshot figure 10: partitions per core",
        rows,
        notes,
        data,
        fig,
        _sweep_inputs(quick),
    )


ENTRIES: tuple[ReproEntry, ...] = (
    ReproEntry(
        "birdshot-fig3",
        "Birdshot (EuroSys '21), figure 3, §5.1-5.2",
        "exact LIF distribution (fixed-count model) and real Birdshot placements of a binary "
        "workload, n = 32, p = 0.6, s = 32 and 128; eq. 2 beside both",
        "~3 s",
        "~2 s",
        birdshot_fig3,
    ),
    ReproEntry(
        "birdshot-fig4",
        "Birdshot (EuroSys '21), figure 4, §5.2",
        "partitions per node holding E[LIF] = 0.21 at p = 0.6 for n = 2 ... 4096: eq. 2 solved "
        "for s and the exact smallest s; fit to a·ln n + b",
        "~2 s",
        "< 1 s",
        birdshot_fig4,
    ),
    ReproEntry(
        "birdshot-fig9",
        "Birdshot (EuroSys '21), figure 9, §7.2",
        "simulated 3-D dam break on 32 × c4.8xlarge: geometric 1/core, geometric and Birdshot "
        "at 1-64 per core, 100 steps",
        "~1 min",
        "~10 s",
        birdshot_fig9,
    ),
    ReproEntry(
        "birdshot-fig10",
        "Birdshot (EuroSys '21), figure 10, §7.2",
        "the same sweep as birdshot-fig9: step time against partitions per core",
        "~1 min (shared with fig9 in one process)",
        "~10 s",
        birdshot_fig10,
    ),
)
