"""Checks of the model against the paper and the log: eq. 2's ceiling (and the schedules
behind the simulated figures, which a wrong scheduler fails), the logged run, load
compression, the clairvoyant reference, and the behaviour of correction-only starts."""

from __future__ import annotations

import numpy as np
import pytest

from grapeshot.jobs.load import YEAR_S, compress_arrivals, offered_load, rate_factor
from grapeshot.jobs.metrics import bsld_upper_bound, logged_run, policy_metrics
from grapeshot.jobs.policies import POLICIES
from grapeshot.jobs.scheduler import S_FREE
from grapeshot.jobs.simulate import Cluster, Schedule, kernel_inputs, simulate
from grapeshot.jobs.study import run_study
from grapeshot.jobs.trace import JobTrace, make_trace
from grapeshot.model.errors import InputError
from grapeshot.report.repro_coare import paper_consistency
from tests.jobs.helpers import random_jobs


def test_bsld_ceiling_by_hand() -> None:
    # Average wait 93.38 min with τ = 10 s: at most 93.38·60/10 + 1 = 561.28.
    assert bsld_upper_bound(93.38 * 60.0) == pytest.approx(561.28)
    assert bsld_upper_bound(4.89 * 60.0) == pytest.approx(30.34)


def _schedule_faults(schedule: Schedule, t: JobTrace) -> list[str]:
    """What makes ``schedule`` one the machine could not run, or EASY would not make.

    Eq. 2's ceiling holds for *any* start times at or after submission, so alone it checks
    nothing about the scheduler. These do: no job starts before it is submitted; a job runs
    its run time, or is killed at its last walltime; the machine's CPUs are never
    oversubscribed; and the oldest waiting job never waits while it fits (EASY starts the
    head of the queue first, after every event).
    """
    faults = []
    if (schedule.start < schedule.submit).any():
        faults.append(f"job {np.argmax(schedule.start < schedule.submit)} starts before it arrives")
    ran = schedule.end - schedule.start
    should = np.minimum(schedule.run, schedule.walltime)
    if not np.allclose(ran, should, rtol=0, atol=1e-6):
        faults.append(f"job {np.argmax(~np.isclose(ran, should, rtol=0, atol=1e-6))} ran "
                      "neither its run time nor its walltime")  # fmt: skip
    if not np.array_equal(schedule.killed, schedule.run > schedule.walltime):
        faults.append("killed jobs are not those that outran their walltime")
    cpus = schedule.machine.cpus
    for now in np.unique(np.concatenate([schedule.submit, schedule.end])):
        running = (schedule.start <= now) & (now < schedule.end)
        free = cpus - int(schedule.procs[running].sum())
        if free < 0:
            faults.append(f"at {now} s {cpus - free} CPUs of {cpus} in use")
            break
        waiting = np.flatnonzero((schedule.submit <= now) & (schedule.start > now))
        if waiting.size and schedule.procs[waiting[0]] <= free:
            faults.append(f"at {now} s job {waiting[0]} waits with {free} CPUs free")
            break
    m = policy_metrics(schedule)
    if not 1.0 <= m.avg_bsld <= bsld_upper_bound(m.avg_wait_min * 60.0) + 1e-9:
        faults.append(f"average BSLD {m.avg_bsld} outside [1, eq. 2's ceiling]")
    return faults


def _random_trace(seed: int) -> JobTrace:
    jobs = random_jobs(seed, 120, 8)
    return make_trace(submit=jobs["submit"], run=jobs["run"], procs=jobs["size"],
                      req_time=jobs["req"], user=jobs["user"])  # fmt: skip


CEILING_POLICIES = ("user-estimate", "simple", "power", "easy++-simple", "clairvoyant")


@pytest.mark.parametrize("seed", range(6))
def test_simulated_bsld_is_of_a_schedule_the_machine_runs(seed: int) -> None:
    t = _random_trace(seed)
    for policy in CEILING_POLICIES:
        schedule = simulate(t, policy, Cluster(8))
        assert _schedule_faults(schedule, t) == [], policy
        assert policy_metrics(schedule).avg_bsld > 1.0  # some job waited: the check bites


