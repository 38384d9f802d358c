"""The TreeMatchLB repro entries (--quick): the must-shows of issue 10 in numbers."""

from __future__ import annotations

import numpy as np
import pytest

from grapeshot.report.repro_treematch import (
    ENTRIES,
    fig8_workload,
    format_t_matrix,
    paired_t_matrix,
    treematchlb_fig6,
    treematchlb_fig8,
    treematchlb_table1,
)


def test_entries_are_registered() -> None:
    assert [e.name for e in ENTRIES] == [
        "treematchlb-table1",
        "treematchlb-fig6",
        "treematchlb-fig8",
    ]


def test_table1_matches_the_paper_except_the_misprinted_row() -> None:
    r = treematchlb_table1(quick=True)
    rows = {row.label: row for row in r.rows}
    for label, row in rows.items():
        if "m=16" in label and label.endswith("q"):
            assert row.ours == pytest.approx(53.3, abs=0.1)  # the paper's m is a misprint
        elif row.paper >= 1:
            assert row.ratio == pytest.approx(1, abs=0.1)
    assert all(0 <= t["q_monte_carlo"] <= 1 for t in r.data["rows"])


@pytest.fixture(scope="module")
def fig6():
    return treematchlb_fig6(quick=True)


def test_fig6_treematch_lb_is_fastest_at_every_size(fig6) -> None:
    totals = fig6.data["total_time_s"]
    for i in range(len(fig6.data["sizes_nodes"])):
        best_other = min(totals[s][i] for s in ("none", "greedy", "refine"))
        assert totals["treematch-lb"][i] < best_other
    assert fig6.data["gain"]["none"] > 0.1


def test_fig7_matrix_says_treematch_lb_beats_the_others(fig6) -> None:
    m = fig6.data["t_test"]
    assert m["names"][0] == "treematch-lb"
    for j in range(1, len(m["names"])):
        assert m["mean"][0][j] > 0  # row (treematch-lb) faster than each column
        assert m["low"][j][0] > 0 or m["low"][0][j] > 0  # interval above 0
    assert any("<treematch-lb>" in line for line in fig6.notes)


def test_paired_t_matrix_against_scipy() -> None:
    from scipy import stats

    times = {"a": np.array([1.0, 2.0, 3.0, 4.5]), "b": np.array([2.0, 2.5, 4.0, 5.0])}
    m = paired_t_matrix(times)
    d = times["b"] - times["a"]
    assert m["mean"][0][1] == pytest.approx(d.mean())
    lo, hi = stats.t.interval(0.95, 3, loc=d.mean(), scale=stats.sem(d))
    assert (m["low"][0][1], m["high"][0][1]) == pytest.approx((lo, hi))
    assert stats.ttest_rel(times["b"], times["a"]).pvalue < 0.05
    lines = format_t_matrix(m)
    assert len(lines) == 2 and "<a>" in lines[0] and "<b>" in lines[1]


def test_fig8_starts_differ_and_treematch_lb_is_oblivious() -> None:
    r = treematchlb_fig8(quick=True)
    assert r.data["rr_vs_packed"] > 0.1
    assert r.data["treematch_spread"] == 0.0
    series = r.data["step_seconds"]
    assert np.all(
        np.asarray(series["treematch-lb from packed"])
        <= np.asarray(series["packed (logical)"]) + 1e-12
    )


def test_fig8_workload_is_balanced() -> None:
    loads, comm = fig8_workload(4)
    assert loads.shape == (32,) and np.all(loads == loads[0])
    assert comm.shape == (32, 32) and (comm.sum(axis=1) == comm.sum(axis=1)[0]).all()
