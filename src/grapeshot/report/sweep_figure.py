"""The figure of a simulated sweep (``grapeshot simulate``): time per step against partitions
per core, and busy and idle time at each strategy's best."""

from __future__ import annotations

import numpy as np

from grapeshot.sim.sweep import Run


def sweep_figure(runs: list[Run], *, title: str):
    """Birdshot figures 9-10 style: time per step against partitions per core, per strategy,
    and each strategy's busy and idle time per core at its best partitions per core."""
    import matplotlib.pyplot as plt

    strategies = list(dict.fromkeys(r.strategy for r in runs))
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    for name in strategies:
        mine = sorted((r for r in runs if r.strategy == name), key=lambda r: r.parts_per_core)
        ax.plot(
            [r.parts_per_core for r in mine],
            [r.result.step_time_mean * 1e3 for r in mine],
            marker="o",
            label=name,
        )
    ax.set_xscale("log", base=2)
    # The real partitions per core (1.78 for 128 partitions on 72 cores), labelled as the
    # table prints them.
    ticks = {r.parts_per_core: r.label for r in runs}
    ax.set_xticks(sorted(ticks), [ticks[x] for x in sorted(ticks)])
    ax.minorticks_off()
    ax.set_xlabel("partitions per core")
    ax.set_ylabel("time per step (ms)")
    ax.set_title("time per step vs partitions per core")
    ax.grid(alpha=0.3)
    ax.legend()
    labels, busy, idle = [], [], []
    for name in strategies:
        best = min((r for r in runs if r.strategy == name), key=lambda r: r.result.total_time)
        res = best.result
        cores = float(res.cores.sum())
        labels.append(f"{name}\n{best.label}/core")
        busy.append(float(res.node_busy.sum()) / cores / res.n_steps * 1e3)
        idle.append(float(res.node_idle.sum()) / cores / res.n_steps * 1e3)
    x = np.arange(len(labels))
    bx.bar(x, busy, label="busy", color="tab:blue")
    bx.bar(x, idle, bottom=busy, label="idle", color="tab:gray")
    bx.set_xticks(x, labels)
    bx.set_ylabel("time per step per core (ms)")
    bx.set_title("busy and idle time at each strategy's best")
    bx.legend()
    fig.suptitle(title)
    return fig
