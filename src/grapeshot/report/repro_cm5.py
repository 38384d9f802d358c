"""Repro entries of Wang, Lin & Ranka, CM-5 all-to-many (002): tables 2, 4, 5, 6.

Every number of ours is a prediction of the simulator (:mod:`grapeshot.sim.exchange`) on
the ``cm5`` preset (32 nodes, 60 us, 9 MB/s, node contention: the packets of messages that
reach one receiver at once interleave, their senders blocked until their last packet is in),
averaged over the test set's patterns; the paper's are measurements on a 32-node CM-5.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from grapeshot.exchange.pattern import Pattern
from grapeshot.exchange.schedules import make_schedule
from grapeshot.exchange.workloads import airfoil, nonuniform, regular
from grapeshot.model.presets import preset
from grapeshot.report.repro_result import ReproEntry, ReproResult, ReproRow
from grapeshot.sim.exchange import simulate_contention, simulate_exchange
from grapeshot.sim.network import network_model

#: Section 2.3: an Active Message costs 1.6 us to send and 1.7 us to receive; one inquiry's
#: one-way time is taken as their sum, and a busy target's reception pauses for the handler.
CM5_TAS_LATENCY = 3.3e-6
CM5_AM_COST = 1.7e-6

NAMES = {"ac": "AC", "lp": "LP", "rsn": "RS_N", "drsn": "DRS_N", "rsnh": "RS_NH"}

# --- the paper's numbers (ms) -------------------------------------------------------------

TABLE2 = {
    "d": [1, 2, 4, 8, 16, 31],
    256: {
        "recv": [0.089, 0.125, 0.205, 0.375, 0.731, 1.396],
        "max": [0.131, 0.150, 0.199, 0.298, 0.575, 1.279],
        "min": [0.050, 0.070, 0.098, 0.173, 0.302, 0.151],
        "ave": [0.061, 0.081, 0.116, 0.210, 0.394, 0.815],
    },
    4096: {
        "recv": [0.516, 1.083, 2.189, 4.693, 9.865, 19.485],
        "max": [0.504, 1.048, 2.124, 4.844, 10.065, 19.544],
        "min": [0.485, 1.023, 2.085, 4.353, 9.155, 2.847],
        "ave": [0.488, 1.038, 2.097, 4.502, 9.476, 15.550],
    },
}

# group -> {"units": [...], alg: [comm ms per unit], "comp": {alg: ms}, "perm": {alg: phases}}
TABLE4: dict[int, dict[str, Any]] = {
    4: {
        "units": [16, 512, 1024, 2048, 4096, 32768, 131072],
        "ac": [2.065, 3.539, 4.819, 7.388, 12.368, 79.343, 286.952],
        "lp": [3.410, 4.415, 5.547, 7.738, 12.118, 77.439, 272.649],
        "rsn": [1.679, 2.480, 3.192, 4.365, 6.911, 44.317, 164.951],
        "drsn": [2.994, 3.743, 4.505, 5.911, 8.764, 49.391, 174.290],
        "comp": {"ac": 0.0, "lp": 0.119, "rsn": 1.572},
        "perm": {"lp": 31, "rsn": 5.54},
    },
    16: {
        "units": [16, 256, 512, 1024, 2048, 4096, 131072],
        "ac": [6.585, 11.317, 14.997, 21.796, 35.014, 61.103, 3236.886],
        "lp": [7.788, 9.136, 10.850, 13.982, 19.517, 31.016, 1421.718],
        "rsn": [6.072, 7.728, 9.072, 11.589, 15.702, 24.749, 1105.936],
        "drsn": [10.416, 11.750, 13.262, 16.187, 21.315, 31.697, 1169.099],
        "comp": {"ac": 0.0, "lp": 0.129, "rsn": 6.267},
        "perm": {"lp": 31, "rsn": 18.56},
    },
    31: {
        "units": [16, 128, 256, 512, 1024, 16384, 131072],
        "ac": [16.558, 23.297, 28.944, 36.995, 53.933, 505.558, 11409.862],
        "lp": [8.934, 9.745, 11.111, 13.684, 17.581, 131.647, 1980.108],
        "rsn": [11.335, 12.918, 14.678, 17.252, 21.929, 154.408, 2388.292],
        "drsn": [23.563, 24.847, 26.226, 29.158, 35.054, 194.999, 2765.645],
        "comp": {"ac": 0.0, "lp": 0.138, "rsn": 12.857},
        "perm": {"lp": 31, "rsn": 34.2},
    },
}

TABLE5: dict[int, dict[str, Any]] = {
    4: {
        "units": [32, 64, 256, 1024, 2048, 4096],
        "ac": [3.619, 4.954, 12.689, 42.846, 81.316, 155.872],
        "lp": [4.577, 5.862, 13.477, 46.208, 87.027, 165.550],
        "rsn": [2.613, 3.409, 8.392, 29.550, 56.625, 110.546],
        "drsn": [3.827, 4.632, 9.891, 30.601, 56.750, 106.924],
        "rsnh": [2.571, 3.331, 8.113, 28.209, 53.990, 105.026],
        "comp": {"ac": 0.0, "lp": 0.118, "rsn": 1.572, "rsnh": 6.316},
        "perm": {"lp": 31, "rsn": 5.54, "rsnh": 5.66},
    },
    16: {
        "units": [16, 32, 128, 512, 2048, 4096],
        "ac": [11.234, 14.727, 34.214, 108.618, 371.240, 865.381],
        "lp": [9.804, 11.603, 21.628, 66.060, 250.002, 953.548],
        "rsn": [7.948, 9.473, 18.381, 55.899, 207.397, 406.768],
        "drsn": [11.960, 13.523, 22.194, 58.828, 196.709, 468.583],
        "rsnh": [7.852, 9.136, 16.961, 49.703, 183.184, 359.516],
        "comp": {"ac": 0.0, "lp": 0.128, "rsn": 6.325, "rsnh": 43.358},
        "perm": {"lp": 31, "rsn": 18.56, "rsnh": 19.1},
    },
    31: {
        "units": [16, 64, 256, 1024, 2048, 4096],
        "ac": [28.366, 50.627, 132.293, 482.330, 1668.837, 4577.956],
        "lp": [12.533, 20.128, 52.541, 200.451, 396.685, 1298.740],
        "rsn": [15.077, 23.576, 58.326, 206.937, 400.478, 1342.152],
        "drsn": [26.541, 35.462, 70.255, 209.073, 579.559, 1481.374],
        "rsnh": [14.729, 22.100, 51.424, 177.053, 342.341, 1231.085],
        "comp": {"ac": 0.0, "lp": 0.137, "rsn": 12.912, "rsnh": 122.033},
        "perm": {"lp": 31, "rsn": 34.2, "rsnh": 34.56},
    },
}

TABLE6: dict[int, dict[str, Any]] = {
    2800: {
        "units": [16, 32, 64, 128, 256, 512, 1024, 2048],
        "ac": [7.297, 8.825, 11.929, 18.047, 29.597, 53.111, 97.933, 184.354],
        "lp": [6.796, 8.007, 10.099, 13.810, 21.663, 38.904, 74.094, 141.512],
        "rsn": [6.349, 7.204, 8.962, 12.456, 19.485, 34.011, 64.044, 119.301],
        "drsn": [8.750, 9.628, 11.198, 14.302, 20.212, 32.315, 58.028, 106.379],
        "rsnh": [7.122, 7.803, 9.290, 12.143, 17.799, 29.253, 53.717, 100.708],
        "comp": {"ac": 0.0, "lp": 0.148, "rsn": 7.954, "rsnh": 27.211},
        "perm": {"lp": 31, "rsn": 15.15, "rsnh": 19.65},
        "stats": {
            "sent_max": 15,
            "sent_min": 3,
            "sent_mean": 9.25,
            "size_max": 36,
            "size_min": 1,
            "size_mean": 14.2,
        },
    },
    9428: {
        "units": [16, 32, 64, 128, 256, 512, 1024],
        "ac": [10.392, 14.597, 22.538, 37.867, 68.371, 128.381, 234.905],
        "lp": [9.157, 11.631, 16.407, 26.516, 47.555, 90.137, 171.527],
        "rsn": [8.266, 10.414, 14.981, 24.067, 42.762, 81.079, 152.494],
        "drsn": [10.712, 12.781, 16.624, 24.243, 40.115, 70.539, 131.186],
        "rsnh": [9.182, 10.991, 14.601, 21.710, 36.715, 68.232, 127.600],
        "comp": {"ac": 0.0, "lp": 0.149, "rsn": 8.945, "rsnh": 34.946},
        "perm": {"lp": 31, "rsn": 16.45, "rsnh": 22.5},
        "stats": {
            "sent_max": 16,
            "sent_min": 3,
            "sent_mean": 10.5,
            "size_max": 99,
            "size_min": 1,
            "size_mean": 32.04,
        },
    },
    53961: {
        "units": [16, 32, 64, 128, 256],
        "ac": [19.104, 30.835, 53.607, 100.113, 179.254],
        "lp": [15.419, 24.117, 42.560, 79.964, 153.044],
        "rsn": [14.109, 21.693, 37.050, 69.197, 130.772],
        "drsn": [16.791, 23.839, 37.310, 65.144, 118.193],
        "rsnh": [14.965, 21.037, 33.671, 59.847, 110.744],
        "comp": {"ac": 0.0, "lp": 0.149, "rsn": 9.754, "rsnh": 37.272},
        "perm": {"lp": 31, "rsn": 18.05, "rsnh": 26.4},
        "stats": {
            "sent_max": 18,
            "sent_min": 6,
            "sent_mean": 10.81,
            "size_max": 276,
            "size_min": 1,
            "size_mean": 93.21,
        },
    },
}

_COMMON_NOTES = [
    "Ours: the simulator's cm5 preset (60 us latency and 9 MB/s fitted to table 2's d = 1 row; "
    "node contention as in table 2: the packets of the messages reaching one receiver at once "
    "interleave, each switch of the 4-ary fat tree serving its active ports round-robin, and "
    "a sender is blocked until the last packet of its message is accepted). The phased "
    "schedules and DRS_N never put two messages on one receiver, so only AC changes with "
    "this model. Not modelled: the fat tree's bandwidth limits under load, the processor "
    "sharing its time between sending and receiving, CMMD/OS overheads; so our absolute "
    "times are lower (paper / ours 1.1-12x in tables 4-5, 1.7-5x in table 6, whose messages "
    "are smaller) and the orderings are what the rows marked 'ordering' check.",
    "Scheduling cost ('comp'): the CM-5's own measurement is used for the 'used once' totals "
    "(our schedules are computed on a modern CPU in tens of microseconds, given in data); "
    "DRS_N has no table, its test-and-set inquiries (3.3 us one way, 1.7 us handler time at a "
    "busy target, section 2.3) are inside its simulated communication time.",
    "RS_NH's cutoff rule is not given by the paper: ours sends largest first and cuts a "
    "message at 2x the phase's 75th-percentile size.",
]

#: Why AC's penalty stays below the paper's at high density (tables 4 and 5).
_AC_GAP_NOTE = (
    "AC / RS_N: the paper's 1.4x at d = 4 and 3.4x at d = 31 are table 5's msg_unit = 4096 "
    "columns (table 4 has no 4096 B column at d = 31: its 16 KiB and 128 KiB give 3.3x and "
    "4.8x). Packet interleaving at busy receivers (senders blocked meanwhile) is the "
    "contention mechanism the paper describes and the one modelled; it raises our AC / RS_N "
    "but not to 3-5x: with every receiver work-conserving, AC can only lose the receivers "
    "left idle while all senders are blocked elsewhere. The CM-5 loses far more: its AC at "
    "d = 31 takes 25x the one-message time per 128 KiB message (RS_N 4.8x per phase), "
    "i.e. blocked packets also hold network capacity other messages need (tree saturation). "
    "That needs the switches' buffers and arbitration, which the paper does not give, so it "
    "is not modelled rather than fitted (a head-of-line-blocking prototype was tried and not "
    "kept; with no committed code behind them its figures are not quoted)."
)


def _cm5_net():
    return network_model(preset("cm5"))


def _timed_schedule(pattern: Pattern, algorithm: str, seed: int):
    t0 = time.perf_counter()
    sched = make_schedule(pattern, algorithm, seed=seed)
    return sched, time.perf_counter() - t0


def _run_group(base: list[Pattern], units: list[int], algorithms: list[str], net) -> dict[str, Any]:
    """Mean simulated comm (ms) per algorithm and unit, phases, our schedule times (ms)."""
    comm = {a: [] for a in algorithms}
    phases: dict[str, list[float]] = {a: [] for a in algorithms if a in ("lp", "rsn", "rsnh")}
    sched_ms: dict[str, list[float]] = {a: [] for a in phases}
    tries: list[float] = []
    for a in phases:  # compile the numba kernels before timing anything
        make_schedule(regular(8, 2, 1, seed=0), a, seed=0)
    for unit in units:
        per = {a: [] for a in algorithms}
        for s, pat in enumerate(base):
            p = pat.scaled(unit)
            for a in algorithms:
                schedule = None
                if a in phases:
                    schedule, sec = _timed_schedule(p, a, s)
                    if unit == units[0]:
                        phases[a].append(schedule.n_phases)
                        sched_ms[a].append(sec * 1e3)
                r = simulate_exchange(
                    p,
                    a,
                    net,
                    seed=s,
                    schedule=schedule,
                    tas_latency=CM5_TAS_LATENCY,
                    am_cost=CM5_AM_COST,
                )
                per[a].append(r.seconds * 1e3)
                if a == "drsn" and unit == units[-1]:
                    tries.append(r.tries / max(p.messages, 1))
        for a in algorithms:
            comm[a].append(float(np.mean(per[a])))
    return {
        "comm_ms": comm,
        "phases": {a: float(np.mean(v)) for a, v in phases.items()},
        "max_phases": {a: int(np.max(v)) for a, v in phases.items()},
        "schedule_ms_here": {a: float(np.mean(v)) for a, v in sched_ms.items()},
        "drsn_tries_per_message": float(np.mean(tries)) if tries else None,
    }


def _best_once(comm: dict[str, list[float]], comp: dict[str, float], k: int) -> str:
    """The algorithm with the least comm + scheduling cost at unit index ``k``."""
    return min(comm, key=lambda a: comm[a][k] + comp.get(a, 0.0))


def _table(
    name: str,
    title: str,
    paper: dict[int, dict[str, Any]],
    factory: Callable[[int, int], Pattern],
    algorithms: list[str],
    reps: int,
    quick: bool,
    label: str,
) -> tuple[list[ReproRow], dict[str, Any], plt.Figure, list[str]]:
    net = _cm5_net()
    rows: list[ReproRow] = []
    data: dict[str, Any] = {}
    checks: list[str] = []
    groups = list(paper)
    fig, axes = plt.subplots(1, len(groups), figsize=(5 * len(groups), 4), squeeze=False)
    for gi, g in enumerate(groups):
        spec = paper[g]
        units = spec["units"]
        base = [factory(g, s) for s in range(reps)]
        res = _run_group(base, units, algorithms, net)
        res["units"] = units
        res["pattern"] = base[0].summary()
        data[f"{label}={g}"] = res
        for a in algorithms:
            for k, u in enumerate(units):
                rows.append(
                    ReproRow(
                        f"{label}={g} {u} B {NAMES[a]} comm", spec[a][k], res["comm_ms"][a][k], "ms"
                    )
                )
        for a, ph in spec["perm"].items():
            if a in res["phases"]:
                rows.append(ReproRow(f"{label}={g} {NAMES[a]} phases (perm)", ph, res["phases"][a]))
        ax = axes[0, gi]
        for a in algorithms:
            line = ax.loglog(units, res["comm_ms"][a], "o-", label=f"{NAMES[a]} (ours)")[0]
            ax.loglog(
                units,
                spec[a],
                "x--",
                color=line.get_color(),
                alpha=0.6,
                label=f"{NAMES[a]} (paper)",
            )
        ax.set_title(f"{label} = {g}")
        ax.set_xlabel("msg_unit (bytes)")
        ax.set_ylabel("communication (ms)")
        if gi == 0:
            ax.legend(fontsize=6, ncol=2)
        # The "used once" winner at the largest unit, comp included (paper's comp for both).
        k = len(units) - 1
        paper_best = _best_once({a: spec[a] for a in algorithms}, spec["comp"], k)
        ours_best = _best_once(res["comm_ms"], spec["comp"], k)
        rows.append(
            ReproRow(
                f"ordering: {label}={g} {units[k]} B best used once is "
                f"{NAMES[paper_best]} (paper) -> ours {NAMES[ours_best]}",
                1.0,
                float(paper_best == ours_best),
            )
        )
        pb = min(algorithms, key=lambda a: spec[a][k])
        ob = min(algorithms, key=lambda a: res["comm_ms"][a][k])
        rows.append(
            ReproRow(
                f"ordering: {label}={g} {units[k]} B best reused is "
                f"{NAMES[pb]} (paper) -> ours {NAMES[ob]}",
                1.0,
                float(pb == ob),
            )
        )
        checks.append(
            f"{label}={g}: best used once at {units[k]} B paper {NAMES[paper_best]},"
            f" ours {NAMES[ours_best]}; best reused paper {NAMES[pb]}, ours {NAMES[ob]}"
        )
    fig.suptitle(title)
    fig.tight_layout()
    return rows, data, fig, checks


# --- table 2 ------------------------------------------------------------------------------


def cm5_table2(quick: bool) -> ReproResult:
    """Table 2: d senders to one receiver, 256 B and 4 KiB, on the cm5 preset."""
    net = _cm5_net()
    rows: list[ReproRow] = []
    data: dict[str, Any] = {}
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    within = []
    for ax, size in zip(axes, (256, 4096), strict=True):
        ours = {key: [] for key in ("recv", "max", "min", "ave")}
        for d in TABLE2["d"]:
            r = simulate_contention(net, d, size)
            for key in ours:
                ours[key].append(r[key] * 1e3)
        data[str(size)] = ours
        for key in ours:
            for k, d in enumerate(TABLE2["d"]):
                rows.append(
                    ReproRow(f"{size} B d={d} {key}", TABLE2[size][key][k], ours[key][k], "ms")
                )
            ax.plot(TABLE2["d"], ours[key], "o-", label=f"{key} (ours)")
            ax.plot(TABLE2["d"], TABLE2[size][key], "x--", label=f"{key} (paper)")
        ax.set_title(f"{size} B messages to one receiver")
        ax.set_xlabel("senders d")
        ax.set_ylabel("ms")
        ax.legend(fontsize=7)
    errs = {}
    for key in ("recv", "max", "min", "ave"):
        err = np.asarray(data["4096"][key]) / np.asarray(TABLE2[4096][key]) - 1
        errs[key] = err
        within.append(float(np.abs(err).max()))
        rows.append(
            ReproRow(
                f"4096 B {key}: largest relative error (goal <= 0.20)",
                0.0,
                float(np.abs(err).max()),
            )
        )
    cells = np.concatenate(list(errs.values()))
    rows.append(
        ReproRow(
            "4096 B: cells within 20% of the paper (of 24)",
            24.0,
            float((np.abs(cells) <= 0.20).sum()),
        )
    )
    d31 = TABLE2["d"].index(31)
    notes = [
        "The cm5 preset is fitted to the d = 1 row (60 us + 4096 B / 9 MB/s = 0.515 ms). "
        "Node contention: the packets of the d messages interleave at the receiver, which is "
        "never idle while one is pending, so it is busy d x 0.515 ms; each sender is blocked "
        "until its last packet is accepted, so all senders finish together near the end, as on "
        "the CM-5 (its min is within 11% of its max for d <= 16).",
        "Each switch of the CM-5's fat tree (4 children, 2 parents at the levels of a 32-node "
        "machine: 20 MB/s per node within 4 nodes, 10 within 16, 5 beyond) serves its busy "
        "input ports round-robin: at d = 31 the three senders in the receiver's own 4-node "
        "cluster (P28-P30) each get one of its switch's five busy ports, a fifth of the "
        "receiver, and finish after 5 message times, the paper's footnote 1 "
        f"(ours {data['4096']['min'][d31]:.2f} ms, paper {TABLE2[4096]['min'][d31]:.2f} ms); "
        "the 28 others share the two parent ports, those of the receiver's 16-node half "
        "first.",
        "4 KiB: largest errors recv "
        f"{100 * within[0]:.0f}%, max {100 * within[1]:.0f}%, min {100 * within[2]:.0f}%, "
        f"ave {100 * within[3]:.0f}%, all at d = 31: the CM-5's cost per message grows "
        "under load (0.516 ms alone, 0.629 ms each at d = 31), which the model does not have; "
        "the paper gives no cause for it, so it is not fitted.",
        "256 B: the CM-5 pipelines small messages (per-message cost falls from 0.089 to 0.045 "
        "ms under load) and its senders finish before the receiver (0.05 against 0.089 ms at "
        "d = 1: a message this small is absorbed by the network once injected); the model "
        "charges the full latency to each message and holds a sender until its last packet "
        "is received, so recv and max are up to 2.5x slow, min and ave up to 4.7x.",
    ]
    fig.suptitle("Wang, Lin & Ranka table 2: node contention on the CM-5 (paper) vs cm5 preset")
    fig.tight_layout()
    return ReproResult(
        "cm5-table2",
        "Wang, Lin & Ranka 1993, table 2",
        rows,
        notes,
        data,
        fig,
        {"machine": "cm5", "nodes": 32, "receiver": 31},
    )


# --- tables 4, 5, 6 -----------------------------------------------------------------------


def cm5_table4(quick: bool) -> ReproResult:
    """Table 4: set 1 (d-regular, uniform sizes) on the simulated CM-5."""
    reps = 3 if quick else 50
    rows, data, fig, checks = _table(
        "cm5-table4",
        "Table 4: uniform message sizes, 32-node CM-5 (paper) vs cm5 preset",
        TABLE4,
        lambda d, s: regular(32, d, 1, seed=s),
        ["ac", "lp", "rsn", "drsn"],
        reps,
        quick,
        "d",
    )
    # RS_N vs AC at every d and size, and the paper's AC/RS_N ratios beside ours.
    for d, spec in TABLE4.items():
        ours = data[f"d={d}"]["comm_ms"]
        rows += _ac_over_rsn_rows(d, spec, ours)
        lp_vs = min(ours["lp"][k] / ours["rsn"][k] for k in range(len(spec["units"])))
        rows.append(
            ReproRow(
                f"ordering: d={d} LP within 10% of RS_N or better (paper: only d=31)",
                float(d == 31),
                float(lp_vs <= 1.1),
            )
        )
    notes = [*_COMMON_NOTES, *checks, _AC_GAP_NOTE]
    notes.append(
        f"{reps} patterns per d (the paper: 50); phases are RS_N's partial "
        "permutations, the bound d + log2 d + 1 is checked in the tests."
    )
    return ReproResult(
        "cm5-table4",
        "Wang, Lin & Ranka 1993, table 4 and figure 7",
        rows,
        notes,
        data,
        fig,
        {"machine": "cm5", "nodes": 32, "patterns": reps, "seeds": list(range(reps))},
    )


def _ac_over_rsn_rows(d: int, spec: dict[str, Any], ours: dict[str, list]) -> list[ReproRow]:
    """AC / RS_N per message unit, the paper's beside ours, and whether RS_N beats AC at every
    unit (``spec``: the paper's row group; ``ours``: comm ms per algorithm and unit)."""
    rows = [
        ReproRow(
            f"d={d} {u} B AC / RS_N",
            spec["ac"][k] / spec["rsn"][k],
            ours["ac"][k] / ours["rsn"][k],
        )
        for k, u in enumerate(spec["units"])
    ]
    beats = all(a > r for a, r in zip(ours["ac"], ours["rsn"], strict=True))
    rows.append(ReproRow(f"ordering: d={d} RS_N beats AC at every size", 1.0, float(beats)))
    return rows


def cm5_table5(quick: bool) -> ReproResult:
    """Table 5: set 2 (d-regular, sizes 1..32 x msg_unit) on the simulated CM-5."""
    reps = 3 if quick else 50
    rows, data, fig, checks = _table(
        "cm5-table5",
        "Table 5: non-uniform message sizes, 32-node CM-5 (paper) vs cm5 preset",
        TABLE5,
        lambda d, s: nonuniform(32, d, 1, seed=s),
        ["ac", "lp", "rsn", "drsn", "rsnh"],
        reps,
        quick,
        "d",
    )
    for d in TABLE5:
        ours = data[f"d={d}"]["comm_ms"]
        better = float(np.mean(np.asarray(ours["rsnh"]) / np.asarray(ours["rsn"])))
        spec = TABLE5[d]
        paper = float(np.mean(np.asarray(spec["rsnh"]) / np.asarray(spec["rsn"])))
        rows.append(ReproRow(f"d={d} RS_NH / RS_N comm (mean over units)", paper, better))
        rows += _ac_over_rsn_rows(d, spec, ours)
    notes = [*_COMMON_NOTES, *checks, _AC_GAP_NOTE, f"{reps} patterns per d (the paper: 50)."]
    return ReproResult(
        "cm5-table5",
        "Wang, Lin & Ranka 1993, table 5 and figure 8",
        rows,
        notes,
        data,
        fig,
        {"machine": "cm5", "nodes": 32, "patterns": reps, "seeds": list(range(reps))},
    )


def cm5_table6(quick: bool) -> ReproResult:
    """Table 6: set 3 (airfoil meshes partitioned by METIS into 32) on the simulated CM-5."""
    reps = 2 if quick else 10
    paper = TABLE6
    meshes: dict[int, Pattern] = {}

    def factory(points: int, s: int) -> Pattern:
        # One mesh per size (as in the paper); the repetitions vary the schedules' seeds.
        if points not in meshes:
            meshes[points] = airfoil(points, 1, seed=0)
        return meshes[points]

    rows, data, fig, checks = _table(
        "cm5-table6",
        "Table 6: airfoil meshes, 32-node CM-5 (paper) vs cm5 preset",
        paper,
        factory,
        ["ac", "lp", "rsn", "drsn", "rsnh"],
        reps,
        quick,
        "points",
    )
    for pts, spec in paper.items():
        stats = data[f"points={pts}"]["pattern"]
        for key, val in spec["stats"].items():
            rows.append(ReproRow(f"points={pts} mesh {key}", val, stats[key]))
    notes = [
        *_COMMON_NOTES,
        *checks,
        "Our meshes: 3-D Delaunay tetrahedra around half a NACA 0012 wing, METIS into 32 "
        "parts, COM = vertices each part needs from each other part. The paper's statistics "
        "say its meshes are 3-D (messages grow 6.6x from 2,800 to 53,961 points, as a surface "
        "does: 7.2x); ours have as many partners per rank (rows 'mesh ...') and as many RS_N "
        "phases, and messages about 0.7x the paper's: METIS gives more compact parts than "
        "the paper's genetic partitioner (its [8]). Where an ordering differs the two "
        "leaders are within a few per cent (9,428 points used once: LP 70.2 ms, DRS_N 70.7).",
    ]
    return ReproResult(
        "cm5-table6",
        "Wang, Lin & Ranka 1993, table 6 and figure 9",
        rows,
        notes,
        data,
        fig,
        {"machine": "cm5", "nodes": 32, "schedule_seeds": reps, "mesh_seed": 0},
    )


# --- beyond the paper: which schedule wins on today's networks -----------------------------

MODERN_ALGORITHMS = ["ac", "lp", "rsn", "rsnh", "drsn", "nbx", "alltoallv"]


def cm5_modern(quick: bool) -> ReproResult:
    """Winner per density and message size on a full-bisection cloud and a 3-D torus."""
    machines = {"ec2-c4.8xlarge": "full-bisection cloud", "bluewaters-xe6": "3-D torus"}
    nodes_list = [256] if quick else [256, 1024]
    ds = [4, 64] if quick else [4, 16, 64]
    units = [64, 262144] if quick else [64, 4096, 262144]
    for a in ("lp", "rsn", "rsnh"):
        make_schedule(regular(8, 2, 1, seed=0), a, seed=0)  # compile before timing
    grid: list[dict[str, Any]] = []
    for mname in machines:
        for nodes in nodes_list:
            net = network_model(preset(mname).with_nodes(nodes))
            for d in ds:
                base = regular(nodes, d, 1, seed=d)
                sched_s = {}
                for a in ("lp", "rsn", "rsnh"):
                    _, sched_s[a] = _timed_schedule(base, a, 1)
                for unit in units:
                    p = base.scaled(unit)
                    comm = {
                        a: simulate_exchange(p, a, net, seed=1).seconds for a in MODERN_ALGORITHMS
                    }
                    once = {a: comm[a] + sched_s.get(a, 0.0) for a in comm}
                    grid.append(
                        {
                            "machine": mname,
                            "nodes": nodes,
                            "d": d,
                            "unit": unit,
                            "comm_seconds": comm,
                            "schedule_seconds_here": sched_s,
                            "best_reused": min(comm, key=comm.get),
                            "best_once": min(once, key=once.get),
                        }
                    )
    rows = [
        ReproRow(
            f"{g['machine']} n={g['nodes']} d={g['d']} {g['unit']} B: best reused "
            f"{NAMES.get(g['best_reused'], g['best_reused'])}, AC / best",
            None,
            g["comm_seconds"]["ac"] / g["comm_seconds"][g["best_reused"]],
        )
        for g in grid
    ]
    fig, axes = plt.subplots(
        len(machines),
        len(nodes_list),
        figsize=(5.5 * len(nodes_list), 4.2 * len(machines)),
        squeeze=False,
    )
    for mi, mname in enumerate(machines):
        for ni, nodes in enumerate(nodes_list):
            ax = axes[mi, ni]
            cells = [g for g in grid if g["machine"] == mname and g["nodes"] == nodes]
            mat = np.zeros((len(ds), len(units)))
            for g in cells:
                i, j = ds.index(g["d"]), units.index(g["unit"])
                c = g["comm_seconds"]
                mat[i, j] = c["ac"] / c[g["best_reused"]]
                label = NAMES.get(g["best_reused"], g["best_reused"])
                if g["best_once"] != g["best_reused"]:
                    label += f"\n(once: {NAMES.get(g['best_once'], g['best_once'])})"
                ax.text(
                    j,
                    i,
                    f"{label}\n{c[g['best_reused']] * 1e3:.3g} ms",
                    ha="center",
                    va="center",
                    fontsize=7,
                )
            ax.imshow(mat, cmap="Greens", vmin=1.0, vmax=max(2.0, float(mat.max())))
            ax.set_xticks(range(len(units)), [f"{u} B" for u in units])
            ax.set_yticks(range(len(ds)), [f"d={d}" for d in ds])
            ax.set_title(f"{machines[mname]} ({mname}), {nodes} nodes", fontsize=9)
    fig.suptitle("Fastest exchange per density and message size (shade: AC time / best)")
    fig.tight_layout()
    winners = sorted({g["best_reused"] for g in grid})
    notes = [
        "Beyond the paper: d-regular patterns (set 1) on the cloud preset (flat, full "
        "bisection, 50 us, 10 Gbit/s) and the Blue Waters torus preset (1.5 us, 6 GB/s, shared "
        "links), no node contention. Winners seen: " + ", ".join(winners) + ".",
        "Without node contention a receiving NIC queues arrivals without holding up their "
        "senders, so posting everything (AC, MPICH's scattered Alltoallv) keeps every NIC "
        "busy; a phased schedule pays one "
        "latency per phase (d + log d phases, n - 1 for LP), which dominates small messages "
        "on the high-latency cloud.",
        "'once' adds the schedule's computation time on this host (RS_N at n = 1,024, d = 64: "
        "milliseconds) to the exchange, as for the paper's 'used once' comparison.",
    ]
    return ReproResult(
        "cm5-modern",
        "Beyond Wang, Lin & Ranka 1993: today's networks",
        rows,
        notes,
        {"grid": grid},
        fig,
        {
            "machines": list(machines),
            "nodes": nodes_list,
            "d": ds,
            "units": units,
            "pattern_seeds": ds,
            "schedule_seed": 1,
        },
    )


ENTRIES: tuple[ReproEntry, ...] = (
    ReproEntry(
        "cm5-table2",
        "Wang, Lin & Ranka 1993 (CM-5), table 2",
        "d = 1..31 senders to one receiver, 256 B and 4 KiB, cm5 preset",
        "< 1 s",
        "< 1 s",
        cm5_table2,
    ),
    ReproEntry(
        "cm5-table4",
        "Wang, Lin & Ranka 1993 (CM-5), table 4 / figure 7",
        "set 1 (d = 4, 16, 31; 16 B..128 KiB), AC / LP / RS_N / DRS_N simulated on the "
        "cm5 preset, 50 patterns per d",
        "~20 s",
        "~5 s",
        cm5_table4,
    ),
    ReproEntry(
        "cm5-table5",
        "Wang, Lin & Ranka 1993 (CM-5), table 5 / figure 8",
        "set 2 (sizes 1..32 x msg_unit), AC / LP / RS_N / DRS_N / RS_NH, 50 patterns per d",
        "~25 s",
        "~5 s",
        cm5_table5,
    ),
    ReproEntry(
        "cm5-table6",
        "Wang, Lin & Ranka 1993 (CM-5), table 6 / figure 9",
        "set 3 (airfoil meshes of 2,800 / 9,428 / 53,961 points, METIS into 32), five "
        "algorithms, 10 schedule seeds",
        "~15 s",
        "~10 s",
        cm5_table6,
    ),
    ReproEntry(
        "cm5-modern",
        "beyond Wang, Lin & Ranka 1993: which schedule wins today",
        "set 1 at 256 and 1,024 nodes, d = 4 / 16 / 64, 64 B / 4 KiB / 256 KiB, on the "
        "cloud (flat) and torus presets, seven algorithms",
        "~3 min",
        "~10 s",
        cm5_modern,
    ),
)
