"""The shallow-water app: physics against Ritter, conservation, partition independence, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from grapeshot.apps import swe
from grapeshot.apps.trace_stats import trace_stats
from grapeshot.model.errors import InputError
from grapeshot.model.fields import assemble_fields
from grapeshot.model.program import SimulationError
from grapeshot.runtime.serial import run_serial

G = swe.GRAVITY


def volume(program: swe.ShallowWater, h: np.ndarray) -> float:
    """Water volume, m³."""
    dx, dy = program.spacing
    return float(h.sum()) * dx * dy


def test_dambreak_matches_ritter() -> None:
    # Quasi-1-D channel: 400 x 4 cells of 1 cm x 25 cm, dam at x0 = 1 m, h0 = 1 m, dry bed.
    # After 280 steps (t ~ 0.204 s < x0 / c0 = 0.319 s, before the rarefaction meets the
    # wall) the front has run ~1.28 m. Measured: 1 cm front at -5.0 cells, 10 cm front at
    # +0.4 cells, L1 depth error 0.51%, largest error in the fan 2.5 mm.
    program = swe.make_program("dambreak", (2, 1), cells=(400, 4))
    run = run_serial(program, 280)
    h2 = run.fields()["h"]
    assert np.ptp(h2, axis=1).max() == 0.0  # the flow stays one-dimensional, bit for bit
    h = h2[:, 0]
    dx = program.spacing[0]
    x = (np.arange(400) + 0.5) * dx
    t = run.time
    c0 = math.sqrt(G * 1.0)
    assert 0.15 < t < 1.0 / c0
    exact = swe.ritter_depth(x, t, x0=1.0, h0=1.0)

    def front(depth: float) -> float:
        return float(x[np.flatnonzero(h > depth).max()])

    def exact_front(depth: float) -> float:
        # Ritter: h = (2 c0 - xi)^2 / (9 g) -> h = depth at xi = 2 c0 - 3 sqrt(g depth).
        return 1.0 + t * (2.0 * c0 - 3.0 * math.sqrt(G * depth))

    assert abs(front(0.1) - exact_front(0.1)) <= 1.0 * dx
    assert abs(front(0.01) - exact_front(0.01)) <= 6.0 * dx  # the thin tip lags a little
    assert np.abs(h - exact).sum() / exact.sum() < 0.01
    fan = (x > 1.0 - c0 * t + 0.1) & (x < 1.0 + 1.6 * c0 * t)
    assert np.abs(h - exact)[fan].max() < 0.005


@pytest.mark.parametrize("scene", sorted(swe.SCENES))
def test_mass_is_conserved(scene: str) -> None:
    program = swe.make_program(scene, (3, 2), cells=(48, 32))
    boxes = program.boxes()
    initial = assemble_fields(
        boxes, [program.output_fields(program.init_block(b), b) for b in boxes]
    )
    before = volume(program, initial["h"])
    run = run_serial(program, 60)
    fields = run.fields()
    assert fields["h"].min() >= 0.0
    assert volume(program, fields["h"]) == pytest.approx(before, rel=1e-13)
    assert run.work[-1].sum() > 0


def test_lake_at_rest_stays_at_rest(monkeypatch) -> None:
    # Well-balanced: a flat surface over the bowl's sloping floor, with a dry shore, must not
    # move (hydrostatic reconstruction balances the bed slope to round-off).
    bowl = swe.SCENE_SETUP["two-way-dambreak"].bed
    lake = swe.Scene(
        (40, 20), (4.0, 2.0), lambda x, y, length: np.maximum(0.0, 0.5 - bowl(x, y, length)),
        bed=bowl, manning=0.0, h_dry=1e-3,
    )  # fmt: skip
    monkeypatch.setitem(swe.SCENE_SETUP, "two-way-dambreak", lake)
    program = swe.make_program("two-way-dambreak", (2, 2))
    h0 = run_serial(program, 1).fields()["h"]
    run = run_serial(program, 50)
    f = run.fields()
    assert np.abs(f["hu"]).max() < 1e-10 and np.abs(f["hv"]).max() < 1e-10
    assert np.abs(f["h"] - h0).max() < 1e-10


@pytest.mark.parametrize("scene", sorted(swe.SCENES))
def test_bitwise_independent_of_partitions(scene: str) -> None:
    ref = run_serial(swe.make_program(scene, (1, 1), cells=(32, 32)), 16)
    assert ref.work[-1].sum() > 0
    for parts in ((8, 8), (3, 5)):
        run = run_serial(swe.make_program(scene, parts, cells=(32, 32)), 16)
        assert run.digest() == ref.digest(), parts
        assert run.time == ref.time
        assert np.array_equal(run.work.sum(axis=1), ref.work.sum(axis=1))


@pytest.mark.parametrize("first", [True, False])
def test_dry_block_takes_the_short_update_with_the_same_bits(first: bool) -> None:
    rng = np.random.default_rng(3)
    g, nx, ny, h_dry = 2, 12, 7, 1e-6
    q = np.zeros((nx + 2 * g, ny + 2 * g, 3))
    q[..., 0] = rng.uniform(-1e-12, h_dry, q.shape[:2])  # a film, some of it round-off below 0
    q[..., 1:] = rng.normal(0.0, 1e-9, (*q.shape[:2], 2))
    q0 = q.copy()
    q0[3, 4, 0] = 0.2  # the step's start may still be wet where the first stage dried
    bed = rng.uniform(0.0, 0.1, q.shape[:2])
    outs = []
    for faces in (True, False):
        fx = np.zeros((nx + 1, ny, swe.N_FACE))
        fy = np.zeros((nx, ny + 1, swe.N_FACE))
        swe.swe_fluxes(q, bed, fx, fy, g, h_dry, swe.GRAVITY)
        out, wet = np.full_like(q, np.nan), np.zeros(1, dtype=np.int64)
        bad = swe.swe_update(
            q0, q, fx, fy, out, g, 1e-3, 0.1, 0.1, h_dry, swe.GRAVITY, 0.03, 1e-9, first, wet, faces
        )
        outs.append((out, wet[0], bad))
    assert np.array_equal(outs[0][0], outs[1][0], equal_nan=True)
    assert outs[0][1:] == outs[1][1:]
    assert swe._all_dry(q, h_dry) and not swe._all_dry(q0, h_dry)


def test_cost_lives_where_the_water_is() -> None:
    run = run_serial(swe.make_program("dambreak", (4, 1), cells=(64, 8)), 5)
    # The column fills the first quarter; after 5 steps the far half is still dry.
    assert run.work[0, 0] == 16 * 8 and run.work[-1, 2:].sum() == 0
    w = run.workload("work")
    assert w.units == "work" and np.array_equal(w.cost, run.work)


@pytest.mark.parametrize(
    ("kwargs", "where"),
    [
        ({"scene": "tsunami"}, "--scene"),
        ({"parts": (2, 2, 2)}, "--parts"),
        ({"parts": (0, 2)}, "--parts"),
        ({"parts": (40, 1)}, "--parts"),  # 64 cells in 40 partitions: thinner than the ghosts
        ({"cells": (2, 64)}, "--cells"),
        ({"cells": (-8, 8)}, "--cells"),
        ({"cells": (8, 8, 8)}, "--cells"),
        ({"cfl": 0.0}, "cfl"),
        ({"cfl": float("nan")}, "cfl"),
        ({"cfl": "fast"}, "cfl"),
        ({"h_dry": -1e-3}, "h_dry"),
        ({"h_dry": 0.5}, "h_dry"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_parameters_are_input_errors(kwargs: dict, where: str) -> None:
    args = {"scene": "dambreak", "parts": (2, 2), "cells": (64, 32), **kwargs}
    with pytest.raises(InputError) as info:
        swe.make_program(args.pop("scene"), args.pop("parts"), **args)
    assert str(info.value).startswith(where)


def test_unstable_step_stops_naming_step_and_partition() -> None:
    program = swe.make_program("dambreak", (2, 2), cells=(32, 16), cfl=5.0)
    with pytest.raises(SimulationError) as info:
        run_serial(program, 10)
    err = info.value
    assert err.step == 0 and err.phase in ("stage1", "stage2")
    assert f"partition {err.part}" in str(err) and "CFL 5" in str(err)


def test_two_way_dambreak_load_moves() -> None:
    # The sheets start in opposite corners and end in the bottom of the bowl: the busiest 10%
    # of partitions early are not the busiest late. Measured: overlap 0.25, 17% idle.
    run = run_serial(swe.make_program("two-way-dambreak", (6, 6), cells=(64, 32)), 160)
    stats = trace_stats(run.workload("work"))
    assert stats.overlap <= 0.5
    assert stats.idle_fraction > 0.1
    assert stats.top_share > 0.1  # more than an even share
