"""The experiment driver: every strategy at every partitions-per-core, one simulated run each.

For each partitions-per-core ``k`` the workload is brought to exactly ``total cores * k``
partitions by the rule of :mod:`grapeshot.sim.resize`; each strategy places it with the same
seed and the simulator runs it. A static strategy is any key of
:data:`grapeshot.place.STATIC_STRATEGIES`; a dynamic one (:data:`DYNAMIC_STRATEGIES`) starts
from its initial static placement and rebalances during the run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from grapeshot.model.errors import InputError
from grapeshot.model.machine import Machine
from grapeshot.place import STATIC_STRATEGIES, place
from grapeshot.place.dynamic import DYNAMIC_STRATEGIES, get_dynamic_strategy
from grapeshot.sim.engine import simulate
from grapeshot.sim.network import network_model
from grapeshot.sim.program import SimOptions, build_program
from grapeshot.sim.resize import WorkloadSource, parts_needed
from grapeshot.sim.result import SimResult

#: ``progress(done, total, label)``: called before each run (done = runs finished so far)
#: and once at the end.
Progress = Callable[[int, int, str], None]


@dataclass(frozen=True, eq=False)
class Run:
    """One run of a sweep."""

    strategy: str
    ppc: int
    seed: int
    parts_shape: tuple[int, ...]
    result: SimResult

    @property
    def parts(self) -> int:
        """Partitions of the run."""
        return self.result.n_parts

    def summary(self) -> dict[str, Any]:
        """The ``runs`` entry of ``grapeshot simulate --json``."""
        res = self.result
        return {
            "strategy": self.strategy,
            "ppc": self.ppc,
            "seed": self.seed,
            "total_time": res.total_time,
            "step_time_mean": res.step_time_mean,
            "lif_mean": res.lif_mean,
            "lif_max": res.lif_max,
            "hidden_comm_fraction": res.hidden_comm_fraction,
            "bytes_sent": res.bytes_sent_total,
            "bytes_migrated": int(res.bytes_migrated),
            "parts": res.n_parts,
            "parts_shape": list(self.parts_shape),
            "steps": res.n_steps,
            "busy_fraction": res.busy_fraction,
            "events": res.n_events,
        }


def strategy_names() -> list[str]:
    """Every strategy ``--strategy`` accepts: the static ones, then the dynamic ones."""
    return [*STATIC_STRATEGIES, *DYNAMIC_STRATEGIES]


def check_strategy(name: str) -> str:
    """Return ``name`` if it is a known strategy, else raise listing the valid ones."""
    if name not in STATIC_STRATEGIES and name not in DYNAMIC_STRATEGIES:
        raise InputError(
            "--strategy", f"unknown strategy {name!r}", f"one of: {', '.join(strategy_names())}"
        )
    return name


def run_one(
    source: WorkloadSource,
    machine: Machine,
    strategy: str,
    ppc: int,
    *,
    seed: int,
    options: SimOptions,
    timeline_steps: tuple[int, int] | None = None,
) -> Run:
    """Place and simulate one (strategy, ppc) of an experiment."""
    check_strategy(strategy)
    workload = source.at_parts(parts_needed(machine, ppc))
    dynamic = get_dynamic_strategy(strategy)
    if dynamic is None:
        placement = place(workload, machine, strategy, seed=seed)
    else:
        placement = dataclasses.replace(
            place(workload, machine, dynamic.initial, seed=seed), strategy=strategy
        )
    result = simulate(
        workload,
        placement,
        machine,
        options,
        dynamic=dynamic,
        timeline_steps=timeline_steps,
        program=build_program(workload, options),
        network=network_model(machine, options.hop_latency),
    )
    return Run(strategy, int(ppc), seed, workload.parts_shape, result)


def run_sweep(
    source: WorkloadSource,
    machine: Machine,
    strategies: Sequence[str],
    ppcs: Sequence[int],
    *,
    seed: int = 0,
    options: SimOptions | None = None,
    progress: Progress | None = None,
    timeline: tuple[str, int, tuple[int, int]] | None = None,
) -> list[Run]:
    """Simulate every strategy at every partitions-per-core.

    Parameters
    ----------
    source
        The trace or synthetic SPEC (and step range).
    machine
        The machine, at the node count of the experiment.
    strategies
        Strategy names (static or dynamic).
    ppcs
        Partitions per core to try.
    seed
        Seed of every placement.
    options
        How the program runs.
    progress
        Called as ``progress(done, total, label)``.
    timeline
        ``(strategy, ppc, (a, b))``: record steps ``a .. b - 1`` of that run.

    Returns
    -------
    list of Run
        Ordered by partitions per core, then by strategy as given.
    """
    options = options or SimOptions()
    for name in strategies:
        check_strategy(name)
    for k in ppcs:
        parts_needed(machine, k)
    jobs = [(k, name) for k in ppcs for name in strategies]
    runs: list[Run] = []
    for done, (k, name) in enumerate(jobs):
        if progress is not None:
            progress(done, len(jobs), f"{name} at {k} per core")
        window = None
        if timeline is not None and timeline[0] == name and timeline[1] == k:
            window = timeline[2]
        runs.append(
            run_one(source, machine, name, k, seed=seed, options=options, timeline_steps=window)
        )
    if progress is not None:
        progress(len(jobs), len(jobs), "done")
    return runs
