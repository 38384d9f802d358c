"""``grapeshot jobs``: JSON interface, bad lines, --strict, COARE mode on the Seth prefix."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import run_cli
from tests.jobs.helpers import SWF_DIR

KEYS = {"policy", "jobs", "avg_wait_min", "avg_bsld", "utilization", "killed",
        "prediction_mae_min"}  # fmt: skip


def _small_log(tmp_path: Path) -> Path:
    lines = ["; MaxProcs: 8"]
    for i in range(60):
        run = 30 + (i * 37) % 900
        lines.append(f"{i + 1} {i * 20} -1 {run} {1 + i % 8} -1 -1 {1 + i % 8} {run * 2} -1 1 "
                     f"{1 + i % 3} 1 -1 -1 1 -1 -1")  # fmt: skip
    lines.insert(5, "999 0 -1 oops 1")
    path = tmp_path / "small.swf"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_simulate_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    log = _small_log(tmp_path)
    res = run_cli(capsys, "jobs", "simulate", "--swf", str(log), "--policies",
                  "user-estimate,simple,easy++-power", "--backfill", "sjbf", "--json")  # fmt: skip
    assert res.code == 0, res.err
    doc = res.json()
    assert doc["cpus"] == 8 and doc["bad_lines"] == 1 and doc["lines"] == 61
    assert "small.swf line 6 field 4 (run)" in doc["bad_examples"][0]
    assert "line 6" in res.err  # reported on stderr too
    assert [p["policy"] for p in doc["policies"]] == ["user-estimate", "simple", "easy++-power"]
    for p in doc["policies"]:
        assert KEYS <= set(p) and p["jobs"] == 60 and p["avg_bsld"] >= 1.0
    assert doc["compress"] == 1.0 and doc["offered_load"] > 0.0
    assert doc["logged"] is None  # the log records no wait times (field 3 is -1)


def test_simulate_compress_is_reported(capsys: pytest.CaptureFixture[str],
                                       tmp_path: Path) -> None:  # fmt: skip
    log = str(_small_log(tmp_path))
    docs = []
    for factor in ("1", "2"):
        res = run_cli(capsys, "jobs", "simulate", "--swf", log, "--policies", "user-estimate",
                      "--compress", factor, "--json")  # fmt: skip
        assert res.code == 0, res.err
        docs.append(res.json())
    assert docs[1]["compress"] == 2.0
    # The span shrinks by at most 2× (the last jobs' run times are not compressed).
    assert docs[0]["offered_load"] < docs[1]["offered_load"] <= 2 * docs[0]["offered_load"]


def test_strict_refuses_with_line_and_field(capsys, tmp_path: Path) -> None:
    res = run_cli(capsys, "jobs", "simulate", "--swf", str(_small_log(tmp_path)), "--strict")
    assert res.code == 2
    assert res.err.startswith("grapeshot: error: small.swf line 6 field 4 (run): got 'oops'")
    assert "Traceback" not in res.err


def test_bad_arguments_are_one_line_errors(capsys, tmp_path: Path) -> None:
    log = str(_small_log(tmp_path))
    for args, text in (
        (["--policies", "nope"], "--policies: unknown policy 'nope'"),
        (["--backfill", "magic"], "--backfill: got 'magic'"),
        (["--nodes", "3"], "--nodes: got 3 for 8 CPUs"),
        (["--compress", "0"], "--compress: got 0.0; expected a number > 0"),
    ):
        res = run_cli(capsys, "jobs", "simulate", "--swf", log, *args)
        assert res.code == 2 and text in res.err, res.err


def test_generate_then_simulate(capsys, tmp_path: Path) -> None:
    out = tmp_path / "gen.swf"
    res = run_cli(capsys, "jobs", "generate", "--jobs", "300", "--cpus", "32", "--seed", "4",
                  "--default-walltime", "168", "--out", str(out), "--json")  # fmt: skip
    assert res.code == 0 and res.json()["jobs"] == 300
    res = run_cli(capsys, "jobs", "simulate", "--swf", str(out), "--policies",
                  "user-estimate,simple", "--nodes", "16", "--json")  # fmt: skip
    assert res.code == 0, res.err
    pol = {p["policy"]: p for p in res.json()["policies"]}
    assert pol["simple"]["killed"] == 0


def test_seth_prefix_coare_mode(capsys) -> None:
    seth = SWF_DIR / "hpc2n-seth-prefix.swf"
    if not seth.is_file():
        pytest.skip("../shared/data/swf is not present")
    res = run_cli(capsys, "jobs", "simulate", "--swf", str(seth), "--policies",
                  "user-estimate,power,simple", "--json")  # fmt: skip
    plain = {p["policy"]: p for p in res.json()["policies"]}
    res = run_cli(capsys, "jobs", "simulate", "--swf", str(seth), "--policies",
                  "user-estimate,power,simple", "--default-walltime", "72", "--json")  # fmt: skip
    doc = res.json()
    coare = {p["policy"]: p for p in doc["policies"]}
    assert doc["defaulted"] == round(0.8 * 3145)
    assert {s["step"]: s["jobs"] for s in doc["cleaning"]}["drop-unrunnable"] == 25
    # Seth's requests are often exceeded: user-estimate kills, the corrections never do.
    assert plain["user-estimate"]["killed"] > 200 and plain["simple"]["killed"] == 0
    # The 72 h default hurts user-estimate; correction-only ignores requests entirely.
    assert coare["user-estimate"]["avg_bsld"] > plain["user-estimate"]["avg_bsld"]
    # (only requests under 10 min change the capped 10-min predictions)
    assert coare["simple"]["avg_bsld"] == pytest.approx(plain["simple"]["avg_bsld"], rel=0.01)
    assert coare["simple"]["avg_bsld"] < coare["user-estimate"]["avg_bsld"]
    # The log's own schedule (Maui) is reported beside ours, the same jobs, untouched by COARE
    # mode; its jobs mostly waited while enough CPUs were idle (site policy, not capacity).
    logged = doc["logged"]
    assert logged["jobs"] == plain["user-estimate"]["jobs"]
    assert logged["avg_wait_min"] > plain["user-estimate"]["avg_wait_min"]
    assert logged["idle_while_waiting"] > 0.5


def _sacct(tmp_path: Path, rows: list[str]) -> Path:
    path = tmp_path / "excerpt.sacct"
    header = "JobID|User|Submit|Start|Elapsed|Timelimit|NCPUS|State"
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def test_a_short_excerpt_reports_the_load_of_its_own_span(capsys, tmp_path: Path) -> None:
    # Ten minutes of submissions of jobs that run for hours (issue 27: "offered load 80.62").
    # Work: 4 × 2 h × 8 CPUs + 2 × 3 h × 4 CPUs = 64 + 24 = 88 CPU-hours on 32 CPUs, over the
    # span from the first submission to the earliest end of the last job: 0 to 3 h 08 min.
    rows = [
        "1|a|2024-03-01T10:00:00|2024-03-01T10:00:00|02:00:00|04:00:00|8|COMPLETED",
        "2|a|2024-03-01T10:02:00|2024-03-01T10:02:00|02:00:00|04:00:00|8|COMPLETED",
        "3|b|2024-03-01T10:04:00|2024-03-01T10:04:00|02:00:00|04:00:00|8|COMPLETED",
        "4|b|2024-03-01T10:06:00|2024-03-01T10:06:00|02:00:00|04:00:00|8|COMPLETED",
        "5|c|2024-03-01T10:07:00|2024-03-01T10:07:00|03:00:00|04:00:00|4|COMPLETED",
        "6|c|2024-03-01T10:08:00|2024-03-01T10:08:00|03:00:00|04:00:00|4|COMPLETED",
    ]
    res = run_cli(capsys, "jobs", "simulate", "--sacct", str(_sacct(tmp_path, rows)), "--cpus",
                  "32", "--policies", "user-estimate", "--json")  # fmt: skip
    assert res.code == 0, res.err
    span = 3 * 3600 + 8 * 60
    assert res.json()["offered_load"] == pytest.approx(88 * 3600 / (32 * span))  # 0.88
    # The arrival span alone (8 minutes) gave 88 CPU-h / (32 CPUs × 8 min) = 20.6.


@pytest.mark.parametrize(
    ("name", "text", "option", "problem"),
    [
        ("empty.swf", "", "--swf", "holds no jobs (0 lines)"),
        ("comments.swf", "; MaxProcs: 8\n; just a header\n", "--swf", "holds no jobs (0 lines)"),
        ("bad.swf", "; MaxProcs: 8\n1 0 -1 oops 1\n", "--swf",
         "holds no jobs (1 line; 1 bad, skipped)"),
        ("header.sacct", "JobID|Submit|Elapsed|Timelimit|NCPUS\n", "--sacct",
         "holds no jobs (0 lines)"),
        ("wide.swf", "; MaxProcs: 8\n1 0 -1 100 16 -1 -1 16 200 -1 1 1 1 -1 -1 1 -1 -1\n"
         "2 5 -1 -1 2 -1 -1 2 200 -1 1 1 1 -1 -1 1 -1 -1\n", "--swf",
         "no job left to simulate: cleaning dropped all 2 (drop-unrunnable 1, drop-too-wide 1)"),
    ],
)  # fmt: skip
def test_a_log_with_no_job_to_simulate_is_refused(
    capsys, tmp_path: Path, name: str, text: str, option: str, problem: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    extra = ["--cpus", "8"] if option == "--sacct" else []
    res = run_cli(capsys, "jobs", "simulate", option, str(path), *extra)
    assert res.code == 2 and res.out == "", res.out
    errors = [x for x in res.err.splitlines() if x.startswith("grapeshot: error:")]
    assert errors == [f"grapeshot: error: {option} {path}: {problem}; expected " + (
        "a log with at least one job" if "holds no jobs" in problem else
        "jobs with a run time and at most 8 processors (--cpus) that ran at most 7 days, not "
        "all in one user's flurry (docs/jobs.md)"
    )], res.err  # fmt: skip
    assert "Traceback" not in res.err


def test_generate_checks_its_output_and_size_first(capsys, tmp_path: Path) -> None:
    res = run_cli(capsys, "jobs", "generate", "--jobs", "10", "--out", "/proc/g.swf")
    assert res.code == 2 and "--out /proc/g.swf: cannot create files in /proc" in res.err
    res = run_cli(capsys, "jobs", "generate", "--jobs", "10000000000000", "--out",
                  str(tmp_path / "g.swf"))  # fmt: skip
    assert res.code == 2 and "--jobs 10000000000000: needs about" in res.err
    assert list(tmp_path.iterdir()) == []
