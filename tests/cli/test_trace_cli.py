"""``grapeshot trace``: runs an app, writes the trace, fields and statistics; refuses bad input.

Every call goes through ``grapeshot.cli.main.main``, the real entry point, so the exit status
and the error line are the ones a user sees.
"""

from __future__ import annotations

import json
import types
from pathlib import Path

import numpy as np
import pytest

from grapeshot.apps import APPS, AppSpec, swe
from grapeshot.cli import trace as trace_cli
from grapeshot.model.workload import Workload, grid_halo
from grapeshot.model.workload_file import load_workload
from grapeshot.report.vtk import read_vti
from grapeshot.runtime import serial
from grapeshot.runtime.serial import run_recorded, run_serial
from tests.cli.helpers import ERROR_PREFIX, Result, run_main
from tests.runtime.test_trace_clock import clock_program_file


def invoke(*args: str) -> tuple[int, str, Result]:
    """Run ``grapeshot trace ARGS``: (status, stdout or the error message, the result).

    A failure must be status 2 with the message on stderr as one ``grapeshot: error:`` line.
    """
    result = run_main("trace", *args)
    if result.code == 2:
        return 2, result.error, result
    return result.code, result.out, result


SWE = ("swe", "--scene", "two-way-dambreak", "--cells", "32,16", "--parts", "4,2")


def test_swe_trace_json_and_file(tmp_path: Path) -> None:
    out = tmp_path / "run.h5"
    code, text, _ = invoke(*SWE, "--steps", "12", "--out", str(out), "--units", "work", "--json")
    assert code == 0, text
    data = json.loads(text)
    assert data["app"] == "swe" and data["scene"] == "two-way-dambreak"
    assert data["parts"] == [4, 2] and data["cells"] == [32, 16] and data["units"] == "work"
    stats = data["stats"]
    for key in ("top_share", "idle_fraction", "overlap", "imbalance", "n_top"):
        assert key in stats
    w = load_workload(out)
    assert w.app == "swe" and w.scene == "two-way-dambreak" and w.n_steps == 12
    assert w.units == "work" and np.array_equal(w.cost, w.work)
    ref = run_serial(swe.make_program("two-way-dambreak", (4, 2), cells=(32, 16)), 12)
    assert np.array_equal(w.work, ref.work)
    assert data["digest"] == ref.digest()


def test_measured_seconds_trace(tmp_path: Path) -> None:
    out = tmp_path / "s.h5"
    code, text, _ = invoke(
        "wavefront", "--scene", "diagonal", "--parts", "2,2", "--cells", "24", "--steps", "6",
        "--out", str(out), "--json",
    )  # fmt: skip
    assert code == 0, text
    w = load_workload(out)
    assert w.units == "s" and w.cost.shape == (6, 4) and (w.cost > 0).all()
    assert w.work is not None and w.work.sum() > 0
    # Timed by the kernels' thread's CPU clock; the wall clock's seconds kept beside.
    assert w.clock == "cpu" and w.wall.shape == w.cost.shape
    assert (w.cost <= w.wall + 1e-6).all()
    timing = json.loads(text)["timing"]
    assert timing["clock"] == "cpu" and 0 < timing["cpu_resolution"] < 1e-3
    assert 0 < timing["cpu_per_wall"] <= 1.0 + 1e-6


def test_chunked_run_with_vtk_and_snapshots_is_the_same_run(tmp_path: Path) -> None:
    out, vtk, png = tmp_path / "run.h5", tmp_path / "vtk", tmp_path / "png"
    code, text, _ = invoke(
        *SWE, "--steps", "10", "--out", str(out), "--vtk", str(vtk), "--snapshot", str(png),
        "--every", "4", "--units", "work", "--json",
    )  # fmt: skip
    assert code == 0, text
    data = json.loads(text)
    whole = run_serial(swe.make_program("two-way-dambreak", (4, 2), cells=(32, 16)), 10)
    assert data["digest"] == whole.digest()
    assert np.array_equal(load_workload(out).work, whole.work)
    steps = [0, 4, 8, 10]
    names = [f"swe-two-way-dambreak-{s:06d}" for s in steps]
    assert sorted(p.name for p in vtk.glob("*.vti")) == [n + ".vti" for n in names]
    assert sorted(p.name for p in png.glob("*.png")) == [n + ".png" for n in names]
    assert (png / (names[-1] + ".png")).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    last = read_vti(vtk / (names[-1] + ".vti"))
    fields = whole.fields()
    assert set(last) == set(fields)
    for name, value in fields.items():
        assert np.array_equal(last[name], value), name
    pvd = (vtk / "swe-two-way-dambreak.pvd").read_text()
    assert pvd.count("<DataSet") == 4 and names[1] + ".vti" in pvd


