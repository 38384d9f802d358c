"""The compiled scheduler: hand-computed schedules and agreement with the plain-Python reference."""

from __future__ import annotations

import numpy as np
import pytest

from grapeshot.jobs.correct import LEAD_S, get_correction, ladder
from grapeshot.jobs.scheduler import BACKFILL, PRED_AVE2, PRED_GIVEN, KernelState
from tests.jobs.helpers import both, random_jobs


def run(submit, run_, size, pred, capacity, backfill="easy", correction="none", limit=None,
        mode=PRED_GIVEN, user=None):  # fmt: skip
    n = len(submit)
    limit = np.full(n, 1e9) if limit is None else np.asarray(limit, float)
    user = np.zeros(n, dtype=np.int64) if user is None else np.asarray(user)
    req = np.minimum(np.asarray(pred, float), limit)
    st = KernelState(np.asarray(submit, float), np.asarray(run_, float), np.asarray(size),
                     limit, req, user, capacity)  # fmt: skip
    st.advance(req, get_correction(correction).increments, LEAD_S, mode, BACKFILL[backfill])
    return st


def test_easy_reservation_by_hand() -> None:
    # 4 CPUs. Job 0 (2 CPUs, ends at 100) runs; job 1 needs 4 → reserved at 100 (shadow).
    # Job 2 (2 CPUs, 50 s) ends before the shadow: backfilled at t=2.
    # Job 3 (2 CPUs, 500 s) would delay job 1 and there are no extra CPUs: waits.
    st = run([0, 1, 2, 3], [100, 10, 50, 500], [2, 4, 2, 2], [100, 10, 50, 500], 4)
    assert st.start.tolist() == [0.0, 100.0, 2.0, 110.0]
    fcfs = run([0, 1, 2, 3], [100, 10, 50, 500], [2, 4, 2, 2], [100, 10, 50, 500], 4, "fcfs")
    assert fcfs.start.tolist() == [0.0, 100.0, 110.0, 110.0]


def test_easy_extra_processors_allow_long_backfill() -> None:
    # 6 CPUs; job 0 takes 4 until 100; job 1 needs 4 → shadow 100, extra = 6 - 4 = 2.
    # Job 2 (1 CPU, 1000 s) runs past the shadow but fits in the extra CPU: starts at 2.
    # Job 3 (1 CPU, 1000 s) fits the second extra CPU; job 4 (1 CPU, long) finds none left.
    st = run([0, 1, 2, 3, 4], [100, 10, 1000, 1000, 1000], [4, 4, 1, 1, 1],
             [100, 10, 1000, 1000, 1000], 6)  # fmt: skip
    assert st.start.tolist() == [0.0, 100.0, 2.0, 3.0, 110.0]


def test_sjbf_tries_shortest_prediction_first() -> None:
    # 4 CPUs; job 0 (3 CPUs) until 100; job 1 needs 4 → shadow 100; one free CPU.
    # Candidates: job 2 (predicted 90 s) and job 3 (predicted 20 s), both at t = 3.
    # EASY (FCFS order) starts job 2; SJBF starts job 3 first. At 23 job 3 ends, but job 2
    # would end at 113 > shadow and there are no extra CPUs: it waits for job 1 (100-110).
    args = ([0, 1, 3, 3], [100, 10, 90, 20], [3, 4, 1, 1], [100, 10, 90, 20], 4)
    assert run(*args, "easy").start.tolist() == [0.0, 100.0, 3.0, 110.0]
    assert run(*args, "sjbf").start.tolist() == [0.0, 100.0, 110.0, 3.0]


def test_conservative_protects_every_reservation() -> None:
    # 4 CPUs; job 0 (4) until 100; job 1 (2) reserved 100-200; job 2 (4) reserved 200-300;
    # job 3 (2 CPUs, 100 s) fits beside job 1 at 100 without delaying job 2.
    # EASY would not protect job 2's slot: job 3 starts at 100 too, still ends by 200.
    st = run([0, 1, 2, 3], [100, 100, 100, 100], [4, 2, 4, 2], [100, 100, 100, 100], 4,
             "conservative")  # fmt: skip
    assert st.start.tolist() == [0.0, 100.0, 200.0, 100.0]
    # With job 3 200 s long, it would delay job 2: conservative puts it after job 2.
    st = run([0, 1, 2, 3], [100, 100, 100, 200], [4, 2, 4, 2], [100, 100, 100, 200], 4,
             "conservative")  # fmt: skip
    assert st.start.tolist() == [0.0, 100.0, 200.0, 300.0]


def test_simple_correction_steps_by_hand() -> None:
    # Predicted 600 s, runs 8000 s: corrections at 540, 4140 and 7740 s (each 60 s before the
    # limit) give 4200, 7800, 11400 s; not killed.
    st = run([0], [8000], [1], [600], 1, correction="simple")
    assert st.ncorr[0] == 3 and st.wtr[0] == 600 + 3 * 3600 and st.end[0] == 8000
    assert not st.killed[0]


