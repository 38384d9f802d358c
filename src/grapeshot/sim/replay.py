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

A run that rebalanced inside (a dynamic strategy) is replayed with the same strategy, made
again from the record (``run/rebalances``' ``dynamic`` attribute), deciding on the record's work
counts as the runtime did, so it makes the same moves where the simulated placement is the
real one; each call costs what the calibration measured of the runtime's (the decision, the
moved state on the network, the re-plan). A ``--migrate-at`` run's one move, and the moves of
a strategy that decided on measured CPU seconds (``--loads cpu``) or made moves only when
their measured cost was paid for (``--lazy-moves``) (they differ from run to run), are
replayed as recorded.

The runtime exchanges halos before some of its phases only (the shallow-water program: two of
three); the simulator gives every phase an exchange, so a replay simulates one phase per
exchange, each with the record's halo bytes per exchange, and spreads the per-step overheads
over them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import h5py
import numpy as np

from grapeshot.model.errors import InputError
from grapeshot.model.machine import Machine, Network, NodeTree
from grapeshot.model.placement import Placement
from grapeshot.model.workload import HaloGraph, Workload
from grapeshot.model.workload_file import load_workload
from grapeshot.place.dynamic import make_dynamic_strategy
from grapeshot.sim.calibrate import Calibration
from grapeshot.sim.engine import simulate
from grapeshot.sim.program import DEFAULT_STATE_BYTES_PER_CELL, SimOptions
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


@dataclass(frozen=True)
class RecordedMoves:
    """The placements a run's rebalances chose, as a dynamic strategy: at each recorded call
    step it proposes the placement the run had after that call (a ``--migrate-at`` run, whose
    greedy proposal is no dynamic strategy)."""

    steps: tuple[int, ...]
    node_of: np.ndarray
    name: str = "recorded"
    initial: str = "recorded"

    @property
    def interval(self) -> int:
        """The first call's step (the simulator asks ``call_steps``)."""
        return self.steps[0]

    def call_steps(self, n_steps: int) -> list[int]:
        """The recorded calls' steps."""
        return list(self.steps)

    def rebalance(self, *, step: int, **_) -> np.ndarray:
        """The placement after the call at ``step``."""
        return self.node_of[self.steps.index(step)].astype(np.int64)


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
        calls = f.get("run/rebalances")
        dynamic = None
        if calls is not None and len(calls["step"]):
            text = calls.attrs.get("dynamic")
            # A strategy deciding on work counts decides again as it did; on measured CPU
            # seconds (``--loads cpu``) or measured pauses (``--lazy-moves``), its moves are
            # the record's.
            decided_again = attrs.get("loads", "work") == "work" and not attrs.get("lazy_moves")
            if text is not None and decided_again:
                params = json.loads(text)
                dynamic = make_dynamic_strategy(params.pop("name"), **params)
            else:
                steps = tuple(int(x) for x in calls["step"][()])
                dynamic = RecordedMoves(steps, calls["node_of"][()])
    if moved and dynamic is None:
        raise InputError(
            f"{path}: group 'run/rebalances'",
            "missing, and the run migrated partitions (run/node_of_final differs)",
            "a record of this grapeshot version (it records every rebalance)",
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
    per_cell = calibration.state_bytes_per_cell
    options = SimOptions(
        phases=exchanges,
        sync="allreduce" if int(attrs["reductions"]) > 0 else "none",
        collective="binomial",
        overheads=overheads,
        # The runtime's strategies decide on work counts; the state a move carries, measured.
        balance_on="work",
        state_bytes_per_cell=DEFAULT_STATE_BYTES_PER_CELL if per_cell is None else round(per_cell),
    )
    placement = Placement(np.asarray(node_of, dtype=np.int64), ranks, "recorded")
    result = simulate(per_exchange, placement, machine, options, dynamic=dynamic)
    return Replay(float(attrs["wall_time"]), float(result.total_time), result)
