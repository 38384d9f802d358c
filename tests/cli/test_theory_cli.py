"""`grapeshot lif`, `advise` and `theorem1` through the real entry point."""

from __future__ import annotations

import json

import pytest

from grapeshot.cli.main import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run the command line in-process; return (exit code, stdout, stderr)."""
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code: int, out: str, err: str, option: str) -> None:
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith(f"grapeshot: error: {option}:")
    assert "Traceback" not in err


# --------------------------------------------------------------------------------------------
# lif


def test_lif_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        ["lif", "--nodes", "10000", "--parts-per-node", "16", "--busy", "0.05", "--json"], capsys
    )
    assert code == 0
    doc = json.loads(out)
    assert {"nodes", "parts_per_node", "busy", "model", "mean_exact", "mean_eq2", "quantiles"} <= (
        doc.keys()
    )
    assert doc["method"] == "exact" and doc["stderr"] == 0.0
    assert set(doc["quantiles"]) == {"0.5", "0.9", "0.99"}
    assert doc["mean_exact"] == pytest.approx(6.0203, abs=1e-4)
    assert doc["mean_eq2"] == pytest.approx(4.6770, abs=1e-4)
    assert (doc["nodes"], doc["parts_per_node"], doc["model"]) == (10000, 16, "binomial")


def test_lif_fixed_count_json(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["lif", "--nodes", "32", "--parts-per-node", "64", "--busy", "0.6"]
    code, out, _ = run([*argv, "--model", "fixed-count", "--json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["model"] == "fixed-count" and doc["method"] == "exact"
    q = doc["quantiles"]
    assert q["0.5"] <= q["0.9"] <= q["0.99"]


def test_lif_human_view_says_which_way_eq2_is_off(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        ["lif", "--nodes", "10000", "--parts-per-node", "16", "--busy", "0.05"], capsys
    )
    assert code == 0
    assert "exact" in out and "eq. 2" in out and "99th percentile" in out
    assert "underestimates" in out and "NOT on the safe side" in out
    code, out, _ = run(
        ["lif", "--nodes", "1024", "--parts-per-node", "256", "--busy", "0.5"], capsys
    )
    assert code == 0 and "overestimates" in out


def test_lif_help_teaches(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["lif", "--help"], capsys)
    assert code == 0
    flat = " ".join(out.split())
    for phrase in ("most loaded node", "asymptotic", "UNDERESTIMATES", "--parts-per-node"):
        assert phrase in flat


@pytest.mark.parametrize(
    ("extra", "option"),
    [
        (["--nodes", "0", "--parts-per-node", "8", "--busy", "0.5"], "--nodes"),
        (["--nodes", "-3", "--parts-per-node", "8", "--busy", "0.5"], "--nodes"),
        (["--nodes", "8", "--parts-per-node", "0", "--busy", "0.5"], "--parts-per-node"),
        (["--nodes", "8", "--parts-per-node", "8", "--busy", "0"], "--busy"),
        (["--nodes", "8", "--parts-per-node", "8", "--busy", "1.5"], "--busy"),
        (["--nodes", "8", "--parts-per-node", "8", "--busy", "-0.2"], "--busy"),
        (["--nodes", "8", "--parts-per-node", "8", "--busy", "0.5", "--model", "x"], "--model"),
        (["--nodes", "8", "--parts-per-node", "8", "--busy", "0.5", "--trials", "1"], "--trials"),
    ],
)
def test_lif_bad_input_is_one_line_and_exit_2(
    extra: list[str], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_one_line_error(*run(["lif", *extra, "--json"], capsys), option)


# --------------------------------------------------------------------------------------------
# advise


def test_advise_json(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["advise", "--nodes", "10000", "--busy", "0.5", "--target-lif", "0.05"]
    code, out, _ = run([*argv, "--cores-per-node", "36", "--json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert set(doc) == {"parts_per_node", "parts_per_core", "mean_exact", "parts_per_node_eq2"}
    assert doc["parts_per_node"] == 5932 and doc["parts_per_core"] == 165
    assert doc["mean_exact"] <= 0.05 and doc["parts_per_node_eq2"] == 7369
    code, out, _ = run([*argv, "--json"], capsys)
    assert json.loads(out)["parts_per_core"] is None


def test_advise_human_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["advise", "--nodes", "64", "--busy", "0.3", "--target-lif", "0.25"], capsys)
    assert code == 0 and "partitions per node" in out and "eq. 2" in out
    code, out, _ = run(["advise", "--help"], capsys)
    flat = " ".join(out.split())
    assert code == 0 and "--target-lif" in flat and "EXACT" in flat


@pytest.mark.parametrize(
    ("extra", "option"),
    [
        (["--nodes", "0", "--busy", "0.5", "--target-lif", "0.1"], "--nodes"),
        (["--nodes", "8", "--busy", "2", "--target-lif", "0.1"], "--busy"),
        (["--nodes", "8", "--busy", "0.5", "--target-lif", "0"], "--target-lif"),
        (["--nodes", "8", "--busy", "0.5", "--target-lif", "0.1", "--cores-per-node", "0"],
         "--cores-per-node"),
    ],
)  # fmt: skip
def test_advise_bad_input(
    extra: list[str], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_one_line_error(*run(["advise", *extra], capsys), option)


# --------------------------------------------------------------------------------------------
# theorem1


def test_theorem1_json_and_percent_view(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["theorem1", "--chares-per-node", "32", "--nodes", "32", "--alpha", "0.1"]
    argv += ["--a", "75", "--b", "125"]
    code, out, _ = run([*argv, "--json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert set(doc) == {"p", "q"}
    assert round(100 * doc["q"], 1) == 94.8 and round(100 * doc["p"], 1) == 0.6
    code, out, _ = run(argv, capsys)
    assert code == 0 and "94.7995%" in out and "0.5584%" in out


def test_theorem1_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["theorem1", "--help"], capsys)
    flat = " ".join(out.split())
    assert code == 0 and "uniform" in flat and "m = 32" in flat


@pytest.mark.parametrize(
    ("values", "option"),
    [
        (["0", "16", "0.1", "75", "125"], "--chares-per-node"),
        (["32", "0", "0.1", "75", "125"], "--nodes"),
        (["32", "16", "-1", "75", "125"], "--alpha"),
        (["32", "16", "0.1", "-5", "125"], "--a"),
        (["32", "16", "0.1", "125", "75"], "--b"),
    ],
)
def test_theorem1_bad_input(
    values: list[str], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    names = ["--chares-per-node", "--nodes", "--alpha", "--a", "--b"]
    argv = ["theorem1"] + [x for pair in zip(names, values, strict=True) for x in pair]
    assert_one_line_error(*run(argv, capsys), option)


# --------------------------------------------------------------------------------------------
# Budgets: every theory command answers, or refuses in one line, within its stated budget

HUGE = "4611686018427387904"  # 2^62


@pytest.mark.parametrize(
    ("argv", "method"),
    [
        (["lif", "--nodes", "2", "--parts-per-node", "3", "--busy", "0.0001"], "exact"),
        (["lif", "--nodes", "4", "--parts-per-node", HUGE, "--busy", "0.5"], "asymptotic"),
        (["lif", "--nodes", "10000", "--parts-per-node", "100000", "--busy", "0.01",
          "--model", "fixed-count"], "asymptotic"),
    ],
)  # fmt: skip
def test_walkthrough_lif_cases_answer(
    argv: list[str], method: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run([*argv, "--json"], capsys)
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert doc["method"] == method
    assert all(v >= 0.0 for v in doc["quantiles"].values())  # never the −1 of an idle node
    assert doc["mean_exact"] > 0.0
    # The human view says what the approximation is.
    code, out, _ = run(argv, capsys)
    assert code == 0 and ("Asymptotic:" in out) == (method == "asymptotic")


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["advise", "--nodes", "24", "--busy", "0.15", "--target-lif", "0.1",
          "--cores-per-node", "32", "--model", "fixed-count"], "--model"),
        (["lif", "--nodes", "2", "--parts-per-node", HUGE, "--busy", "0.5",
          "--model", "fixed-count"], "--parts-per-node"),
        (["lif", "--nodes", "1" + "0" * 20, "--parts-per-node", "4", "--busy", "0.5"], "--nodes"),
        (["advise", "--nodes", "8", "--busy", "0.5", "--target-lif", "0.1",
          "--cores-per-node", "1" + "0" * 20], "--cores-per-node"),
        (["theorem1", "--chares-per-node", "1" + "0" * 20, "--nodes", "4", "--alpha", "0.1",
          "--a", "1", "--b", "2"], "--chares-per-node"),
    ],
)  # fmt: skip
def test_over_budget_theory_is_refused_in_one_line(
    argv: list[str], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_one_line_error(*run(argv, capsys), option)


def test_advise_says_when_it_bisected(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["advise", "--nodes", "10000", "--busy", "0.5", "--target-lif", "0.01"]
    code, out, _ = run([*argv, "--json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["search"] == "bisection" and doc["parts_per_node"] == 148_348
    code, out, _ = run(argv, capsys)
    assert code == 0 and "Found by bisection" in out


@pytest.mark.parametrize("command", ["lif", "advise", "theorem1"])
def test_help_states_the_budget(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([command, "--help"], capsys)
    assert code == 0 and "Budget:" in " ".join(out.split())