def _kernel_mutant(monkeypatch: pytest.MonkeyPatch, bug: str) -> None:
    """A wrong scheduler: the real kernel, fed a distorted view of the jobs or machine."""
    real = kernel_inputs

    def distorted(trace, kill, machine, max_walltime):
        state, limit, req = real(trace, kill, machine, max_walltime)
        if bug == "oversubscribes":  # believes the machine has twice its CPUs
            state.ist[S_FREE] *= 2
        elif bug == "lazy":  # looks at each job ten minutes after it arrives
            state.submit = state.submit + 600.0  # a copy: the trace's own array stays
        elif bug == "runs-to-request":  # every job holds its CPUs until its request
            state.run = np.maximum(state.run, state.req)
        return state, limit, req

    monkeypatch.setattr("grapeshot.jobs.simulate.kernel_inputs", distorted)


@pytest.mark.parametrize("bug", ["oversubscribes", "lazy", "runs-to-request"])
def test_a_wrong_scheduler_fails_the_check_though_it_meets_the_ceiling(
    monkeypatch: pytest.MonkeyPatch, bug: str
) -> None:
    _kernel_mutant(monkeypatch, bug)
    t = _random_trace(0)
    for policy in ("user-estimate", "simple"):
        schedule = simulate(t, policy, Cluster(8))
        m = policy_metrics(schedule)
        assert 1.0 <= m.avg_bsld <= bsld_upper_bound(m.avg_wait_min * 60.0)  # the old check
        assert _schedule_faults(schedule, t), f"{bug} passed under {policy}"


def test_paper_tables_against_the_ceiling() -> None:
    cells = {(c["workload"], c["policy"]): c for c in paper_consistency()}
    assert len(cells) == 35
    # 12 cells of table 5 exceed what their table-4 wait allows under eq. 2.
    assert sum(not c["possible"] for c in cells.values()) == 12
    seth = cells[("Seth", "user-estimate")]
    assert seth["ceiling"] == pytest.approx(561.28) and not seth["possible"]
    assert not cells[("COARE", "user-estimate")]["possible"]
    assert cells[("Seth", "simple")]["possible"] and cells[("Gaia", "user-estimate")]["possible"]


def test_logged_run_by_hand() -> None:
    # 2 CPUs. Job 0 takes both from 0 to 100. Job 1 (1 CPU, 5 s) waits 10 → 100 for CPUs.
    # Job 2 (1 CPU, 20 s) is submitted at 200 and logged as waiting 100 s on an idle machine.
    m = logged_run(submit=np.array([0.0, 10.0, 200.0]), wait=np.array([0.0, 90.0, 100.0]),
                   run=np.array([100.0, 5.0, 20.0]), procs=np.array([2, 1, 1]),
                   cpus=2)  # fmt: skip
    assert m.jobs == 3
    assert m.avg_wait_min == pytest.approx(190.0 / 3 / 60.0)
    # bsld: 1, (90 + 5)/10 = 9.5, (100 + 20)/20 = 6.
    assert m.avg_bsld == pytest.approx((1.0 + 9.5 + 6.0) / 3)
    # Waiting time 90 s with no idle CPU, 100 s with both idle: share 100/190.
    assert m.idle_while_waiting == pytest.approx(100.0 / 190.0)
    # Busy 200 + 5 + 20 CPU-s over 2 CPUs × (320 − 0) s.
    assert m.utilization == pytest.approx(225.0 / 640.0)


def test_logged_run_skips_unrecorded_waits_and_warmup() -> None:
    m = logged_run(submit=np.array([0.0, 1.0, 2.0]), wait=np.array([50.0, -1.0, 0.0]),
                   run=np.array([10.0, 10.0, 10.0]), procs=np.array([1, 1, 1]), cpus=4,
                   in_metrics=np.array([False, True, True]))  # fmt: skip
    assert m.jobs == 1 and m.avg_wait_min == 0.0 and m.avg_bsld == 1.0


def test_compress_arrivals_by_hand() -> None:
    t = make_trace(submit=[100.0, 200.0, 400.0], run=[10.0, 20.0, 30.0], procs=[1, 2, 3],
                   req_time=[60.0, 60.0, 60.0])  # fmt: skip
    c = compress_arrivals(t, 2.0)
    assert c.submit.tolist() == [100.0, 150.0, 250.0]
    assert c.run.tolist() == t.run.tolist() and c.procs.tolist() == t.procs.tolist()
    assert compress_arrivals(t, 1.0) is t
    # Offered load: (10 + 40 + 90) CPU-s over 4 CPUs × the span from the first submission to
    # the last job's earliest end: 430 − 100 = 330 s, compressed 280 − 100 = 180 s.
    assert offered_load(t, 4) == pytest.approx(140.0 / (4 * 330.0))
    assert offered_load(c, 4) == pytest.approx(140.0 / (4 * 180.0))
    # 3 jobs in 300 s; the paper's rate 6 jobs per 300 s is twice as fast.
    assert rate_factor(t, 6, 300.0) == pytest.approx(2.0)
    assert rate_factor(t, 3 * YEAR_S / 300.0, YEAR_S) == pytest.approx(1.0)
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(InputError, match="--compress"):
            compress_arrivals(t, bad)


