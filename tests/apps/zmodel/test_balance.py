"""Balance of the cutoff solver's micro-partitions on simulated ranks (balance.py)."""

from __future__ import annotations

import itertools
import math

import numpy as np

from grapeshot.apps.zmodel.balance import (
    expected_max_abs_normal,
    expected_random_spread,
    granularity_study,
    placement_spreads,
    rank_load,
    rank_scan,
    spread,
    study_grids,
)
from grapeshot.apps.zmodel.cutoff import part_of, place_parts
from grapeshot.apps.zmodel.kernels import image_offsets


def _flat(mesh: int, box: float) -> np.ndarray:
    """Beatnik's free node placement of a flat surface: (mesh^2, 3)."""
    x = np.linspace(-box, box, mesh)
    gx, gy = np.meshgrid(x, x, indexing="ij")
    return np.stack((gx.ravel(), gy.ravel(), np.zeros(mesh * mesh)), axis=1)


def _rolled(mesh: int, box: float) -> np.ndarray:
    """A flat surface whose nodes within 0.4 of the centre are pulled in to 0.6 of their
    radius (a roll-up packs points into a few columns of space, ~2.8x as dense)."""
    pts = _flat(mesh, box)
    inner = np.hypot(pts[:, 0], pts[:, 1]) < 0.4
    pts[inner, :2] *= 0.6
    return pts


def test_spread_and_rank_load():
    assert spread(np.array([2.0, 2.0, 2.0])) == 0.0
    assert spread(np.array([1.0, 3.0])) == 0.5
    load = rank_load(np.array([1.0, 2.0, 3.0]), np.array([1, 0, 1]), 3)
    assert load.tolist() == [2.0, 4.0, 0.0]


def test_expected_max_abs_normal():
    assert abs(expected_max_abs_normal(1) - math.sqrt(2 / math.pi)) < 1e-6
    vals = [expected_max_abs_normal(n) for n in (16, 64, 256, 1024)]
    assert all(a < b for a, b in itertools.pairwise(vals))
    assert 2.55 < vals[1] < 2.65 and 3.0 < vals[2] < 3.1


def test_expected_random_spread_matches_birdshot_placements():
    # heavy-tailed part counts, as a roll-up makes: the prediction is the mean spread of
    # many birdshot placements to within 15 %
    rng = np.random.default_rng(3)
    counts = np.where(rng.random(4096) < 0.05, rng.integers(2, 9, 4096), 1).astype(float)
    th = expected_random_spread(counts, 64)
    assert th["parts_per_rank"] == 64
    got = [
        spread(rank_load(counts, place_parts("birdshot", (64, 64), (8, 8), seed=s), 64))
        for s in range(200)
    ]
    assert abs(np.mean(got) / th["expected_spread"] - 1) < 0.15
    # equal counts: no variance, whatever the placement
    assert expected_random_spread(np.ones(4096), 64)["expected_spread"] == 0.0


def test_study_grids_are_aligned_with_the_nodes():
    assert study_grids(160, 16) == [(16, 16), (32, 32), (80, 80), (160, 160), (320, 320)]
    assert study_grids(48, 8) == [(8, 8), (16, 16), (24, 24), (48, 48), (96, 96)]


def test_flat_surface_is_balanced_by_every_placement_at_aligned_grids():
    pts = _flat(48, 1.0)
    for d in rank_scan(pts, 1.0, 48, (4, 8), range(3)):
        sp = d["spread"]
        assert sp["beatnik"] == 0.0 and sp["greedy"] == 0.0 and sp["birdshot"]["max"] == 0.0
        assert d["theory"]["sd"] == 0.0


def test_placement_spreads_are_deterministic_for_a_seed():
    pts = _rolled(48, 1.0)
    study = granularity_study(
        pts, 1.0, (8, 8), [(48, 48)], range(4), cutoff=0.25, offsets=image_offsets(False, 2.0)
    )
    again = granularity_study(
        pts, 1.0, (8, 8), [(48, 48)], range(4), cutoff=0.25, offsets=image_offsets(False, 2.0)
    )
    assert study == again
    counts = np.bincount(part_of(pts, 1.0, (48, 48)), minlength=48 * 48).astype(float)
    other = placement_spreads(counts, (48, 48), (8, 8), range(4, 8))
    assert other["birdshot"]["seeds"] != study[0]["spread"]["birdshot"]["seeds"]


def test_rolled_surface_birdshot_and_greedy_below_beatnik():
    pts = _rolled(64, 1.0)
    (d,) = granularity_study(
        pts, 1.0, (8, 8), [(64, 64)], range(5), cutoff=0.25, offsets=image_offsets(False, 2.0)
    )
    sp = d["spread"]
    assert sp["beatnik"] > 0.4  # the centre ranks hold the packed points
    assert sp["greedy"] < 0.05
    assert sp["birdshot"]["max"] < sp["beatnik"]
    # scattered parts cost ghosts: more copies than Beatnik's blocks
    assert d["ghosts_per_point"]["birdshot"] > 2 * d["ghosts_per_point"]["beatnik"]
