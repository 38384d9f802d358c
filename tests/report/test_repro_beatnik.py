"""Beatnik's repro entries: what each must show (quick sizes)."""

from __future__ import annotations

import pytest

from grapeshot.report.repro_beatnik import beatnik_fig6_7, beatnik_fig9, zmodel_growth


def test_zmodel_growth_within_tolerance():
    res = zmodel_growth(True)
    for label, d in res.data.items():
        assert abs(d["relative_error"]) < d["tolerance"], (label, d["relative_error"])


@pytest.fixture(scope="module")
def fig67():
    return beatnik_fig6_7(True)


def test_fig6_7_even_early_spread_late(fig67):
    early = fig67.data["points_percent_256_early"]
    late = fig67.data["points_percent_256_late"]
    assert max(early) - min(early) < 1e-9 and abs(sum(early) - 100) < 1e-9
    assert min(late) < 0.25 and max(late) > 0.55  # Beatnik: 0.2 % .. 0.65 %


def test_fig6_7_greedy_balances_the_rollup(fig67):
    # quick size: 36 points per rank, so one part's points are a large share; the full run
    # (128^2 nodes) is the one that shows greedy within 15 % (docs/zmodel.md)
    spread = fig67.data["spread_64"]
    assert spread["beatnik"][-1] > 0.3
    assert spread["greedy"][-1] < 0.5 * spread["beatnik"][-1]
    assert spread["birdshot"][-1] < spread["beatnik"][-1]
    strong = fig67.data["strong_scaling_predicted"]["geometric"]
    assert strong["4"] > strong["16"] > strong["64"]


def test_fig9_eight_configurations():
    res = beatnik_fig9(True)
    assert sorted(res.data["predicted_order"]) == list(range(8))
    assert len(res.data["predicted"]) == 8
    measured = res.data["measured_4_ranks"]
    assert measured == {} or sorted(measured) == list(range(8))
    weak = res.data["scaling"]["weak"]
    assert len(weak) >= 3 and all(v > 0 for v in weak.values())


def test_fig6_7_birdshot_parts_per_rank_study(fig67):
    study = fig67.data["birdshot_study"]
    assert [d["parts_per_rank"] for d in study] == [4, 16, 64, 256, 1024]
    bird = [d["spread"]["birdshot"]["mean"] for d in study]
    # finer parts first narrow the spread (the roll-up's columns are the grain) ...
    assert bird[2] < bird[0]
    # ... then the points are: the random-placement sigma floors near sqrt(R / N)
    floor = (64 / fig67.data["mesh"] ** 2) ** 0.5
    assert abs(study[-1]["random_sigma"] - floor) < 0.1 * floor
    # scattering parts costs ghosts: far more copies than Beatnik's block layout
    assert study[-1]["ghosts_per_point"]["birdshot"] > 3 * study[0]["ghosts_per_point"]["beatnik"]
    # the birdshot curve over time runs at the study's chosen count
    best = min(study, key=lambda d: d["spread"]["birdshot"]["mean"])
    meets = [d for d in study if d["spread"]["birdshot"]["mean"] <= 0.15]
    chosen = meets[0] if meets else best
    assert fig67.data["birdshot_parts"] == chosen["parts"]


def test_fig6_7_reactive_strategy_narrows_the_late_spread(fig67):
    spread = fig67.data["spread_64"]
    assert spread["reactive"][-1] < 0.6 * spread["beatnik"][-1]
