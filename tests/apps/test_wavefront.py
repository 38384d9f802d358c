"""The wavefront app: front speed, partition independence, the band, errors, moving load."""

from __future__ import annotations

import numpy as np
import pytest

from grapeshot.apps import wavefront as wf
from grapeshot.apps.trace_stats import trace_stats
from grapeshot.model.errors import InputError
from grapeshot.model.program import SimulationError
from grapeshot.runtime.serial import run_serial


def arrival_along(tt: np.ndarray, direction: tuple[int, ...]) -> np.ndarray:
    """Arrival times on the cells ``k * direction`` from the corner cell."""
    n = min(tt.shape)
    k = np.arange(n)
    return tt[tuple(k * d for d in direction)]


@pytest.mark.parametrize(("ndim", "n", "steps"), [(2, 64, 200), (3, 24, 90)])
def test_front_moves_at_the_set_speed_within_one_cell(ndim: int, n: int, steps: int) -> None:
    # One source in the corner, speed 2 m/s: the front's radius, read along an axis and along
    # the main diagonal, must grow by F * (t2 - t1) within one cell between t1 and t2.
    speed = 2.0
    run = run_serial(wf.make_program("corner", (2,) * ndim, cells=n, speed=speed), steps)
    tt = run.fields()["T"]
    h = 1.0 / n
    assert np.isfinite(tt).all()  # swept the whole domain
    axis = (1,) + (0,) * (ndim - 1)
    diag = (1,) * ndim
    for direction in (axis, diag):
        line = arrival_along(tt, direction)
        # Distances of the cell centres from the source at the origin, along the line.
        r = np.sqrt(sum(((np.arange(len(line)) * d + 0.5) * h) ** 2 for d in direction))
        reach = r[-1] / speed
        t1, t2 = 0.2 * reach, 0.9 * reach
        r1, r2 = (float(np.interp(t, line, r)) for t in (t1, t2))
        assert abs((r2 - r1) - speed * (t2 - t1)) < h, (direction, r2 - r1, speed * (t2 - t1))
        # Absolute position: exact along an axis to a tenth of a cell; first-order Godunov
        # lags by O(h log r) along the diagonal (measured 1.2 cells at 90 cells in 2-D).
        tol = 0.2 * h if direction == axis else 2.0 * h
        assert abs(r2 - speed * t2) < tol


@pytest.mark.parametrize("scene", sorted(wf.SCENES))
def test_bitwise_independent_of_partitions_2d(scene: str) -> None:
    ref = run_serial(wf.make_program(scene, (1, 1), cells=48, spacing=12), 40)
    assert ref.work.sum() > 0
    for parts in ((8, 8), (3, 5)):
        run = run_serial(wf.make_program(scene, parts, cells=48, spacing=12), 40)
        assert run.digest() == ref.digest(), parts
        assert run.time == ref.time
        assert np.array_equal(run.work.sum(axis=1), ref.work.sum(axis=1))


def test_bitwise_independent_of_partitions_3d() -> None:
    ref = run_serial(wf.make_program("diagonal", (1, 1, 1), cells=16, spacing=6), 20)
    for parts in ((2, 2, 2), (3, 1, 2)):
        run = run_serial(wf.make_program("diagonal", parts, cells=16, spacing=6), 20)
        assert run.digest() == ref.digest(), parts


def test_work_is_the_band_and_ends_when_every_cell_is_reached() -> None:
    program = wf.make_program("diagonal", (4, 4), cells=48, spacing=12)
    run = run_serial(program, 120)
    f = run.fields()
    assert np.isfinite(f["T"]).all() and (f["state"] == wf.REACHED).all()
    total = run.work.sum(axis=1)
    assert total[0] > 0 and total[-1] == 0
    # The band is narrow: at most band + 2 zones deep along the two fronts (each at most the
    # diagonal's 48 sqrt(2) zones long); the rest of the domain costs nothing.
    assert total.max() <= 2 * (wf.DEFAULT_BAND + 2) * 48 * np.sqrt(2)
    # Lassen's sources: on x + y = 1, every 12 zones.
    assert np.allclose(program.sources.sum(axis=1), 1.0)
    assert np.allclose(np.diff(program.sources[:, 0]), 12 / 48)


def test_dt_is_the_global_minimum_over_the_band() -> None:
    # Layered: the front is half as fast where y > 0.5. While some band is in the fast layer
    # the step is CFL h / 1; once the front has left it, CFL h / 0.5.
    program = wf.make_program("layered", (2, 2), cells=32, spacing=8)
    h = 1.0 / 32
    ts = []
    blocks, t = None, 0.0
    for s in range(200):
        run = run_serial(program, 1, blocks=blocks, start_step=s, start_time=t)
        ts.append(run.time - t)
        blocks, t = run.blocks, run.time
    dts = np.array(ts)
    assert np.isclose(dts[0], 0.5 * h)
    assert np.isclose(dts.max(), 0.5 * h / 0.5)
    assert set(np.round(dts / h, 9)) <= {0.5, 1.0}


def test_trace_shows_the_load_moving() -> None:
    # Sources on the diagonal: early work is along it, late work in the two far corners.
    # Measured: overlap 0, 70% of the partitions idle in a step.
    run = run_serial(wf.make_program("diagonal", (8, 8), cells=64, spacing=20), 90)
    stats = trace_stats(run.workload("work"))
    assert stats.overlap <= 0.2
    assert stats.idle_fraction > 0.5
    assert stats.idle_all_steps == 0.0


@pytest.mark.parametrize(
    ("kwargs", "where"),
    [
        ({"scene": "tsunami"}, "--scene"),
        ({"parts": (2,)}, "--parts"),
        ({"parts": (2, 2, 2, 2)}, "--parts"),
        ({"parts": (0, 2)}, "--parts"),
        ({"parts": (40, 1)}, "--parts"),
        ({"cells": (32, 32, 32)}, "--cells"),
        ({"cells": (2, 32)}, "--cells"),
        ({"cfl": -0.5}, "cfl"),
        ({"band": 0.5}, "band"),
        ({"radius": float("inf")}, "radius"),
        ({"speed": 0.0}, "speed"),
        ({"spacing": 0}, "spacing"),
        ({"spacing": 1000}, "spacing"),
    ],
)
def test_bad_parameters_are_input_errors(kwargs: dict, where: str) -> None:
    args = {"scene": "diagonal", "parts": (2, 2), "cells": (32, 32), **kwargs}
    with pytest.raises(InputError) as info:
        wf.make_program(args.pop("scene"), args.pop("parts"), **args)
    assert str(info.value).startswith(where)


@pytest.mark.parametrize("ndim", [2, 3])
def test_front_outrunning_the_band_stops_the_run(ndim: int) -> None:
    program = wf.make_program("diagonal", (2,) * ndim, cells=16, spacing=8, cfl=5.0)
    with pytest.raises(SimulationError) as info:
        run_serial(program, 20)
    err = info.value
    assert err.phase == "march" and err.step <= 2
    assert f"partition {err.part}" in str(err) and "outran the narrow band" in str(err)
