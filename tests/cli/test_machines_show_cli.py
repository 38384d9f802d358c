"""``grapeshot machines`` and ``grapeshot show FILE``, through the real entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grapeshot.model.presets import PRESETS
from grapeshot.model.synthetic import synthetic_workload
from grapeshot.model.workload_file import save_workload
from tests.cli.helpers import run_main

SPEC = "dambreak:parts=8x8,steps=4"


def test_machines_lists_every_preset_within_80_columns() -> None:
    result = run_main("machines", columns=80)
    assert result.code == 0, result.err
    assert all(len(line) <= 80 for line in result.out.splitlines())
    for name in PRESETS:
        assert name in result.out
    assert "…" not in result.out  # nothing cut
    plafrim = next(line for line in result.out.splitlines() if "plafrim" in line)
    assert "16" in plafrim and "8 (2×4)" in plafrim and "fat-tree" in plafrim


def test_machines_json() -> None:
    rows = run_main("machines", "--json").json()["machines"]
    by_name = {r["name"]: r for r in rows}
    assert set(by_name) == set(PRESETS)
    assert by_name["lassen"]["cores_per_node"] == 40
    assert by_name["cm5"]["node_contention"] is True


@pytest.mark.parametrize(
    ("name", "hint"), [("plafr", "did you mean 'plafrim'?"), ("help", "grapeshot machines")]
)
def test_unknown_preset_suggests(name: str, hint: str) -> None:
    result = run_main("place", "--synthetic", SPEC, "--machine", name, "--strategy", "birdshot")
    assert result.code == 2 and hint in result.error


def test_preset_names_ignore_case() -> None:
    result = run_main(
        "place", "--synthetic", SPEC, "--machine", "PlaFRIM", "--strategy", "birdshot", "--json"
    )
    assert result.code == 0, result.err
    assert result.json()["machine"] == "plafrim"


def test_show_trace_placement_and_timeline(tmp_path: Path) -> None:
    trace = tmp_path / "trace.h5"
    save_workload(trace, synthetic_workload(SPEC))
    shown = run_main("show", str(trace), "--json").json()
    assert shown["kind"] == "trace" and shown["parts"] == 64 and shown["steps"] == 4
    assert shown["parts_shape"] == [8, 8] and shown["halo_bytes_per_step"] > 0

    out = tmp_path / "placement.json"
    placed = run_main(
        "place", "--trace", str(trace), "--machine", "plafrim", "--nodes", "4",
        "--strategy", "birdshot", "--out", str(out),
    )  # fmt: skip
    assert placed.code == 0, placed.err
    shown = run_main("show", str(out), "--json").json()
    assert shown["kind"] == "placement" and shown["nodes"] == 4 and shown["parts"] == 64
    assert shown["parts_per_node_min"] == shown["parts_per_node_max"] == 16
    assert "lif_mean" in shown

    human = run_main("show", str(out), columns=80)
    assert human.code == 0 and "placement" in human.out.splitlines()[0]

    timeline = tmp_path / "t.json"
    timeline.write_text(
        json.dumps({"traceEvents": [{"ph": "X", "ts": 0, "dur": 2e6, "pid": 0, "tid": 0}]})
    )
    shown = run_main("show", str(timeline), "--json").json()
    assert shown == {"file": str(timeline), "kind": "timeline", "tasks": 1, "processes": 1,
                     "span_s": 2.0}  # fmt: skip


def test_show_refuses_what_it_cannot_read(tmp_path: Path) -> None:
    other = tmp_path / "other.json"
    other.write_text('{"a": 1}')
    for path, problem in (
        (tmp_path / "missing.h5", "no such file"),
        (other, "is JSON but not a placement, timeline, mapping or repro result"),
    ):
        result = run_main("show", str(path))
        assert result.code == 2 and result.err.count("\n") == 1
        assert result.error.startswith(f"{path}: {problem}")
