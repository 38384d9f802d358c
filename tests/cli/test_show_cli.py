"""``grapeshot show`` reads every file grapeshot writes; a damaged one is one line.

The files are written by the commands themselves (through the real entry point), so a new
output format that ``show`` cannot read fails here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grapeshot.model import placement
from tests.cli.helpers import run_main

SPEC = "dambreak:parts=8x8,steps=4"
MATRIX = "%%MatrixMarket matrix coordinate real symmetric\n4 4 3\n2 1 10\n3 2 5\n4 3 7\n"
MACHINE = "name = 'mine'\nnodes = 4\n[node]\nlevels = [['socket', 2], ['core', 4]]\n"


def _ok(*args: str) -> None:
    result = run_main(*args)
    assert result.code == 0, (args, result.err)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    """Every kind of file grapeshot writes: ``label -> (path, the kind show names)``."""
    d = tmp_path_factory.mktemp("written")
    (d / "a.mtx").write_text(MATRIX)
    (d / "m.toml").write_text(MACHINE)
    place = ("place", "--synthetic", SPEC, "--machine", "plafrim", "--nodes", "2")
    for ext in ("json", "part", "csv", "npy"):
        _ok(*place, "--out", str(d / f"p.{ext}"))
    _ok(*place, "--figure", str(d / "f.png"))
    _ok(*place, "--figure", str(d / "f.svg"))
    _ok("simulate", "--synthetic", SPEC, "--machine", "plafrim", "--nodes", "2", "--no-figure",
        "--timeline", str(d / "sim-timeline.json"))  # fmt: skip
    _ok("trace", "swe", "--scene", "dambreak", "--parts", "2,2", "--cells", "32,16", "--steps",
        "4", "--out", str(d / "t.h5"), "--vtk", str(d / "vtk"), "--every", "2")  # fmt: skip
    _ok("trace", "swe", "--scene", "dambreak", "--parts", "2,2", "--cells", "32,16", "--steps",
        "2", "--out", str(d / "t2.h5"), "--snapshot", str(d / "snap"), "--every", "2")  # fmt: skip
    _ok("run", "swe", "--parts", "2,2", "--steps", "2", "--record", str(d / "r.h5"),
        "--timeline", str(d / "run-timeline.json"))  # fmt: skip
    tleaf = ("--matrix", str(d / "a.mtx"), "--tleaf", "tleaf 2 2 10 2 1")
    _ok("map", *tleaf, "--out", str(d / "map-one.json"))
    _ok("map", *tleaf, "--strategy", "all", "--out", str(d / "map-all.json"))
    _ok("map", "--synthetic", "dambreak:parts=8x8,steps=2", "--machine", "plafrim", "--nodes",
        "2", "--strategy", "geometric", "--out", str(d / "map-workload.json"))  # fmt: skip
    _ok("repro", "cm5-table2", "--out-dir", str(d / "repro"))
    _ok("jobs", "generate", "--out", str(d / "jobs.swf"), "--jobs", "100")
    _ok("zmodel", "--mesh", "16", "--steps", "1", "--write-views", str(d / "views"), "--vtk",
        str(d / "zvtk"), "--vtk-every", "1")  # fmt: skip
    files = {
        "trace": (d / "t.h5", "trace"),
        "run record": (d / "r.h5", "run record"),
        "run timeline": (d / "run-timeline.json", "timeline"),
        "simulate timeline": (d / "sim-timeline.json", "timeline"),
        "map one": (d / "map-one.json", "mapping"),
        "map all": (d / "map-all.json", "mapping"),
        "map workload": (d / "map-workload.json", "mapping"),
        "repro json": (d / "repro" / "cm5-table2.json", "repro result"),
        "repro png": (d / "repro" / "cm5-table2.png", "figure"),
        "swf": (d / "jobs.swf", "job log"),
        "png": (d / "f.png", "figure"),
        "svg": (d / "f.svg", "figure"),
        "snapshot": (next((d / "snap").glob("*.png")), "figure"),
        "vti": (next((d / "vtk").glob("*.vti")), "vtk"),
        "pvd": (next((d / "vtk").glob("*.pvd")), "vtk"),
        "vts": (next((d / "zvtk").glob("*.vts")), "vtk"),
        "view": (next((d / "views").glob("*.view")), "view"),
        "machine": (d / "m.toml", "machine"),
    }
    files.update({f"placement {ext}": (d / f"p.{ext}", "placement") for ext in
                  ("json", "part", "csv", "npy")})  # fmt: skip
    return files


#: Files whose every prefix is itself a valid file (no header says how long they are): a
#: placement as node numbers one per line or row. Cut short they read as fewer partitions.
NO_LENGTH = {"placement part", "placement csv"}


def test_show_names_every_file_grapeshot_writes(written) -> None:
    for label, (path, kind) in written.items():
        result = run_main("show", str(path), "--json")
        assert result.code == 0, (label, result.err)
        assert result.json()["kind"] == kind, label
        human = run_main("show", str(path), columns=100)
        assert human.code == 0 and human.out.startswith(f"{path}: "), (label, human.err)


def test_summaries_say_what_matters(written) -> None:
    def show(label: str) -> dict:
        return run_main("show", str(written[label][0]), "--json").json()

    assert show("swf")["jobs"] == 100 and show("swf")["bad_lines"] == 0
    assert show("map one")["tasks"] == 4 and show("map one")["strategy"] == "treematch"
    assert "treematch" in show("map all")["strategies"]
    assert show("map workload")["nodes"] == 2
    assert show("repro json")["entry"] == "cm5-table2" and show("repro json")["rows"] > 0
    assert show("png")["width_px"] > 0 and show("svg")["format"] == "svg"
    assert show("vti")["vtk_type"] == "ImageData" and show("pvd")["frames"] == 3
    assert show("view")["components"] in (2, 3)


def test_large_json_files_read_by_the_compiled_scanner_say_the_same(written, monkeypatch) -> None:
    """Every JSON file shown as if it were large (its lists of integers read from its bytes,
    :mod:`grapeshot.model.json_ints`): the same facts as through ``json.loads``."""
    json_files = [label for label, (path, _) in written.items() if path.suffix == ".json"]
    before = {label: run_main("show", str(written[label][0]), "--json").out for label in json_files}
    monkeypatch.setattr(placement, "JSON_SCAN_MIN_BYTES", 0)
    for label in json_files:
        assert run_main("show", str(written[label][0]), "--json").out == before[label], label


def _cut(path: Path, into: Path, fraction: float) -> Path:
    data = path.read_bytes()
    keep = int(len(data) * fraction)
    if keep and data[keep - 1 : keep] == b"\n":  # cut inside a line, as an interrupted copy
        keep -= 1
    out = into / f"cut-{fraction}-{path.name}"
    out.write_bytes(data[:keep])
    return out


@pytest.mark.parametrize("fraction", [0.0, 0.3, 0.9])
def test_a_cut_short_file_is_one_line(written, tmp_path: Path, fraction: float) -> None:
    for label, (path, _) in written.items():
        if label in NO_LENGTH and fraction > 0:
            continue
        cut = _cut(path, tmp_path, fraction)
        result = run_main("show", str(cut))
        assert result.code == 2, (label, fraction, result.out)
        assert result.err.count("\n") == 1 and "Traceback" not in result.err, (label, result.err)
        assert result.error.startswith(str(cut)), (label, result.error)


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("bad-map.json", '{"core_of": [0, 1], "cost": "x", "strategy": "t", "seconds": 1, '
         '"oversub": 1}', "is a damaged mapping"),
        ("bad-timeline.json", '{"traceEvents": [{"ph": "X", "ts": "soon"}]}',
         "is a damaged timeline"),
        ("bad-repro.json", '{"name": "x", "rows": 3, "grapeshot_version": "1"}',
         "is a damaged repro result"),
        ("list.json", "[1, 2]", "is a JSON list, not a grapeshot file"),
        ("empty.swf", "; Version: 2.2\n", "holds no job"),
        ("fake.png", "not a png", "is not a PNG"),
        ("notes.txt", "hello", "is not a file grapeshot writes"),
    ],
)  # fmt: skip
def test_damage_inside_a_recognised_file_is_one_line(tmp_path, name, text, problem) -> None:
    path = tmp_path / name
    path.write_text(text)
    result = run_main("show", str(path))
    assert result.code == 2 and result.err.count("\n") == 1, result.err
    assert result.error.startswith(f"{path}: {problem}"), result.error


def test_a_directory_is_named_as_one(tmp_path: Path) -> None:
    result = run_main("show", str(tmp_path))
    assert result.code == 2 and result.error.startswith(f"{tmp_path}: is a directory")
