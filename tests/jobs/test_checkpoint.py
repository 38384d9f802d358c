"""Checkpointing jobs (``jobs simulate --checkpoint-cost/--checkpoint-seconds``): a job killed
at its walltime resumes from its last checkpoint."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from grapeshot.jobs.correct import LEAD_S, get_correction
from grapeshot.jobs.jobs_out import CSV_COLUMNS
from grapeshot.jobs.reference import reference_schedule
from grapeshot.jobs.rules import checkpoint_saved, checkpointed_wall
from grapeshot.jobs.scheduler import BACKFILL, PRED_AVE2, PRED_GIVEN, KernelState, make_jobs
from tests.cli.helpers import run_cli
from tests.jobs.helpers import SWF_DIR, both, busy_log, random_jobs

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "policy" / "ave2_simple.py"
FIELDS = ("start", "end", "wtr", "wtr0", "ncorr", "ran", "waited", "restarts")


def _run(submit, run, size, req, capacity, checkpoint, backfill="easy"):
    """Kernel and reference, killed at the request, no correction, predictions = requests."""
    submit, run, req = (np.asarray(x, dtype=np.float64) for x in (submit, run, req))
    size, user = np.asarray(size, dtype=np.int64), np.zeros(len(submit), dtype=np.int64)
    st = KernelState(submit, run, size, req, req, user, capacity)
    none = get_correction("none").increments
    if checkpoint is not None:
        st.checkpointing(*checkpoint)
    st.advance(req, none, LEAD_S, PRED_GIVEN, BACKFILL[backfill])
    ref = reference_schedule(make_jobs(submit, run, size, req, req, user), capacity, req, none,
                             LEAD_S, PRED_GIVEN, backfill, checkpoint)  # fmt: skip
    for f in FIELDS:
        kernel = st.first_start() if f == "start" else getattr(st, f)
        assert np.array_equal(kernel, ref[f]), f
    assert np.array_equal(st.killed.astype(bool), ref["killed"])
    return st


def test_the_rules_by_hand() -> None:
    # 10,000 s of work, a checkpoint every 1,000 s of work at 100 s: nine checkpoints.
    assert checkpointed_wall(10_000.0, 1000.0, 100.0) == 10_900.0
    assert checkpointed_wall(10_001.0, 1000.0, 100.0) == 11_001.0  # ten
    assert checkpointed_wall(500.0, 1000.0, 100.0) == 500.0  # none before its end
    assert checkpointed_wall(500.0, 0.0, 100.0) == 500.0  # off
    # Killed after 4,000 s: checkpoints completed at 1,100, 2,200, 3,300 s; the 4th is lost.
    assert checkpoint_saved(4000.0, 1000.0, 100.0) == 3000.0
    assert checkpoint_saved(4400.0, 1000.0, 100.0) == 4000.0  # the 4th completes at 4,400
    assert checkpoint_saved(1099.0, 1000.0, 100.0) == 0.0


def test_a_killed_job_resumes_from_its_last_checkpoint_by_hand() -> None:
    # One CPU. Job 0: 10,000 s of work, request 4,000 s, a checkpoint every 1,000 s at 100 s.
    # Run 1: 0 → 4,000 killed, 3,000 s saved (7,000 left, 7,600 s with 6 checkpoints).
    # Job 1 (500 s, submitted at 100) waited: it starts at 4,000, job 0 queues behind it.
    # Run 2: 4,500 → 8,500 killed, 3,000 saved (4,000 left, 4,300 s with 3 checkpoints).
    # Run 3: 8,500 → 12,500 killed, 3,000 saved (1,000 left, no checkpoint). Run 4: 12,500 →
    # 13,500, done. It ran 4 × 4,000 − 3,000 = 13,000 s and queued 500 s.
    st = _run([0, 100], [10_000, 500], [1, 1], [4000, 4000], 1, (1000.0, 100.0))
    assert st.first_start().tolist() == [0.0, 4000.0]
    assert st.end.tolist() == [13_500.0, 4500.0]
    assert st.ran.tolist() == [13_000.0, 500.0]
    assert st.waited.tolist() == [500.0, 3900.0]
    assert st.restarts.tolist() == [3, 0]
    assert st.killed.tolist() == [0, 0]
    # Without checkpointing job 0 is killed at 4,000 and never resumed.
    off = _run([0, 100], [10_000, 500], [1, 1], [4000, 4000], 1, None)
    assert off.end.tolist() == [4000.0, 4500.0] and off.killed.tolist() == [1, 0]
    assert off.restarts.tolist() == [0, 0]


def test_killed_before_its_first_checkpoint_stays_killed() -> None:
    # Walltime 1,000 s < one interval + its cost (1,100 s): nothing saved, a kill as before.
    st = _run([0], [5000], [1], [1000], 1, (1000.0, 100.0))
    assert st.killed.tolist() == [1] and st.restarts.tolist() == [0]
    assert st.end.tolist() == [1000.0] and st.ran.tolist() == [1000.0]


def test_the_checkpoints_cost_can_cause_the_kill() -> None:
    # 3,950 s of work fit a 4,000 s walltime, but not with three 100 s checkpoints (4,250 s):
    # killed at 4,000 with 3,000 s saved, it resumes and runs the last 950 s.
    st = _run([0], [3950], [1], [4000], 1, (1000.0, 100.0))
    assert st.restarts.tolist() == [1] and st.killed.tolist() == [0]
    assert st.end.tolist() == [4950.0] and st.ran.tolist() == [4950.0]


def test_checkpoints_that_never_complete_change_no_schedule() -> None:
    # An interval longer than any job: no checkpoint is written, none costs anything, and
    # the schedule is the one without checkpointing, kills included.
    jobs = random_jobs(3, 60, 6)
    for backfill in BACKFILL:
        on, _ = both(jobs, 6, "none", PRED_GIVEN, backfill, "request", (1e9, 50.0))
        off, _ = both(jobs, 6, "none", PRED_GIVEN, backfill, "request")
        assert on.killed.any()
        for f in ("start", "end", "wtr", "killed", "ran", "waited"):
            assert np.array_equal(getattr(on, f), getattr(off, f)), f


@pytest.mark.parametrize("backfill", list(BACKFILL))
@pytest.mark.parametrize("correction", ["none", "simple", "power", "ladder"])
def test_kernel_and_reference_agree_with_checkpointing(backfill: str, correction: str) -> None:
    restarts = 0
    for seed in range(6):
        for mode in (PRED_GIVEN, PRED_AVE2):
            kill = "request" if seed % 3 else "hard"
            jobs = random_jobs(seed, 50, 8)
            if kill == "hard":  # jobs past the hard limit (a day), so some are killed
                jobs["run"] = jobs["run"] * np.where(np.arange(50) % 5 == 0, 40.0, 1.0)
            every, cost = (300.0, 0.0) if seed % 2 else (700.0, 45.0)
            st, ref = both(jobs, 8, correction, mode, backfill, kill, (every, cost))
            for f in FIELDS:
                kernel = st.first_start() if f == "start" else getattr(st, f)
                assert np.array_equal(kernel, ref[f]), (f, seed, mode)
            assert np.array_equal(st.killed.astype(bool), ref["killed"])
            restarts += int(st.restarts.sum())
            # A job's time queued and run add up to its response, and it ran all its work
            # unless killed for good; never more processors than the machine at once.
            assert np.allclose(st.waited + st.ran, st.end - jobs["submit"])
            done = st.killed == 0
            assert (st.ran[done] >= jobs["run"][done]).all()
    assert restarts > 0  # the case is exercised


def _busy_log(tmp_path: Path) -> Path:
    """300 jobs on 16 CPUs; every 7th runs twice its request (a kill under user-estimate)."""
    return busy_log(tmp_path / "busy.swf", run=(300, 3600), gap=60)


def _recompute(capsys, log: Path, out: Path, policies: str, *extra: str) -> dict:
    """Simulate with checkpointing into a CSV and check every summary figure recomputes from
    it; the JSON document."""
    res = run_cli(capsys, "jobs", "simulate", "--swf", str(log), "--policies", policies,
                  "--checkpoint-cost", "60", "--checkpoint-seconds", "600", "--jobs-out", str(out),
                  "--json", *extra)  # fmt: skip
    assert res.code == 0, res.err
    doc = res.json()
    assert doc["checkpoint"] == {"every_s": 600.0, "cost_s": 60.0}
    with open(out, newline="") as fh:
        rows = list(csv.reader(fh))
    assert tuple(rows[0]) == CSV_COLUMNS
    table = np.array(rows[1:], dtype=object)
    names = [p for name in policies.split(",") for p in (name, name + "+ckpt")]
    assert list(dict.fromkeys(table[:, 0])) == names
    assert [s["policy"] for s in doc["policies"]] == names
    for summary in doc["policies"]:
        sel = table[table[:, 0] == summary["policy"]]
        j = {c: sel[:, k + 1].astype(np.float64) for k, c in enumerate(CSV_COLUMNS[1:])}
        m = j["in_metrics"] == 1
        wait, ran = j["wait"][m], j["ran"][m]
        assert np.allclose(wait + ran, (j["end"] - j["submit"])[m])
        bsld = np.maximum((wait + ran) / np.maximum(ran, 10.0), 1.0)
        span = j["end"].max() - j["submit"].min()
        assert summary["avg_wait_min"] == np.mean(wait) / 60.0
        assert summary["avg_bsld"] == np.mean(bsld)
        assert summary["utilization"] == np.sum(j["procs"] * j["ran"]) / (doc["cpus"] * span)
        assert summary["killed"] == int(j["killed"][m].sum())
        assert summary["restarts"] == int(j["restarts"][m].sum())
        ckpt = summary["policy"].endswith("+ckpt")
        assert summary["checkpoint"] == (doc["checkpoint"] if ckpt else None)
        if not ckpt:  # one run per job: the columns of a plain schedule
            assert np.array_equal(j["wait"], j["start"] - j["submit"])
            assert np.array_equal(j["ran"], j["end"] - j["start"])
            assert not j["restarts"].any()
    return {s["policy"]: s for s in doc["policies"]}


def test_summary_with_and_without_checkpointing_recomputes_from_the_csv(
    capsys, tmp_path: Path
) -> None:
    by = _recompute(capsys, _busy_log(tmp_path), tmp_path / "jobs.csv", "user-estimate,simple")
    plain, ckpt = by["user-estimate"], by["user-estimate+ckpt"]
    assert plain["killed"] > 0 and plain["restarts"] == 0
    assert ckpt["restarts"] > 0 and ckpt["killed"] < plain["killed"]
    assert (ckpt["avg_wait_min"], ckpt["avg_bsld"]) != (plain["avg_wait_min"], plain["avg_bsld"])


def test_the_seth_log_with_and_without_checkpointing(capsys, tmp_path: Path) -> None:
    seth = SWF_DIR / "hpc2n-seth-prefix.swf"
    if not seth.is_file():
        pytest.skip("../shared/data/swf is not present")
    by = _recompute(capsys, seth, tmp_path / "seth.csv", "user-estimate")
    plain, ckpt = by["user-estimate"], by["user-estimate+ckpt"]
    assert plain["killed"] == 317  # the Seth jobs that ran past their request (docs/jobs.md)
    assert ckpt["restarts"] > 0 and ckpt["killed"] < plain["killed"]


def test_the_human_view_shows_both_rows(capsys, tmp_path: Path) -> None:
    res = run_cli(capsys, "jobs", "simulate", "--swf", str(_busy_log(tmp_path)), "--policies",
                  "user-estimate", "--checkpoint-cost", "60",
                  "--checkpoint-seconds", "600")  # fmt: skip
    assert res.code == 0, res.err
    assert "restarts" in res.out and "POLICY+ckpt: every job checkpoints" in res.out


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--checkpoint-cost", "-5", "--checkpoint-seconds", "600"), "--checkpoint-cost: got -5.0"),
        (("--checkpoint-cost", "60", "--checkpoint-seconds", "0"), "--checkpoint-seconds: got 0.0"),
        (("--checkpoint-cost", "60", "--checkpoint-seconds", "inf"),
         "--checkpoint-seconds: got inf"),
        (("--checkpoint-cost", "nan", "--checkpoint-seconds", "60"), "--checkpoint-cost: got nan"),
        (("--checkpoint-cost", "60",), "--checkpoint-cost: given without --checkpoint-seconds"),
        (("--checkpoint-seconds", "60",), "--checkpoint-seconds: given without --checkpoint-cost"),
        (("--checkpoint-cost", "60", "--checkpoint-seconds", "600", "--policies",
          f"{EXAMPLE}:Ave2Simple"), "not modelled with the plug-in policy"),
    ],
)  # fmt: skip
def test_bad_checkpoint_options_are_one_line_errors(
    capsys, tmp_path: Path, args: tuple[str, ...], says: str
) -> None:
    out = tmp_path / "jobs.csv"
    res = run_cli(capsys, "jobs", "simulate", "--swf", str(_busy_log(tmp_path)),
                  "--jobs-out", str(out), *args)  # fmt: skip
    assert res.code == 2 and "Traceback" not in res.err
    assert says in res.error, res.err
    assert not out.exists()


def test_one_policy_with_checkpointing_is_two_schedules_not_one_swf(capsys, tmp_path) -> None:
    out = tmp_path / "one.swf"
    res = run_cli(capsys, "jobs", "simulate", "--swf", str(_busy_log(tmp_path)), "--policies",
                  "user-estimate", "--checkpoint-cost", "60", "--checkpoint-seconds", "600",
                  "--jobs-out", str(out))  # fmt: skip
    assert res.code == 2 and "an SWF log holds one schedule, and 2 were asked" in res.error
    assert not out.exists()