def test_run_recorded_frames_match_chunks() -> None:
    program = swe.make_program("drop", (2, 2), cells=(16, 16))
    seen = []
    run = run_recorded(program, 7, every=3, on_frame=lambda s, t, f: seen.append((s, t)))
    assert [s for s, _ in seen] == [0, 3, 6, 7]
    assert seen[-1][1] == run.time
    assert run.digest() == run_serial(program, 7).digest()


def test_3d_wavefront_vtk(tmp_path: Path) -> None:
    code, text, _ = invoke(
        "wavefront", "--scene", "corner", "--parts", "2,2,2", "--cells", "12", "--steps", "5",
        "--out", str(tmp_path / "w.h5"), "--vtk", str(tmp_path), "--every", "5", "--json",
    )  # fmt: skip
    assert code == 0, text
    fields = read_vti(tmp_path / "wavefront-corner-000005.vti")
    assert fields["T"].shape == (12, 12, 12) and fields["state"].dtype == np.uint8


def test_human_view(tmp_path: Path) -> None:
    code, text, _ = invoke(*SWE, "--steps", "4", "--out", str(tmp_path / "r.h5"))
    assert code == 0, text
    assert "busiest 10%" in text and "overlap" in text and "trace written to" in text
    assert "s (thread CPU time)" in text and "per step (s, cpu)" in text
    assert "per step (s, wall clock)" in text and "step-to-step noise" in text


def test_trace_generators_are_called_with_the_contract(tmp_path: Path, monkeypatch) -> None:
    calls = {}

    def make_trace(scene, parts, steps, *, cells=None, seed=0, progress=None):
        calls.update(scene=scene, parts=parts, steps=steps, cells=cells, seed=seed)
        if progress is not None:
            progress(steps, steps)
        cost = np.zeros((steps, parts[0] * parts[1]))
        cost[:, 0] = 1.0
        return Workload(cells, parts, cost, grid_halo(cells, parts), units="work", app="gen")

    fake = types.SimpleNamespace(SCENES={"one": "a test scene"}, make_trace=make_trace)
    monkeypatch.setitem(APPS, "gen", AppSpec("gen", "a test generator", False))
    monkeypatch.setattr(trace_cli, "get_app", lambda name: fake)
    out = tmp_path / "g.h5"
    args = ("gen", "--scene", "one", "--parts", "3,2", "--cells", "6,4", "--steps", "5")
    code, text, _ = invoke(*args, "--seed", "7", "--out", str(out), "--json")
    assert code == 0, text
    assert calls == {"scene": "one", "parts": (3, 2), "steps": 5, "cells": (6, 4), "seed": 7}
    assert json.loads(text)["stats"]["top_share"] == 1.0
    assert load_workload(out).app == "gen"
    code, text, _ = invoke(*args, "--out", str(out), "--vtk", str(tmp_path))
    assert code == 2 and text.startswith("--vtk") and "trace generator" in text
    code, text, _ = invoke(*args, "--out", str(out), "--units", "s")
    assert code == 2 and text.startswith("--units")
    code, text, _ = invoke(*args, "--out", str(out), "--clock", "wall")
    assert code == 2 and text.startswith("--clock") and "trace generator" in text