def test_study_reports_compression_and_load() -> None:
    jobs = random_jobs(3, 200, 8)
    t = make_trace(submit=jobs["submit"], run=jobs["run"], procs=jobs["size"],
                   req_time=jobs["req"], user=jobs["user"])  # fmt: skip
    base = run_study(t, [POLICIES["user-estimate"]], Cluster(8))
    dense = run_study(t, [POLICIES["user-estimate"]], Cluster(8), compress=3.0)
    assert base.compress == 1.0 and dense.compress == 3.0
    # Compression shortens the span by at most 3× (run times are kept): the load rises, by
    # at most 3×.
    assert base.offered_load < dense.offered_load <= 3 * base.offered_load
    assert dense.metrics[0].avg_wait_min >= base.metrics[0].avg_wait_min


def _three_jobs(req: list[float]):
    # 2 CPUs. Job 0: 1 CPU, 1000 s. Job 1: 2 CPUs, 100 s (the blocked head). Job 2: 1 CPU,
    # 5000 s.
    return make_trace(submit=[0.0, 1.0, 2.0], run=[1000.0, 100.0, 5000.0], procs=[1, 2, 1],
                      req_time=req, user=[1, 2, 3])  # fmt: skip


def test_clairvoyant_sees_exact_run_times() -> None:
    # Job 2 requests 50,000 s but runs 10 s. User estimate: it would end after the head's
    # shadow (1000) and there is no extra CPU, so it waits for job 1 (starts 1000, ends 1100).
    # Clairvoyant: it ends at 12 <= 1000 and is backfilled at once.
    t = make_trace(submit=[0.0, 1.0, 2.0], run=[1000.0, 100.0, 10.0], procs=[1, 2, 1],
                   req_time=[1000.0, 100.0, 50_000.0], user=[1, 2, 3])  # fmt: skip
    ue = simulate(t, "user-estimate", Cluster(2))
    cv = simulate(t, "clairvoyant", Cluster(2))
    assert ue.start.tolist() == [0.0, 1000.0, 1100.0]
    assert cv.start.tolist() == [0.0, 1000.0, 2.0]
    assert cv.prediction.tolist() == [1000.0, 100.0, 10.0]
    # A job that overran its request is killed there by both; clairvoyant predicts the request.
    t2 = make_trace(submit=[0.0], run=[500.0], procs=[1], req_time=[300.0])
    s = simulate(t2, "clairvoyant", Cluster(1))
    assert s.prediction[0] == 300.0 and s.killed[0] and s.end[0] == 300.0


def test_correction_only_start_lets_the_head_slip() -> None:
    # User estimate (requests exact): shadow 1000, job 2 (5000 s) cannot backfill; job 1 starts
    # at 1000, job 2 at 1100.
    ue = simulate(_three_jobs([1000.0, 100.0, 5000.0]), "user-estimate", Cluster(2))
    assert ue.start.tolist() == [0.0, 1000.0, 1100.0]
    # Simple, every job starting at 10 min: at 540 job 0 is corrected to 4200 s, the head's
    # shadow moves to 4200, job 2 (believed 600 s) is backfilled at 540 and really runs
    # 5000 s (corrected at 1080 and 4680): the head starts only when it ends, at 5540.
    s = simulate(_three_jobs([1000.0, 100.0, 5000.0]), "simple", Cluster(2))
    assert s.prediction.tolist() == [600.0, 100.0, 600.0]
    assert s.start.tolist() == [0.0, 5540.0, 540.0]
    assert s.corrections[2] == 2 and s.walltime[2] == 600.0 + 2 * 3600.0
    assert not s.killed.any()
    # Bounded slowdowns by hand: the head's grows from 1099/100 to 5639/100.
    m_ue, m_s = policy_metrics(ue), policy_metrics(s)
    assert m_ue.avg_bsld == pytest.approx((1.0 + 10.99 + 6098.0 / 5000.0) / 3)
    assert m_s.avg_bsld == pytest.approx((1.0 + 56.39 + 5538.0 / 5000.0) / 3)
