"""A policy study end to end: workload → cleaning → (COARE mode) → every policy → metrics."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from grapeshot.jobs.checkpoint import Checkpoint
from grapeshot.jobs.clean import Cleaned, clean
from grapeshot.jobs.coare import apply_default_walltime
from grapeshot.jobs.load import compress_arrivals, offered_load
from grapeshot.jobs.metrics import (
    LoggedRun,
    PolicyMetrics,
    gap_closed,
    logged_run,
    policy_metrics,
)
from grapeshot.jobs.plugin import PluginPolicy, simulate_plugin
from grapeshot.jobs.policies import Policy, get_policy
from grapeshot.jobs.simulate import Cluster, Schedule, simulate
from grapeshot.jobs.trace import JobTrace
from grapeshot.model.errors import InputError


@dataclass(frozen=True)
class Study:
    """The result of :func:`run_study`.

    Attributes
    ----------
    cleaned
        The cleaned workload with its step counts and warm-up mask.
    defaulted
        Requests set to the site default (COARE mode), 0 if off.
    compress
        Factor the inter-arrival times were divided by (1 = the trace as logged).
    offered_load
        Offered load of the simulated (cleaned, possibly compressed) trace on the machine.
    logged
        The schedule the log itself records (its wait times, before any compression or COARE
        mode) over the same metric jobs, or None if the log records no waits: what the real
        scheduler did, to hold the simulated user-estimate run against.
    metrics
        One entry per policy, in the order asked; with checkpointing each policy's entry is
        followed by its run with checkpointing jobs (``policy+ckpt``).
    schedules
        Every job's schedule under each policy (same order), over ``cleaned.trace``.
    gap
        ``(user-estimate, clairvoyant)`` average bounded slowdown: the cut any walltime
        prediction could win, against which each policy's ``gap_closed`` is measured (both
        simulated even when not asked for).
    """

    cleaned: Cleaned
    defaulted: int
    metrics: tuple[PolicyMetrics, ...]
    compress: float = 1.0
    offered_load: float = 0.0
    logged: LoggedRun | None = None
    schedules: tuple[Schedule, ...] = ()
    gap: tuple[float, float] = (0.0, 0.0)

    def by_policy(self) -> dict[str, PolicyMetrics]:
        """Metrics keyed by policy name."""
        return {m.policy: m for m in self.metrics}


def run_study(
    trace: JobTrace,
    policies: Sequence[Policy | PluginPolicy],
    machine: Cluster,
    *,
    backfill: str = "easy",
    default_walltime_h: float | None = None,
    default_share: float = 0.8,
    seed: int = 0,
    compress: float = 1.0,
    on_policy: Callable[[str], None] | None = None,
    source: str = "workload",
    checkpoint: Checkpoint | None = None,
) -> Study:
    """Clean ``trace`` for ``machine``, optionally apply COARE mode, simulate every policy.

    Parameters
    ----------
    trace
        Jobs as read.
    policies
        Policies to compare: built-in or plug-ins (:mod:`grapeshot.jobs.plugin`).
    machine
        CPUs (and nodes); wider jobs are dropped by cleaning.
    backfill
        Backfilling mode of the scheduler.
    default_walltime_h, default_share
        COARE mode (hours, share of jobs); None leaves requests alone.
    seed
        Seed of the COARE-mode draw and of the learners.
    compress
        Divide the cleaned trace's inter-arrival times by this factor (see
        :mod:`grapeshot.jobs.load`); 1 simulates the trace as logged.
    on_policy
        Called with each policy name before it runs (progress).
    source
        What holds the jobs, for errors (``"--swf seth.swf"``).
    checkpoint
        Also simulate each policy with checkpointing jobs (:mod:`grapeshot.jobs.checkpoint`),
        beside it as it is; built-in policies only.

    Raises
    ------
    InputError
        If ``trace`` holds no jobs, or cleaning drops every one: there is nothing to
        simulate, and metrics of no jobs would print as zeros; if ``checkpoint`` is given with
        a plug-in policy.
    """
    if checkpoint is not None:
        check_checkpointable(policies)
    if len(trace) == 0:
        raise InputError(source, "holds no jobs", "a log with at least one job")
    cleaned = clean(trace, cpus=machine.cpus)
    ct = cleaned.trace
    if len(ct) == 0:
        dropped = ", ".join(f"{s.name} {s.affected}" for s in cleaned.steps if s.affected)
        raise InputError(
            source,
            f"no job left to simulate: cleaning dropped all {len(trace)} ({dropped})",
            f"jobs with a run time and at most {machine.cpus} processors (--cpus) that ran at "
            "most 7 days, not all in one user's flurry (docs/jobs.md)",
        )
    logged = None
    if len(ct) and (ct.wait >= 0).any():
        logged = logged_run(ct.submit, ct.wait, ct.run, ct.procs, machine.cpus, cleaned.in_metrics)
    work = compress_arrivals(ct, compress)
    if compress != 1.0:
        cleaned = Cleaned(work, cleaned.steps, cleaned.in_metrics)
    defaulted = 0
    if default_walltime_h is not None:
        work, defaulted = apply_default_walltime(
            work, default_walltime_h, default_share, seed=np.random.default_rng(seed)
        )
        cleaned = Cleaned(work, cleaned.steps, cleaned.in_metrics)
    schedules = []
    for policy in policies:
        if on_policy is not None:
            on_policy(policy.name)
        schedules.append(_simulate(work, policy, machine, backfill, seed))
        if checkpoint is not None:
            assert isinstance(policy, Policy)  # check_checkpointable
            schedules.append(
                simulate(work, policy, machine, backfill=backfill, seed=seed, checkpoint=checkpoint)
            )
    named = [p for p in policies for _ in range(1 if checkpoint is None else 2)]
    results = [policy_metrics(s, cleaned.in_metrics) for s in schedules]
    # The references are the built-in policies (a plug-in may call itself anything).
    by_name = {m.policy: m for p, m in zip(named, results, strict=True) if isinstance(p, Policy)}
    bsld = []
    for ref in ("user-estimate", "clairvoyant"):
        if ref not in by_name:
            if on_policy is not None:
                on_policy(f"{ref} (reference)")
            by_name[ref] = policy_metrics(
                _simulate(work, get_policy(ref), machine, backfill, seed), cleaned.in_metrics
            )
        bsld.append(by_name[ref].avg_bsld)
    ue, cv = bsld
    results = [replace(m, gap_closed=gap_closed(ue, cv, m.avg_bsld)) for m in results]
    load = offered_load(work, machine.cpus)
    return Study(
        cleaned, defaulted, tuple(results), float(compress), load, logged, tuple(schedules),
        (ue, cv),
    )  # fmt: skip


def check_checkpointable(policies: Sequence[Policy | PluginPolicy]) -> None:
    """Refuse checkpointing with a plug-in policy, in one line: a plug-in's history would see
    a resumed job as one run, which is not modelled."""
    for policy in policies:
        if isinstance(policy, PluginPolicy):
            raise InputError(
                "--checkpoint-cost",
                f"not modelled with the plug-in policy {policy.spec}",
                "built-in policies only (docs/jobs.md)",
            )


def _simulate(
    trace: JobTrace, policy: Policy | PluginPolicy, machine: Cluster, backfill: str, seed: int
) -> Schedule:
    if isinstance(policy, PluginPolicy):
        return simulate_plugin(trace, policy, machine, backfill=backfill, seed=seed)
    return simulate(trace, policy, machine, backfill=backfill, seed=seed)