@pytest.mark.parametrize(
    ("args", "where"),
    [
        (("nosuchapp", "--scene", "x", "--parts", "2,2"), "APP"),
        (("swe", "--scene", "tsunami", "--parts", "2,2"), "--scene"),
        (("swe", "--scene", "drop", "--parts", "a,b"), "--parts"),
        (("swe", "--scene", "drop", "--parts", "0,4"), "--parts"),
        (("swe", "--scene", "drop", "--parts", "1,2,3,4"), "--parts"),
        (("swe", "--scene", "drop", "--parts", "2,2,2"), "--parts"),
        (("swe", "--scene", "drop", "--parts", "100,100", "--cells", "16"), "--parts"),
        (("swe", "--scene", "drop", "--parts", "2,2", "--cells", "-4,4"), "--cells"),
        (("swe", "--scene", "drop", "--parts", "2,2", "--cells", "8,8,8"), "--cells"),
        (("swe", "--scene", "drop", "--parts", "2,2", "--steps", "0"), "--steps"),
        (("swe", "--scene", "drop", "--parts", "2,2", "--every", "0"), "--every"),
        (("swe", "--scene", "drop", "--parts", "2,2", "--units", "joules"), "--units"),
        (("swe", "--scene", "drop", "--parts", "2,2", "--clock", "sundial"), "--clock"),
        (
            ("swe", "--scene", "drop", "--parts", "2,2", "--units", "work", "--clock", "cpu"),
            "--clock",
        ),
        (("swe", "--scene", "drop", "--parts", "2,2", "--seed", "-3"), "--seed"),
        (("wavefront", "--scene", "diagonal", "--parts", "2,2,2,"), "--parts"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: tuple, where: str) -> None:
    full = list(args)
    if "--steps" not in full:
        full += ["--steps", "2"]
    out = tmp_path / "never.h5"
    code, text, result = invoke(*full, "--out", str(out))
    assert code == 2
    assert result.err == f"{ERROR_PREFIX}{text}\n"  # one line, nothing else on stderr
    assert text.startswith(where) and result.out == ""
    assert not out.exists()


def test_simulation_error_is_reported_like_bad_input(tmp_path: Path, monkeypatch) -> None:
    real = swe.make_program
    monkeypatch.setattr(swe, "make_program", lambda *a, **k: real(*a, **k, cfl=5.0))
    code, text, _ = invoke(*SWE, "--steps", "3", "--out", str(tmp_path / "x.h5"))
    assert code == 2 and text.startswith("step 0, partition") and "CFL 5" in text


def trace_clocked(folder: Path, kernel: str, *args: str) -> Result:
    """``grapeshot trace`` of ``make_<kernel>`` (tests/runtime/test_trace_clock.py), 6 steps."""
    spec = f"{clock_program_file(folder)}:make_{kernel}"
    return run_main(
        "trace", "--app", spec, "--parts", "2,2", "--steps", "6",
        "--out", str(folder / f"{kernel}.h5"), *args,
    )  # fmt: skip


def warning_lines(result: Result) -> list[str]:
    return [x for x in result.err.splitlines() if x.startswith("grapeshot trace: warning: ")]


def test_costs_jumping_while_the_work_stays_are_warned_about(tmp_path: Path) -> None:
    result = trace_clocked(tmp_path, "jittery", "--json")
    assert result.code == 0, result.err
    data = result.json()
    noise = data["timing"]["noise"]
    assert noise > trace_cli.NOISE_LIMIT and data["timing"]["work_variation"] == 0.0
    (line,) = warning_lines(result)
    assert data["warnings"] == [line.removeprefix("grapeshot trace: warning: ")]
    assert f"by {noise:.2f} of their mean" in line and "--units work" in line
    assert result.err.count("\n") == 1  # one line


def test_costs_that_follow_the_work_are_not_warned_about(tmp_path: Path) -> None:
    result = trace_clocked(tmp_path, "proportional", "--json")
    assert result.code == 0, result.err
    data = result.json()
    assert data["warnings"] == [] and warning_lines(result) == []
    assert data["timing"]["noise"] < trace_cli.NOISE_LIMIT < data["timing"]["work_variation"]
    w = load_workload(tmp_path / "proportional.h5")
    assert len(np.unique(w.work)) == 4  # the work did vary, and the cost with it


def test_sleeping_is_noise_to_the_wall_clock_only(tmp_path: Path) -> None:
    by_cpu = trace_clocked(tmp_path, "napping", "--json")
    assert by_cpu.code == 0, by_cpu.err
    assert by_cpu.json()["warnings"] == []
    assert by_cpu.json()["timing"]["noise_wall"] > trace_cli.NOISE_LIMIT
    by_wall = trace_clocked(tmp_path, "napping", "--clock", "wall", "--json")
    assert by_wall.code == 0, by_wall.err
    data = by_wall.json()
    assert data["timing"]["clock"] == "wall" and data["timing"]["noise"] > trace_cli.NOISE_LIMIT
    (line,) = warning_lines(by_wall)
    assert "--clock cpu leaves out the time other processes held the core" in line
    w = load_workload(tmp_path / "napping.h5")
    assert w.clock == "wall" and np.array_equal(w.cost, w.wall)


def test_a_coarse_cpu_clock_is_said(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(serial, "cpu_clock_resolution", lambda: 4e-3)
    result = trace_clocked(tmp_path, "proportional", "--json")
    assert result.code == 0, result.err
    assert result.json()["timing"]["cpu_resolution"] == 4e-3
    (line,) = warning_lines(result)
    assert "advances in steps of 4 ms" in line and "right on average over the steps" in line


def test_a_kernel_on_other_threads_is_said(tmp_path: Path) -> None:
    result = trace_clocked(tmp_path, "threaded", "--json")
    assert result.code == 0, result.err
    assert result.json()["timing"]["other_threads"] > trace_cli.OTHER_THREADS_LIMIT
    assert any("a kernel on several threads" in x for x in warning_lines(result))
