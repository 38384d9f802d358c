"""Bring your own simulation: placements any code reads, and traces from the user's timings.

``place --out`` in every format agrees with the JSON and is read back by ``simulate`` and
``show``; ``examples/read_part.c``, compiled with the system's C compiler, prints each rank's
partitions from a ``.part`` file; ``trace import`` turns CSV timings into a trace that
``simulate`` runs. Every refusal is one line and exit status 2, through the real entry point.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from grapeshot.cli import main as cli_main
from grapeshot.model.workload_file import load_workload
from tests.cli.helpers import run_main
from tests.mpi_harness import ROOT

SPEC = "dambreak:parts=12x12,steps=4"
PLACE = ("place", "--synthetic", SPEC, "--machine", "plafrim", "--nodes", "4", "--seed", "3")


def _ok(*args: str) -> str:
    result = run_main(*args)
    assert result.code == 0, result.err
    return result.out


def _refused(*args: str) -> str:
    """The one error line of ``grapeshot ARGS``, which must exit with status 2."""
    result = run_main(*args)
    assert result.code == 2 and result.err.count("\n") == 1, result.err
    return result.error


@pytest.fixture(scope="module")
def placed(tmp_path_factory) -> dict[str, Path]:
    """The same placement written in every format (and once more under another name)."""
    folder = tmp_path_factory.mktemp("placed")
    files = {fmt: folder / f"p.{fmt}" for fmt in ("json", "part", "csv", "npy")}
    for path in files.values():
        _ok(*PLACE, "--out", str(path))
    files["txt"] = folder / "p.txt"
    _ok(*PLACE, "--out", str(files["txt"]), "--format", "part")
    return files


def test_every_format_agrees_with_the_json(placed: dict[str, Path]) -> None:
    doc = json.loads(placed["json"].read_text())
    node_of = np.array(doc["node_of"])
    assert len(node_of) == 144 and doc["nodes"] == 4
    part = np.array(placed["part"].read_text().split(), dtype=int)
    rows = np.loadtxt(placed["csv"], delimiter=",", skiprows=1, dtype=int)
    assert placed["csv"].read_text().splitlines()[0] == "partition,node,core"
    assert np.array_equal(rows[:, 0], np.arange(144)) and np.all(rows[:, 2] == -1)
    npy = np.load(placed["npy"])
    assert npy.dtype == np.int32
    for other in (part, rows[:, 1], npy):
        assert np.array_equal(other, node_of)
    assert placed["txt"].read_text() == placed["part"].read_text()  # --format wins


def test_simulate_reads_every_format_the_same(placed: dict[str, Path]) -> None:
    common = ("simulate", "--synthetic", SPEC, "--machine", "plafrim", "--no-figure", "--json")
    runs = {
        fmt: json.loads(_ok(*common, "--placement", str(path)))["runs"][0]
        for fmt, path in placed.items()
    }
    reference = runs.pop("json")
    for fmt, run in runs.items():
        assert run["step_time_mean"] == reference["step_time_mean"], fmt
        assert run["lif_mean"] == reference["lif_mean"], fmt


def test_show_reads_every_format(placed: dict[str, Path]) -> None:
    for fmt in ("part", "csv", "npy"):
        facts = json.loads(_ok("show", str(placed[fmt]), "--json"))
        assert facts["kind"] == "placement" and facts["format"] == fmt
        assert (facts["parts"], facts["nodes"], facts["strategy"]) == (144, 4, "unknown")
    human = _ok("show", str(placed["part"]))
    assert "a placement of grapeshot place --out" in human


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--out", "{d}/p.txt"), "--out {d}/p.txt: has the extension '.txt', which names no "
                                 "placement format; expected .json, .part, .csv, .npy, or "
                                 "--format json|part|csv|npy"),
        (("--out", "{d}/p"), "--out {d}/p: has no extension, which names no placement format"),
        (("--out", "{d}/p.json", "--format", "metis"), "--format: got 'metis'; expected one of "
                                                       "json, part, csv, npy"),
        (("--format", "part"), "--format: given without --out (part); expected --out FILE"),
    ],
)  # fmt: skip
def test_place_refuses_an_output_before_placing(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    # The trace does not exist: the output is refused before the workload is even read.
    args = tuple(a.format(d=tmp_path) for a in args)
    error = _refused("place", "--trace", str(tmp_path / "none.h5"), "--machine", "plafrim", *args)
    assert error.startswith(message.format(d=tmp_path)), error
    assert not list(tmp_path.iterdir())


def test_place_refuses_a_folder_as_output(tmp_path: Path) -> None:
    error = _refused(*PLACE, "--out", str(tmp_path), "--format", "part")
    assert error == f"--out {tmp_path}: is a folder; expected a file name"


def _compiler() -> str:
    for name in ("cc", "gcc", "clang"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no C compiler (cc, gcc, clang) on PATH")


@pytest.fixture(scope="module")
def read_part(tmp_path_factory) -> Path:
    """examples/read_part.c, compiled with warnings as errors."""
    exe = tmp_path_factory.mktemp("c") / "read_part"
    source = ROOT / "examples" / "read_part.c"
    cmd = [
        _compiler(),
        "-std=c99",
        "-O2",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-o",
        str(exe),
        str(source),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return exe


def test_read_part_prints_each_ranks_partitions(read_part: Path, placed: dict[str, Path]) -> None:
    proc = subprocess.run(
        [str(read_part), str(placed["part"])], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    node_of = np.array(json.loads(placed["json"].read_text())["node_of"])
    expected = [
        f"rank {r}:" + "".join(f" {p}" for p in np.flatnonzero(node_of == r)) for r in range(4)
    ]
    assert proc.stdout.splitlines() == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0\n1\n\n2\n", "line 3: blank line; expected one node number per line"),
        ("0\nx\n", "line 2: expected a node number in [0, 2147483646]"),
        ("0\n-1\n", "line 2: expected a node number in [0, 2147483646]"),
        ("0\n1.5\n", "line 2: expected a node number in [0, 2147483646]"),
        ("0\n2147483647\n", "line 2: expected a node number in [0, 2147483646]"),
        ("1" * 100 + "\n", "line 1: line too long; expected one node number"),
        ("", "no partitions; expected one node number per line"),
    ],
)
def test_read_part_refuses_a_bad_file(
    read_part: Path, tmp_path: Path, text: str, message: str
) -> None:
    bad = tmp_path / "bad.part"
    bad.write_text(text)
    proc = subprocess.run([str(read_part), str(bad)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == f"read_part: {bad}: {message}\n"


def test_read_part_reads_what_grapeshot_reads(read_part: Path, tmp_path: Path) -> None:
    # Blanks around numbers, CRLF line ends and blank lines at the end: both accept them.
    path = tmp_path / "p.part"
    path.write_bytes(b" 1\r\n0\t\r\n1\r\n\r\n")
    proc = subprocess.run([str(read_part), str(path)], capture_output=True, text=True, timeout=60)
    assert proc.stdout == "rank 0: 1\nrank 1: 0 2\n"
    facts = json.loads(_ok("show", str(path), "--json"))
    assert facts["nodes"] == 2 and facts["parts"] == 3


# grapeshot trace import


def _costs(folder: Path, steps: int = 3, parts: int = 16) -> Path:
    rng = np.random.default_rng(1)
    rows = [f"{s},{p},{rng.uniform(0, 0.01):.6f}" for p in range(parts) for s in range(steps)]
    path = folder / "costs.csv"
    path.write_text("step,partition,seconds\n" + "\n".join(rows) + "\n")
    return path


def _halo(folder: Path) -> Path:
    rows = [f"{p},{q},4096" for p in range(16) for q in (p - 1, p + 1) if 0 <= q < 16]
    path = folder / "halo.csv"
    path.write_text("src,dst,bytes\n" + "\n".join(rows) + "\n")
    return path


def test_imported_trace_is_simulated(tmp_path: Path) -> None:
    out = tmp_path / "mine.h5"
    costs, halo = str(_costs(tmp_path)), str(_halo(tmp_path))
    summary = json.loads(_ok("trace", "import", "--csv", costs, "--halo", halo, "--parts", "4,4",
                             "--out", str(out), "--json"))  # fmt: skip
    assert summary["parts"] == [4, 4] and summary["steps"] == 3 and summary["halo_messages"] == 30
    assert summary["halo_bytes_per_step"] == 30 * 4096 and summary["cells"] == [4, 4]
    wl = load_workload(out)
    assert wl.app == "import" and wl.scene == "costs.csv" and wl.units == "s"
    sim = json.loads(_ok("simulate", "--trace", str(out), "--machine", "plafrim", "--nodes", "2",
                         "--strategy", "geometric", "--no-figure", "--json"))  # fmt: skip
    (run,) = sim["runs"]
    assert run["parts"] == 16 and run["step_time_mean"] > 0 and run["bytes_sent"] > 0
    placed = json.loads(_ok("place", "--trace", str(out), "--machine", "plafrim", "--nodes", "2",
                            "--json"))  # fmt: skip
    assert placed["parts"] == 16 and placed["steps"] == 3


def test_imported_trace_without_halo_uses_the_grid(tmp_path: Path) -> None:
    out = tmp_path / "grid.h5"
    _ok("trace", "import", "--csv", str(_costs(tmp_path)), "--parts", "4x4", "--cells", "64",
        "--out", str(out))  # fmt: skip
    wl = load_workload(out)
    assert wl.domain_shape == (64, 64) and wl.halo.n_messages == 84
    assert int(wl.halo.nbytes.max()) == 16 * 8  # a 16-cell face of 8-byte cells


def test_human_view_of_an_import(tmp_path: Path) -> None:
    out = _ok("trace", "import", "--csv", str(_costs(tmp_path)), "--parts", "4,4",
              "--out", str(tmp_path / "t.h5"))  # fmt: skip
    assert "halo messages per step (from the grid)" in out and "trace written to" in out


def test_import_refusals(tmp_path: Path) -> None:
    costs, out = _costs(tmp_path), tmp_path / "t.h5"
    base = ("trace", "import", "--csv", str(costs), "--out", str(out))
    assert _refused(*base, "--parts", "4,5").startswith(
        f"{costs}: has no row for step 0, partition 16"
    )
    bad = tmp_path / "bad.csv"
    bad.write_text("step,partition,seconds\n0,0,abc\n")
    assert _refused("trace", "import", "--csv", str(bad), "--parts", "1,1", "--out", str(out)) == (
        f"{bad}: line 2, column 'seconds': got 'abc'; expected a number >= 0"
    )
    halo = tmp_path / "h.csv"
    halo.write_text("src,dst,bytes\n0,1,8\n0,1,8\n")
    assert _refused(*base, "--parts", "4,4", "--halo", str(halo)) == (
        f"{halo}: line 3: repeats src 0, dst 1 (line 2); expected each (src, dst) on one row: "
        "the bytes of all its messages in a step"
    )
    assert _refused(*base, "--parts", "4,4,4,4").startswith("--parts: got '4,4,4,4'")
    assert _refused(*base, "--parts", "4,4", "--cells", "2").startswith(
        "--parts/--cells: got 4 partitions over 2 cells"
    )
    assert not out.exists()


def test_import_checks_its_output_before_reading(tmp_path: Path) -> None:
    missing = tmp_path / "none.csv"
    error = _refused("trace", "import", "--csv", str(missing), "--parts", "2,2",
                     "--out", str(tmp_path))  # fmt: skip
    assert error == f"--out {tmp_path}: is a folder; expected a file name"
    error = _refused("trace", "import", "--csv", str(missing), "--parts", "2,2",
                     "--out", str(tmp_path / "t.h5"))  # fmt: skip
    assert error.startswith(f"{missing}: cannot read (No such file or directory)")


def test_import_usage_errors_name_the_subcommand() -> None:
    result = run_main("trace", "import", "--parts", "2,2")
    assert result.code == 2 and result.err.count("\n") == 1
    assert result.err.startswith("grapeshot trace import: error: missing option")


def test_import_help_explains_the_columns() -> None:
    help_text = " ".join(_ok("trace", "import", "--help").split())
    assert "Usage: grapeshot trace import [OPTIONS]" in help_text
    for words in ("step,partition,seconds", "src,dst,bytes", "step:", "partition:", "seconds:",
                  "src, dst:", "bytes:", "--halo", "--cells"):  # fmt: skip
        assert words in help_text, words


def test_trace_help_points_at_import() -> None:
    assert "grapeshot trace import --help" in " ".join(_ok("trace", "--help").split())


def test_the_subcommand_summary_is_its_own() -> None:
    for (parent, word), (_, summary) in cli_main.SUBCOMMANDS.items():
        command = cli_main.load_subcommand(parent, word)
        assert " ".join((command.help or "").split("\n\n")[0].split()) == summary


@pytest.mark.mpi
def test_run_reads_a_part_file_on_two_ranks(tmp_path: Path) -> None:
    import h5py

    from tests.mpi_harness import run_mpi

    out, record = tmp_path / "p.part", tmp_path / "run.h5"
    _ok("place", "--synthetic", "dambreak:parts=4x4,steps=2", "--machine", "plafrim",
        "--nodes", "2", "--strategy", "cyclic", "--out", str(out))  # fmt: skip
    run_mpi(2, ["-m", "grapeshot.cli.main", "run", "swe", "--parts", "4,4", "--steps", "2",
                "--placement", str(out), "--record", str(record), "--json"])  # fmt: skip
    with h5py.File(record) as f:
        node_of = f["run/node_of"][()]
    assert np.array_equal(node_of, np.array(out.read_text().split(), dtype=int))


def test_import_help_imports_nothing_heavy() -> None:
    # Routed before the trace command is loaded: its apps, numba and h5py stay out.
    from tests.cli.test_main_cli import HEAVY, _imported_by

    mods = _imported_by("trace", "import", "--help")
    assert "grapeshot.cli.trace_import" in mods and "grapeshot.cli.trace" not in mods
    assert not {m for m in mods if any(m == h or m.startswith(h + ".") for h in HEAVY)}
