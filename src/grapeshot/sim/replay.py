"""Predict a real run: the same workload, placement, ranks and threads on a calibrated machine.

"Real beats predicted": a prediction is only worth something if it matches what the runtime
measures where it can be checked. :func:`replay` takes a run record of ``grapeshot run`` (its
work counts per partition per step, its placement, its ranks and threads, its halo graph) and
a :class:`~grapeshot.sim.calibrate.Calibration` — fitted from *another* run, typically — and
simulates the run: one node per rank, one core per thread, a flat network with the calibrated
latency and bandwidth, the runtime's halo copies at the calibrated copy bandwidth and its
bookkeeping per task. Tasks cost what the record measured for them (its ``cost``, CPU seconds
per partition per step): a kernel's seconds per unit of work depend on the partition's size
(a 512 × 256-cell shallow-water partition spends twice as long per wet cell as a 64 × 16 one,
out of cache), so a cost fitted on one partition grid does not carry to another; what a
replay checks is the runtime's own model — overheads, waiting, balance — against the wall
time it measured (``benchmarks/bench_sim_vs_real.py``).

The runtime exchanges halos before some of its phases only (the shallow-water program: two of
three); the simulator gives every phase an exchange, so a replay simulates one phase per
exchange, each with the record's halo bytes per exchange, and spreads the per-step overheads
over them.
"""

from __future__ import annotations

from dataclasses import dataclass

import h5py
import numpy as np

from grapeshot.model.errors import InputError
from grapeshot.model.machine import Machine, Network, NodeTree
from grapeshot.model.placement import Placement
from grapeshot.model.workload import HaloGraph, Workload
from grapeshot.model.workload_file import load_workload
from grapeshot.sim.calibrate import Calibration
from grapeshot.sim.engine import simulate
from grapeshot.sim.program import SimOptions
from grapeshot.sim.result import SimResult


@dataclass(frozen=True)
class Replay:
    """A recorded run and its prediction.

    Attributes
    ----------
    measured
        The record's wall time, seconds.
    predicted
        The simulated total time, seconds.
    result
        The simulation.
    """

    measured: float
    predicted: float
    result: SimResult

    @property
    def error(self) -> float:
        """``predicted / measured − 1``."""
        return self.predicted / self.measured - 1.0


def calibrated_machine(calibration: Calibration, ranks: int, threads: int) -> Machine:
    """``ranks`` nodes of ``threads`` cores on a flat network with the calibrated figures."""
    network = Network(
        topology="flat",
        latency=calibration.latency,
        bandwidth=calibration.bandwidth,
        memcpy_bandwidth=calibration.copy_bandwidth or Network().memcpy_bandwidth,
    )
    return Machine("calibrated", ranks, NodeTree((("core", threads),)), network)


def replay(path: str, calibration: Calibration) -> Replay:
    """Simulate the run recorded in ``path`` with ``calibration``; errors name the file."""
    workload = load_workload(path)
    if workload.work is None:
        raise InputError(f"{path}: dataset 'work'", "missing", "a run record of grapeshot run")
    with h5py.File(path, "r") as f:
        if "run" not in f or "run/node_of" not in f:
            raise InputError(f"{path}: group 'run'", "missing", "a run record of grapeshot run")
        attrs = dict(f["run"].attrs)
        node_of = f["run/node_of"][()]
        moved = "run/node_of_final" in f and not np.array_equal(node_of, f["run/node_of_final"])
    if moved:
        raise InputError(
            f"{path}: dataset 'run/node_of_final'",
            "differs from run/node_of: the run migrated partitions (--migrate-at)",
            "a run record without migration (a replay simulates one static placement)",
        )
    for key in ("ranks", "threads", "wall_time", "exchanges", "reductions", "steps"):
        if key not in attrs:
            raise InputError(
                f"{path}: attribute 'run/{key}'", "missing", "a record of this grapeshot version"
            )
    ranks, threads = int(attrs["ranks"]), int(attrs["threads"])
    exchanges = max(1, int(attrs["exchanges"]))
    halo = workload.halo
    per_exchange = Workload(
        workload.domain_shape,
        workload.parts_shape,
        workload.cost,
        HaloGraph(halo.indptr, halo.indices, halo.nbytes // exchanges),
        "s",
        workload.work,
        workload.app,
        workload.scene,
    )
    machine = calibrated_machine(calibration, ranks, threads)
    # The measured costs hold the tasks' own overheads; the runtime's bookkeeping outside them
    # and its copies are the calibration's. Halo buffers cost no software time of their own:
    # they travel batched, one message per rank pair.
    _, overheads = calibration.apply(machine, phases=exchanges, measured_costs=True)
    options = SimOptions(
        phases=exchanges,
        sync="allreduce" if int(attrs["reductions"]) > 0 else "none",
        collective="binomial",
        overheads=overheads,
    )
    placement = Placement(np.asarray(node_of, dtype=np.int64), ranks, "recorded")
    result = simulate(per_exchange, placement, machine, options)
    return Replay(float(attrs["wall_time"]), float(result.total_time), result)
