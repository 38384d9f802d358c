"""``grapeshot jobs``: JSON interface, bad lines, --strict, COARE mode on the Seth prefix."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import run_cli

SWF_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "swf"
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
    assert docs[1]["offered_load"] == pytest.approx(2 * docs[0]["offered_load"])


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
