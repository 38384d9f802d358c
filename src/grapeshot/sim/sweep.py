"""The experiment driver: every strategy at every partitions-per-core, one simulated run each.

Without partitions-per-core (``ppcs=None``, the command line without ``--ppc``) the workload
runs as it comes, whatever its partition count on the machine: each static strategy gives every node
its share by cores, within one (:func:`grapeshot.place.quota.quotas`), and the run reports the
real partitions per core. With them, for each partitions-per-core ``k`` the workload is
brought to exactly ``total cores * k`` partitions by the rule of :mod:`grapeshot.sim.resize`.
Each strategy places the workload with the same seed and the simulator runs it. A static
strategy is any key of :data:`grapeshot.place.STATIC_STRATEGIES`; a dynamic one
(:data:`DYNAMIC_STRATEGIES`) starts from its initial static placement and rebalances during
the run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from grapeshot.model.errors import InputError
from grapeshot.model.machine import Machine
from grapeshot.place import STATIC_STRATEGIES, place
from grapeshot.place.dynamic import (
    DYNAMIC_STRATEGIES,
    factory_keywords,
    make_dynamic_strategy,
)
from grapeshot.place.static import is_static, parse_strategy
from grapeshot.sim.engine import simulate
from grapeshot.sim.network import network_model
from grapeshot.sim.program import SimOptions, build_program
from grapeshot.sim.resize import WorkloadSource, parts_needed
from grapeshot.sim.result import SimResult

#: ``progress(done, total, label)``: called before each run (done = runs finished so far),
#: now and then during it (done = those runs and the share of this one's tasks simulated,
#: a float) and once at the end.
Progress = Callable[[float, int, str], None]


@dataclass(frozen=True, eq=False)
class Run:
    """One run of a sweep.

    ``ppc`` is the partitions per core the workload was resized to (``--ppc``), or ``None``
    when it ran as it came; :attr:`parts_per_core` is the real ratio either way.
    """

    strategy: str
    ppc: int | None
    seed: int
    parts_shape: tuple[int, ...]
    result: SimResult

    @property
    def parts(self) -> int:
        """Partitions of the run."""
        return self.result.n_parts

    @property
    def parts_per_core(self) -> float:
        """The run's partitions over the machine's cores, e.g. 128 / 72 = 1.78."""
        return self.result.n_parts / float(self.result.cores.sum())

    @property
    def ppc_value(self) -> int | float:
        """Partitions per core as a number: ``ppc`` if resized, else the real ratio.

        An integer whenever the ratio is whole (every run before workloads could run as they
        come had one, and scripts may use it as one), a float otherwise.
        """
        if self.ppc is not None:
            return self.ppc
        cores = int(self.result.cores.sum())
        whole, rest = divmod(self.result.n_parts, cores)
        return whole if rest == 0 and whole > 0 else self.parts_per_core

    @property
    def label(self) -> str:
        """The partitions per core as the table and figure print them: ``2``, ``1.78``.

        At most four characters for any ratio from 0.005 to 9999, so the table's column stays
        as narrow as with whole numbers (the table fits 80 columns); ``--json`` has the exact
        value.
        """
        value = self.ppc_value
        if isinstance(value, int):
            return str(value)
        digits = 0 if value >= 100 else 1 if value >= 10 else 2
        return f"{value:.{digits}f}" if value >= 0.005 else f"{value:.0e}"

    def summary(self) -> dict[str, Any]:
        """The ``runs`` entry of ``grapeshot simulate --json``.

        ``ppc`` is :attr:`ppc_value` (``--ppc``'s integer, or the real ratio of a workload
        run as it came) and ``parts_per_core`` the real ratio, always a float.
        """
        res = self.result
        return {
            "strategy": self.strategy,
            "ppc": self.ppc_value,
            "parts_per_core": self.parts_per_core,
            "seed": self.seed,
            "total_time": res.total_time,
            "step_time_mean": res.step_time_mean,
            "lif_mean": res.lif_mean,
            "lif_max": res.lif_max,
            "hidden_comm_fraction": res.hidden_comm_fraction,
            "bytes_sent": res.bytes_sent_total,
            "bytes_migrated": int(res.bytes_migrated),
            "migrations": int(res.partitions_migrated),
            "migrated_bytes": int(res.bytes_migrated),
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
    """Return ``name`` if it is a known strategy (a static one with its options, such as
    ``birdshot:shuffle=numpy``: :func:`grapeshot.place.static.parse_strategy`), else raise
    listing the valid ones."""
    if name in DYNAMIC_STRATEGIES:
        return name
    if not is_static(name):
        raise InputError(
            "--strategy", f"unknown strategy {name!r}", f"one of: {', '.join(strategy_names())}"
        )
    parse_strategy(name)
    return name


def dynamic_strategy(
    name: str,
    workload: Any,
    machine: Machine,
    seed: int,
    overrides: dict[str, Any] | None = None,
    home: np.ndarray | None = None,
) -> Any:
    """The dynamic strategy ``name`` for this run, or ``None`` for a static one.

    Applies the overrides that the strategy takes (``seed`` only where it has one), and binds
    a coarse shadow run of the app to strategies that need one (Speculative).
    """
    if name not in DYNAMIC_STRATEGIES:
        return None
    accepted = factory_keywords(name)
    # Options meant for other strategies of the sweep are left out (the CLI checks that
    # each is taken by one of them).
    given = {k: v for k, v in (overrides or {}).items() if v is not None and k in accepted}
    if "seed" in accepted:
        given.setdefault("seed", seed)
    dynamic = make_dynamic_strategy(name, **given)
    if getattr(dynamic, "needs_shadow", False):
        from grapeshot.sim.shadow import coarse_shadow

        window = int(getattr(dynamic, "window", dynamic.interval))
        shadow = coarse_shadow(workload, window)
        if home is None:
            home = place(workload, machine, dynamic.initial, seed=seed).node_of
        dynamic = dynamic.with_shadow(shadow.predict, home, machine.cores())
    return dynamic


def run_one(
    source: WorkloadSource,
    machine: Machine,
    strategy: str,
    ppc: int | None,
    *,
    seed: int,
    options: SimOptions,
    timeline_steps: tuple[int, int] | None = None,
    dynamic_options: dict[str, Any] | None = None,
    initial: np.ndarray | None = None,
    progress: Callable[[float], None] | None = None,
) -> Run:
    """Place and simulate one (strategy, ppc) of an experiment.

    ``ppc=None`` runs the workload as it comes (:meth:`WorkloadSource.as_given`), any partition
    count on any machine; an integer resizes it to ``total cores * ppc`` partitions
    (:meth:`WorkloadSource.at_parts`). ``dynamic_options`` are keyword overrides of a dynamic
    strategy's factory (``interval``, ``threshold``, ``window``, ...; ``None`` values keep the
    defaults). ``initial``, a ``node_of`` for the run's workload, replaces the first placement
    of a dynamic strategy (and Speculative's homes), e.g. a geometric split other than the
    registry's. ``progress`` is called now and then with the share of the run simulated.
    """
    check_strategy(strategy)
    if ppc is None:
        workload = source.as_given()
    else:
        workload = source.at_parts(parts_needed(machine, ppc))
    dynamic = dynamic_strategy(strategy, workload, machine, seed, dynamic_options, initial)
    if dynamic is None:
        placement = place(workload, machine, strategy, seed=seed)
    else:
        placement = dataclasses.replace(
            place(workload, machine, dynamic.initial, seed=seed), strategy=strategy
        )
        if initial is not None:
            placement = dataclasses.replace(placement, node_of=np.asarray(initial, np.int32))
        start = getattr(dynamic, "start", None)
        if start is not None and workload.work is not None:
            # The state before the first step is known: a strategy may place from it.
            node_of = start(workload.work[0].astype(np.float64), placement.node_of, machine.cores())
            placement = dataclasses.replace(placement, node_of=np.asarray(node_of, np.int32))
        first = getattr(dynamic, "first", None)
        if first is not None:  # a strategy that makes its own first placement
            placement = dataclasses.replace(placement, node_of=np.asarray(first, np.int32))
    result = simulate(
        workload,
        placement,
        machine,
        options,
        dynamic=dynamic,
        timeline_steps=timeline_steps,
        program=build_program(workload, options),
        network=network_model(machine, options.hop_latency),
        progress=progress,
    )
    return Run(strategy, None if ppc is None else int(ppc), seed, workload.parts_shape, result)


def run_sweep(
    source: WorkloadSource,
    machine: Machine,
    strategies: Sequence[str],
    ppcs: Sequence[int] | None,
    *,
    seed: int = 0,
    options: SimOptions | None = None,
    progress: Progress | None = None,
    timeline: tuple[str, int | None, tuple[int, int]] | None = None,
    dynamic_options: dict[str, Any] | None = None,
) -> list[Run]:
    """Simulate every strategy at every partitions-per-core, or on the workload as it comes.

    Parameters
    ----------
    source
        The trace or synthetic SPEC (and step range).
    machine
        The machine, at the node count of the experiment.
    strategies
        Strategy names (static or dynamic).
    ppcs
        Partitions per core to try, each resizing the workload (:mod:`grapeshot.sim.resize`);
        ``None``: one run per strategy on the workload as it comes, whatever its partition
        count on ``machine``.
    seed
        Seed of every placement.
    options
        How the program runs.
    progress
        Called as ``progress(done, total, label)``.
    timeline
        ``(strategy, ppc, (a, b))``: record steps ``a .. b - 1`` of that run (``ppc`` is
        ``None`` for a workload run as it comes).

    Returns
    -------
    list of Run
        Ordered by partitions per core, then by strategy as given. A run's
        :attr:`Run.parts_per_core` is the real ratio (e.g. 128 / 72 = 1.78 as it comes).
    """
    options = options or SimOptions()
    for name in strategies:
        check_strategy(name)
    levels: list[int | None] = [None] if ppcs is None else list(ppcs)
    for k in levels:
        if k is not None:
            parts_needed(machine, k)
    jobs = [(k, name) for k in levels for name in strategies]
    runs: list[Run] = []
    for done, (k, name) in enumerate(jobs):
        within = None
        if progress is not None:
            label = name if k is None else f"{name} at {k} per core"
            progress(done, len(jobs), label)

            def within(share: float, done: int = done, label: str = label) -> None:
                progress(done + share, len(jobs), label)

        window = None
        if timeline is not None and timeline[0] == name and timeline[1] == k:
            window = timeline[2]
        runs.append(
            run_one(
                source,
                machine,
                name,
                k,
                seed=seed,
                options=options,
                timeline_steps=window,
                dynamic_options=dynamic_options,
                progress=within,
            )
        )
    if progress is not None:
        progress(len(jobs), len(jobs), "done")
    return runs
