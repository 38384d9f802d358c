"""``grapeshot repro birdshot-fig12/13/14`` (quick): the must-show claims of issue 9."""

from __future__ import annotations

import pytest

from grapeshot.report.repro import get_entry


@pytest.fixture(scope="module")
def results():
    return {n: get_entry(n).function(True) for n in ("birdshot-fig12", "birdshot-fig13",
                                                     "birdshot-fig14")}  # fmt: skip


def _row(result, label: str):
    return next(r for r in result.rows if r.label == label)


def test_fig12_birdshot_vs_geometric_reactive_and_speculative(results) -> None:
    r = results["birdshot-fig12"]
    assert _row(r, "dam break: Birdshot speedup over Geometric").ours >= 1.5
    assert _row(r, "sphere drop: Birdshot speedup over Geometric").ours >= 2.0
    for scene in ("dam break", "sphere drop"):
        assert abs(_row(r, f"{scene}: Reactive / Birdshot step time").ours - 1) <= 0.15
        assert _row(r, f"{scene}: Birdshot / Speculative step time (paper: at most)").ours <= 1.25
    for scene in ("two-way-dambreak", "sphere-drop"):
        d = r.data[scene]
        assert d["birdshot"]["migrations"] == 0 and d["reactive"]["migrations"] > 0
        assert d["speculative"]["migrated_bytes"] > 0
    assert r.figure is not None and len(r.notes) >= 5


def test_fig13_distribution_marks_reactive_and_best_of_k(results) -> None:
    r = results["birdshot-fig13"]
    times = r.data["times"]
    assert len(times) == 200 and max(times) > min(times)
    assert min(times) * 0.8 < r.data["reactive"] < max(times) * 1.2
    assert set(r.data["best_of_k"]) == {"1", "4", "16", "64"}
    assert r.data["best_of_k"]["1"]["removed"] == 0.0


def test_fig14_shape_and_section_5_3(results) -> None:
    r = results["birdshot-fig14"]
    after = _row(r, "Reactive / Birdshot, first third after a migration").ours
    before = _row(r, "Reactive / Birdshot, last third before the next").ours
    assert after < before  # fastest right after each migration, then slower
    sph = r.data["section_5_3"]["sph"]
    wave = r.data["section_5_3"]["wavefront"]
    assert sph["gain"] < 0.15 and wave["gain"] < 0.02
    assert len(sph["gains"]) == len(sph["migrations"]) == 1
