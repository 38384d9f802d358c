"""The cutoff solver in one process: large cutoff = exact; placements; ghost selection."""

from __future__ import annotations

import numpy as np
import pytest

from grapeshot.apps.zmodel.cutoff import (
    beatnik_layout,
    ghost_pairs,
    part_bounds,
    part_of,
    place_parts,
)
from grapeshot.apps.zmodel.model import run_serial
from grapeshot.apps.zmodel.params import ZModelParams


@pytest.mark.parametrize("boundary", ["free", "periodic"])
def test_cutoff_larger_than_domain_equals_exact(boundary):
    kw = dict(
        mesh=17, order="high", boundary=boundary, steps=3, init="single", magnitude=0.1, modes=9.0
    )
    ze, we = run_serial(ZModelParams(solver="exact", **kw))
    zc, wc = run_serial(ZModelParams(solver="cutoff", cutoff=10.0, **kw))
    assert np.abs(ze - zc)[:, 2:-2, 2:-2].max() < 1e-12
    assert np.abs(we - wc)[:, 2:-2, 2:-2].max() < 1e-12


def test_cutoff_error_decreases_with_the_radius():
    kw = dict(mesh=17, order="high", boundary="free", steps=2)
    ze, _ = run_serial(ZModelParams(solver="exact", **kw))
    errs = [
        np.abs(run_serial(ZModelParams(solver="cutoff", cutoff=c, **kw))[0] - ze).max()
        for c in (0.2, 0.5, 1.0, 3.0)
    ]
    assert errs[0] > errs[1] > errs[2] > errs[3]


def test_beatnik_layout_blocks_parts_onto_the_rank_grid():
    lay = beatnik_layout((4, 4), (2, 2)).reshape(4, 4)
    assert lay[:2, :2].tolist() == [[0, 0], [0, 0]] and lay[3, 3] == 3 and lay[0, 3] == 1


@pytest.mark.parametrize("strategy", ["beatnik", "geometric", "birdshot", "cyclic", "sfc"])
def test_every_part_placed_evenly(strategy):
    rank_of = place_parts(strategy, (8, 8), (4, 4), seed=1)
    assert rank_of.shape == (64,) and np.bincount(rank_of, minlength=16).tolist() == [4] * 16
    assert np.array_equal(rank_of, place_parts(strategy, (8, 8), (4, 4), seed=1))


def test_greedy_places_from_loads_and_unknown_names_are_refused():
    loads = np.arange(16, dtype=float)
    rank_of = place_parts("greedy", (4, 4), (2, 2), loads=loads)
    per = np.bincount(rank_of, weights=loads, minlength=4)
    assert per.max() - per.min() <= 3
    with pytest.raises(ValueError, match="--spatial-strategy"):
        place_parts("nope", (4, 4), (2, 2))


def test_ghosts_cover_every_pair_within_the_cutoff():
    rng = np.random.default_rng(0)
    pts = rng.uniform(-1, 1, (300, 3))
    parts, dims = (4, 4), (2, 2)
    rank_of = beatnik_layout(parts, dims)
    part = part_of(pts, 1.0, parts)
    home = rank_of[part]
    offs = np.zeros((1, 3))
    bounds = part_bounds(pts, part, 16)
    gp, _, gr = ghost_pairs(pts, offs, 1.0, parts, 0.3, rank_of, home, bounds)
    have = {(int(p), int(r)) for p, r in zip(gp, gr, strict=True)}
    d = np.linalg.norm(pts[:, None, :2] - pts[None, :, :2], axis=-1)
    for t, s in zip(*np.nonzero(d < 0.3), strict=True):
        if home[t] != home[s]:
            assert (int(s), int(home[t])) in have


def test_trace_generator_is_registered_and_records_points():
    from grapeshot.apps import APPS, get_app

    assert not APPS["zmodel"].runnable
    mod = get_app("zmodel")
    wl = mod.make_trace("rollup", (4, 4), 3, cells=16)
    assert wl.parts_shape == (4, 4) and wl.units == "work" and wl.n_steps == 3
    assert np.all(wl.work.sum(axis=1) == 256)
    with pytest.raises(ValueError, match="scene"):
        mod.make_trace("nope", (4, 4), 3, cells=16)


