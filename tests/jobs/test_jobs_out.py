"""``jobs simulate --jobs-out``: every job's schedule, from which the summary recomputes."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from grapeshot.jobs.jobs_out import CSV_COLUMNS
from grapeshot.jobs.swf import read_swf
from tests.cli.helpers import run_cli
from tests.jobs.helpers import busy_log

POLICIES = "user-estimate,simple,easy++-simple,clairvoyant"


def _log(tmp_path: Path) -> Path:
    """A busy log of 300 jobs on 16 CPUs; every 7th job outruns its request (a kill under
    the user's estimate), so predictions get corrected and some jobs are killed."""
    return busy_log(tmp_path / "busy.swf", run=(30, 900), gap=25)


def _read_csv(path: Path) -> dict[str, dict[str, np.ndarray]]:
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    assert tuple(rows[0]) == CSV_COLUMNS
    table = np.array(rows[1:], dtype=object)
    out: dict[str, dict[str, np.ndarray]] = {}
    for policy in dict.fromkeys(table[:, 0]):
        sel = table[table[:, 0] == policy]
        out[policy] = {c: sel[:, k + 1].astype(np.float64) for k, c in enumerate(CSV_COLUMNS[1:])}
    return out


def test_the_summary_recomputes_exactly_from_the_csv(capsys, tmp_path: Path) -> None:
    log, out = _log(tmp_path), tmp_path / "jobs.csv"
    res = run_cli(capsys, "jobs", "simulate", "--swf", str(log), "--policies", POLICIES,
                  "--jobs-out", str(out), "--json")  # fmt: skip
    assert res.code == 0, res.err
    doc = res.json()
    assert doc["jobs_out"] == str(out)
    jobs = _read_csv(out)
    assert list(jobs) == POLICIES.split(",")
    cpus = doc["cpus"]
    for summary in doc["policies"]:
        j = jobs[summary["policy"]]
        m = j["in_metrics"] == 1
        wait, ran = (j["start"] - j["submit"])[m], (j["end"] - j["start"])[m]
        bsld = np.maximum((wait + ran) / np.maximum(ran, 10.0), 1.0)
        span = j["end"].max() - j["submit"].min()
        assert summary["jobs"] == int(m.sum())
        assert summary["avg_wait_min"] == np.mean(wait) / 60.0
        assert summary["avg_bsld"] == np.mean(bsld)
        assert summary["utilization"] == np.sum(j["procs"] * (j["end"] - j["start"])) / (
            cpus * span
        )
        assert summary["killed"] == int(j["killed"][m].sum())
        assert summary["prediction_mae_min"] == np.mean(np.abs(j["predicted"] - j["run"])[m]) / 60
        assert summary["corrections"] == np.mean(j["corrections"][m])
        assert summary["noop_corrections"] == int(j["noop_corrections"][m].sum())
        # A correction that changed nothing fired on a job that ended within its walltime.
        assert np.all(j["noop_corrections"] <= j["corrections"])
    # gap_closed: against the user-estimate and clairvoyant rows the file also holds.
    by_name = {s["policy"]: s for s in doc["policies"]}
    ue, cv = by_name["user-estimate"]["avg_bsld"], by_name["clairvoyant"]["avg_bsld"]
    assert (doc["gap"]["user_estimate_bsld"], doc["gap"]["clairvoyant_bsld"]) == (ue, cv)
    for summary in doc["policies"]:
        closed = (ue - summary["avg_bsld"]) / (ue - cv) if ue > cv else None
        assert summary["gap_closed"] == closed
    # The file says something: kills under the user's requests, corrections under easy++.
    assert jobs["user-estimate"]["killed"].sum() > 0
    assert jobs["easy++-simple"]["corrections"].sum() > 0


def test_one_policy_as_swf_reads_back(capsys, tmp_path: Path) -> None:
    log, out, ref = _log(tmp_path), tmp_path / "sched.swf", tmp_path / "sched.csv"
    for target in (out, ref):
        res = run_cli(capsys, "jobs", "simulate", "--swf", str(log), "--policies",
                      "easy++-simple", "--jobs-out", str(target))  # fmt: skip
        assert res.code == 0, res.err
        assert "written:" in res.out and target.name in res.out
    back = read_swf(out, strict=True).trace
    j = _read_csv(ref)["easy++-simple"]
    assert np.array_equal(back.job_id, j["job_id"])
    assert np.allclose(back.wait, j["start"] - j["submit"], atol=0.005)
    assert np.allclose(back.run, j["end"] - j["start"], atol=0.005)
    assert np.allclose(back.req_time, j["walltime"], atol=0.005)
    assert np.array_equal(back.status == 0, j["killed"] == 1)
    assert "easy++-simple" in back.header["Note"]


@pytest.mark.parametrize(
    ("name", "extra", "says"),
    [
        ("x.swf", ("--policies", "simple,power"), "an SWF log holds one schedule"),
        ("x.txt", (), "expected one of .csv, .swf"),
        ("/proc/x.csv", (), "cannot create files in /proc"),
    ],
)
def test_a_bad_jobs_out_is_refused_before_any_job_runs(
    capsys, tmp_path: Path, name: str, extra: tuple[str, ...], says: str
) -> None:
    log = _log(tmp_path)
    target = name if name.startswith("/") else str(tmp_path / name)
    res = run_cli(capsys, "jobs", "simulate", "--swf", str(log), "--jobs-out", target, *extra)
    assert res.code == 2 and "Traceback" not in res.err
    assert "--jobs-out" in res.err and says in res.err, res.err
    assert not Path(target).exists()
