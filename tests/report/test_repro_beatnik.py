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
    # quick size: 64 ranks of the same 0.25 width as the full run's 256, 36 points a rank
    series = fig67.data["spread_series"]
    assert fig67.data["balance_ranks"] == 64
    assert series["beatnik"][0] < 1e-9 and series["beatnik"][-1] > 0.3
    assert series["greedy"][-1] < fig67.data["target_spread"]
    strong = fig67.data["strong_scaling_predicted"]
    cpu, gpu = strong["speed=1"]["geometric"], strong["speed=100"]["geometric"]
    assert cpu["4"] > cpu["16"] > cpu["64"]
    # Ranks 100x faster spend their time on messages, whose volume shrinks slower than the
    # points a rank as the blocks narrow toward the cutoff: strong scaling flattens (on the
    # quick run's small surface it even turns over).
    assert gpu["4"] / gpu["64"] < 0.5 * cpu["4"] / cpu["64"]


def test_fig6_7_birdshot_below_beatnik_at_its_granularity(fig67):
    study = fig67.data["birdshot_study"]
    best = min(study, key=lambda d: d["spread"]["birdshot"]["mean"])
    assert fig67.data["birdshot_parts"] == best["parts"]
    beatnik = fig67.data["spread_series"]["beatnik"][-1]
    assert best["spread"]["birdshot"]["max"] < beatnik
    # the time series runs birdshot's seed 0 on that grid
    assert fig67.data["spread_series"]["birdshot"][-1] == best["spread"]["birdshot"]["seeds"][0]


@pytest.mark.mpi  # times the FFT on 4 ranks under mpiexec
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
    assert [d["parts_per_rank"] for d in study] == [1, 4, 9, 36, 144]
    bird = [d["spread"]["birdshot"]["mean"] for d in study]
    # finer parts first narrow the spread (they split the roll-up's dense columns) ...
    assert min(bird) < 0.7 * bird[0]
    # ... then parts finer than a node spacing (the last grid) widen it: points are the grain
    assert bird[-1] > min(bird)
    # the prediction from the part counts alone is the measured mean within 30 %
    for d in study[1:]:
        ratio = d["spread"]["birdshot"]["mean"] / d["theory"]["expected_spread"]
        assert 0.7 < ratio < 1.3, (d["parts_per_rank"], ratio)
    # greedy on the exact counts needs no fine grain; scattered parts cost ghosts
    assert study[3]["spread"]["greedy"] < 0.05
    assert study[-1]["ghosts_per_point"]["birdshot"] > 3 * study[0]["ghosts_per_point"]["beatnik"]


def test_fig6_7_rank_scan(fig67):
    scan = fig67.data["rank_scan"]
    assert [d["ranks"] for d in scan] == [16, 36, 64]
    beatnik = [d["spread"]["beatnik"] for d in scan]
    theory = [d["theory"]["expected_spread"] for d in scan]
    # smaller blocks cut the roll-up finer: Beatnik's spread grows with the ranks, and so does
    # birdshot's (fewer points a rank)
    assert beatnik[0] < beatnik[1] < beatnik[2]
    assert theory[0] < theory[1] < theory[2]
    assert all(d["spread"]["greedy"] < 0.05 for d in scan)
    assert scan[-1]["spread"]["birdshot"]["mean"] < beatnik[-1]


def test_fig6_7_reactive_strategy_narrows_the_late_spread(fig67):
    series = fig67.data["spread_series"]
    assert series["reactive"][-1] < 0.6 * series["beatnik"][-1]