def test_vts_writer_round_trip(tmp_path):
    import re

    from grapeshot.apps.zmodel.output import write_vts

    pts = np.random.default_rng(0).random((3, 5, 4))
    write_vts(tmp_path / "s.vts", pts, {"w": np.ones((2, 5, 4))})
    raw = (tmp_path / "s.vts").read_bytes()
    head = raw[: raw.index(b"<AppendedData")].decode()
    assert re.search(r'WholeExtent="0 4 0 3 0 0"', head) and 'Name="w"' in head
    assert raw.rstrip().endswith(b"</AppendedData></VTKFile>")
    start = raw.index(b'encoding="raw">_') + len(b'encoding="raw">_')
    n = int(np.frombuffer(raw[start : start + 8], "<u8")[0])
    got = np.frombuffer(raw[start + 8 : start + 8 + n], "<f8").reshape(4, 5, 3)
    assert np.array_equal(got, np.transpose(pts, (2, 1, 0)))


@pytest.mark.parametrize(
    ("name", "options"), [("reactive", {"threshold": 0.0}), ("treematch-lb", {"eps": 0.0})]
)
def test_dynamic_placement_rebalances_every_interval(name, options):
    from grapeshot.apps.zmodel.cutoff import DynamicPlacement

    loads = np.random.default_rng(0).integers(0, 30, 25)
    runs = []
    for _ in range(2):
        d = DynamicPlacement(name, (5, 5), (3, 1), interval=2, options=options)
        first = d.node_of.copy()
        assert np.array_equal(first, place_parts(name, (5, 5), (3, 1)))
        assert np.array_equal(d.update(loads), first)  # evaluation 1: not yet
        assert d.calls == 0
        placed = d.update(loads)  # evaluation 2: the strategy's call
        assert d.calls == 1 and d.moves > 0
        spread = [np.ptp(np.bincount(n, weights=loads, minlength=3)) for n in (first, placed)]
        assert spread[1] < spread[0]
        runs.append(placed)
    assert np.array_equal(runs[0], runs[1])  # deterministic: every rank agrees


def test_dynamic_placement_refuses_bad_inputs():
    from grapeshot.apps.zmodel.cutoff import DynamicPlacement
    from grapeshot.model.errors import InputError

    with pytest.raises(InputError, match="--spatial-interval"):
        DynamicPlacement("reactive", (4, 4), (2, 1), interval=0)
    with pytest.raises(InputError, match="--spatial-strategy"):
        DynamicPlacement("birdshot", (4, 4), (2, 1))


@pytest.mark.parametrize("cutoff", [0.15, 0.4])
def test_vectorised_cutoff_kernel_gives_the_scalar_loops_bits(cutoff):
    from grapeshot.apps.zmodel.cutoff import CELLS_PER_CUTOFF, cutoff_sum
    from grapeshot.apps.zmodel.kernels import br_cutoff, build_cells

    rng = np.random.default_rng(7)
    src = rng.uniform(-1, 1, (3000, 3)) * [1, 1, 0.2]
    stren = rng.normal(size=(3000, 3))
    keys = rng.permutation(3000)
    targets = src[:700] + rng.normal(scale=1e-3, size=(700, 3))
    ours = cutoff_sum(targets, src, stren, keys, cutoff, 1e-4)
    # the plain scalar loop over the same canonical (cell, key) order
    order = np.argsort(keys, kind="stable")
    s, w = src[order], stren[order]
    cell = cutoff / CELLS_PER_CUTOFF * (1.0 + 1e-12)
    both = np.concatenate((s, targets))
    lo = np.floor(both.min(axis=0) / cell).astype(np.int64)
    dims = np.floor(both.max(axis=0) / cell).astype(np.int64) - lo + 1
    start, perm = build_cells(s, lo, cell, dims)
    ref = np.zeros_like(ours)
    br_cutoff(targets, s, w, cutoff, 1e-4, lo, cell, CELLS_PER_CUTOFF, dims, start, perm, ref)
    assert np.array_equal(ours, ref)
    # extra sources beyond the cutoff of every target change no bit
    far = np.concatenate((src, src[:50] + np.array([5.0, 0.0, 0.0])))
    more = cutoff_sum(
        targets, far, np.concatenate((stren, stren[:50])), np.arange(3050), cutoff, 1e-4
    )
    base = cutoff_sum(targets, src, stren, np.arange(3000), cutoff, 1e-4)
    assert np.array_equal(more, base)