def test_power_correction_steps_by_hand() -> None:
    # 15, 30, 60, 120 min: 600 → 1500 → 3300 → 6900 → 14100 s covers an 8000 s run.
    st = run([0], [8000], [1], [600], 1, correction="power")
    assert st.ncorr[0] == 4 and st.wtr[0] == 14100.0


def test_ladder_correction_and_kill_at_limit() -> None:
    # Ladder +60, +300, +900, +1800 s from 100 s: 160, 460, 1360, 3160; limit 2000 caps it.
    st = run([0], [5000], [1], [100], 1, correction="ladder", limit=[2000])
    assert st.wtr[0] == 2000.0 and st.killed[0] and st.end[0] == 2000.0


def test_no_correction_kills_at_request() -> None:
    st = run([0], [5000], [1], [3600], 1, limit=[3600])
    assert st.killed[0] and st.end[0] == 3600.0 and st.ncorr[0] == 0


def test_correction_lets_the_queue_move_when_it_fires() -> None:
    # Job 0 predicted 100 s but runs 1000 s on the whole machine; simple correction at 40 s.
    # Job 1 waits for the real end.
    st = run([0, 1], [1000, 10], [2, 2], [100, 10], 2, correction="simple")
    assert st.start[1] == 1000.0 and st.ncorr[0] == 1


def test_ave2_uses_last_two_completed_runtimes() -> None:
    # One user, serial machine: jobs 0 and 1 complete (100 s, 300 s); job 2 is submitted
    # after both: predicted (100 + 300) / 2 = 200 s, capped at its request 150 s.
    st = run([0, 0, 1000, 1000], [100, 300, 50, 50], [1, 1, 1, 1],
             [1000, 1000, 150, 5000], 1, mode=PRED_AVE2, correction="simple")  # fmt: skip
    assert st.wtr0.tolist() == [1000.0, 1000.0, 150.0, 200.0]


def test_figure5_ladders() -> None:
    h = 3600.0
    assert (ladder(2 * h, 8 * h, get_correction("simple")) / h).tolist() == [2, 3, 4, 5, 6, 7, 8]
    assert (ladder(2 * h, 8 * h, get_correction("power")) / h).tolist() == [
        2, 2.25, 2.75, 3.75, 5.75, 9.75]  # fmt: skip
    assert len(ladder(6 * h, 8 * h, get_correction("simple"))) - 1 == 2
    assert len(ladder(6 * h, 8 * h, get_correction("power"))) - 1 == 4


@pytest.mark.parametrize("backfill", list(BACKFILL))
@pytest.mark.parametrize("correction", ["none", "simple", "power", "ladder"])
def test_agrees_with_reference_on_random_traces(backfill: str, correction: str) -> None:
    for seed in range(6):
        for mode in (PRED_GIVEN, PRED_AVE2):
            kill = "request" if seed % 2 else "hard"
            jobs = random_jobs(seed, 50, 8)
            st, ref = both(jobs, 8, correction, mode, backfill, kill)
            assert np.array_equal(st.start, ref["start"])
            assert np.array_equal(st.end, ref["end"])
            assert np.array_equal(st.wtr, ref["wtr"])
            assert np.array_equal(st.wtr0, ref["wtr0"])
            assert np.array_equal(st.ncorr, ref["ncorr"])
            assert np.array_equal(st.killed.astype(bool), ref["killed"])
            # Invariants: nobody starts before submission, capacity never exceeded.
            assert (st.start >= jobs["submit"]).all()
            t = np.unique(st.start)
            busy = ((st.start[None, :] <= t[:, None]) & (st.end[None, :] > t[:, None])) @ jobs[
                "size"
            ]
            assert busy.max() <= 8


def test_no_function_of_the_jobs_package_takes_more_than_12_parameters() -> None:
    # Issue 39 item 2: the kernel's state travels in named records (scheduler.Jobs, Policy,
    # Sched, Done), so a new state array is one field, not a parameter of five functions.
    import ast
    from pathlib import Path

    import grapeshot.jobs

    too_many = []
    for path in sorted(Path(grapeshot.jobs.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                a = node.args
                count = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
                count += (a.vararg is not None) + (a.kwarg is not None)
                if count > 12:
                    too_many.append(f"{path.name}:{getattr(node, 'name', 'lambda')} ({count})")
    assert too_many == []


def test_assigning_a_state_array_replaces_it_in_the_record_the_kernel_reads() -> None:
    st = run([0, 1], [10, 10], [1, 1], [10, 10], 1)
    assert st.start is st.sched.start and st.run is st.jobs.run
    ten, user = np.full(2, 10.0), np.zeros(2, dtype=np.int64)
    st2 = KernelState(np.array([0.0, 1.0]), ten, np.array([1, 1]), np.full(2, 1e9), ten, user, 1)
    st2.submit = st2.submit + 5.0  # both arrive 5 s later
    st2.advance(np.full(2, 10.0), np.zeros(0), LEAD_S, PRED_GIVEN, BACKFILL["easy"])
    assert st2.jobs.submit.tolist() == [5.0, 6.0]
    assert st2.start.tolist() == [5.0, 15.0]
    assert st.start.tolist() == [0.0, 10.0]
    with pytest.raises(AttributeError):
        st.no_such_array  # noqa: B018
