"""Nothing lost (issue 27): every output path is checked before any work starts, and every
size a user's option sets is checked against the machine's memory before it is allocated.

Each refusal is one line, exit status 2, no traceback, and leaves the folder as it was. A
"tripwire" replaces the command's first piece of work with a test failure, so a refusal that
came after the work had started would fail the test instead of passing slowly.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from grapeshot.model import memory
from tests.cli.helpers import Result, run_main

#: A folder no process can create files in, root included.
UNWRITABLE = "/proc"
#: A path whose first folder would be a new folder directly under the root.
UNDER_ROOT = "/grapeshot-no-such-top-folder/out/x.json"


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _refused(result: Result, starts: str) -> str:
    """The one error line (exit 2, no traceback), which must start with ``starts``."""
    assert result.code == 2, (result.out, result.err)
    assert "Traceback" not in result.err and result.err.count("\n") == 1, result.err
    assert result.error.startswith(starts), result.error
    return result.error


def _tripwire(monkeypatch: pytest.MonkeyPatch, target: str) -> None:
    """Make ``target`` (the command's first work) fail the test if it is ever reached."""

    def reached(*args: object, **kwargs: object) -> None:
        pytest.fail(f"{target} ran before the output path was checked")

    monkeypatch.setattr(target, reached)


@pytest.fixture
def matrix(tmp_path: Path) -> Path:
    path = tmp_path / "m.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real symmetric\n4 4 2\n2 1 5\n4 3 7\n")
    return path


PLACE = ("place", "--machine", "plafrim", "--nodes", "2", "--synthetic", "binary:parts=8x8")
TRACE = ("trace", "swe", "--scene", "dambreak", "--parts", "4,4", "--steps", "2")
SIMULATE = ("simulate", "--machine", "plafrim", "--nodes", "2", "--synthetic",
            "binary:parts=8x8,steps=2", "--strategy", "geometric")  # fmt: skip


# --- output paths -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "tripwire", "starts"),
    [
        ((*PLACE, "--out", f"{UNWRITABLE}/p.json"), "grapeshot.cli.place.open_workload",
         "--out /proc/p.json: cannot create files in /proc"),
        ((*PLACE, "--figure", "{tmp}/load.txt"), "grapeshot.cli.place.open_workload",
         "--figure {tmp}/load.txt: has the extension '.txt'; expected one of .png, .svg"),
        ((*PLACE, "--out", UNDER_ROOT), "grapeshot.cli.place.open_workload",
         f"--out {UNDER_ROOT}: would create the folder /grapeshot-no-such-top-folder directly "
         "under /"),
        ((*TRACE, "--out", f"{UNWRITABLE}/t.h5"), "grapeshot.cli.trace.make_app_program",
         "--out /proc/t.h5: cannot create files in /proc"),
        ((*TRACE, "--out", "{tmp}/t.h5", "--vtk", f"{UNWRITABLE}/vtk"),
         "grapeshot.cli.trace.make_app_program", "--vtk /proc/vtk: cannot create files in"),
        ((*TRACE, "--out", "{tmp}/t.h5", "--snapshot", "{tmp}/file"),
         "grapeshot.cli.trace.make_app_program", "--snapshot {tmp}/file: is a file"),
        ((*SIMULATE, "--figure", "{tmp}/sim.txt"), "grapeshot.sim.request.load_machine",
         "--figure {tmp}/sim.txt: has the extension '.txt'"),
        ((*SIMULATE, "--no-figure", "--timeline", f"{UNWRITABLE}/t.json"),
         "grapeshot.sim.request.load_machine", "--timeline /proc/t.json: cannot create"),
        (("map", "--matrix", "{tmp}/m.mtx", "--tleaf", "tleaf 1 4 1", "--out",
          f"{UNWRITABLE}/m.json"), "grapeshot.model.topology.read_affinity_matrix",
         "--out /proc/m.json: cannot create files in /proc"),
        (("repro", "cm5-table2", "--quick", "--out-dir", f"{UNWRITABLE}/r"),
         "grapeshot.report.figures.save_figure", "--out-dir /proc/r: cannot create files"),
        (("repro", "cm5-table2", "--quick", "--out", "{tmp}/file"),
         "grapeshot.report.figures.save_figure", "--out-dir {tmp}/file: is a file"),
        (("demo", "--out-dir", f"{UNWRITABLE}/demo"), "grapeshot.report.slice_demo.run_slice",
         "--out-dir /proc/demo: cannot create files in /proc"),
        (("jobs", "generate", "--jobs", "10", "--out", f"{UNWRITABLE}/g.swf"),
         "grapeshot.cli.jobs.lublin_feitelson", "--out /proc/g.swf: cannot create files"),
    ],
)  # fmt: skip
def test_an_output_that_cannot_be_written_is_refused_before_the_work(
    args, tripwire, starts, tmp_path: Path, matrix: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "file").write_text("mine\n")
    if "repro" in args:  # the entry would run for seconds: it must not start at all
        monkeypatch.setattr(
            "grapeshot.cli.repro.get_entry",
            lambda name: type("E", (), {"function": staticmethod(lambda q: pytest.fail("ran"))}),
        )
    _tripwire(monkeypatch, tripwire)
    before = _tree(tmp_path)
    result = run_main(*(a.replace("{tmp}", str(tmp_path)) for a in args))
    _refused(result, starts.replace("{tmp}", str(tmp_path)))
    assert _tree(tmp_path) == before
    assert not Path("/grapeshot-no-such-top-folder").exists()


def test_missing_folders_below_an_existing_one_are_created(tmp_path: Path) -> None:
    out, fig = tmp_path / "runs" / "a" / "p.json", tmp_path / "figs" / "load.svg"
    result = run_main(*PLACE, "--out", str(out), "--figure", str(fig), "--json")
    assert result.code == 0, result.err
    assert out.is_file() and fig.is_file()
    assert [p for p in _tree(tmp_path) if Path(p).name.startswith(".")] == []


# --- absurd sizes -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "starts"),
    [
        (("place", "--machine", "cm5", "--synthetic", "binary:parts=100000x100000"),
         "--synthetic binary:parts=100000x100000: needs about 2.8 TiB (3,039,976,000,080 "
         "bytes) to build the workload, more than the"),
        (("trace", "flip", "--scene", "dambreak", "--parts", "4,4", "--steps", "2", "--cells",
          "100000", "--out", "{tmp}/f.h5"),
         "--parts 4,4 --cells 100000: needs about 2.5 TiB"),
        (("trace", "commbench", "--scene", "default", "--parts", "1000,1000", "--steps", "2",
          "--out", "{tmp}/c.h5"), "--parts 1000,1000: needs about 2.1 TiB"),
        (("simulate", "--machine", "cm5", "--synthetic", "binary:parts=100x100,steps=100000000",
          "--no-figure"), "--synthetic binary:parts=100x100,steps=100000000: needs about"),
        (("simulate", "--machine", "cm5", "--synthetic", "binary:parts=8x8,cells=1000000",
          "--ppc", "1,100000000", "--no-figure"), "--ppc 1,100000000: needs about"),
        (("map", "--matrix", "{tmp}/m.mtx", "--tleaf", "tleaf 1 4 1", "--oversub",
          "1000000000"), "--oversub 1000000000: needs about 238.4 GiB (256,000,000,000 bytes) "
         "for TreeMatch's 4,000,000,000 slots"),
        (("jobs", "generate", "--jobs", "100000000000", "--out", "{tmp}/g.swf"),
         "--jobs 100000000000: needs about 46.6 TiB"),
    ],
)  # fmt: skip
def test_an_absurd_size_is_refused_naming_the_option_and_the_bytes(
    args, starts, tmp_path: Path, matrix: Path
) -> None:
    before = _tree(tmp_path)
    result = run_main(*(a.replace("{tmp}", str(tmp_path)) for a in args))
    message = _refused(result, starts)
    assert "bytes)" in message and "this machine has available; expected" in message
    assert _tree(tmp_path) == before


def test_the_limit_is_what_the_machine_has(monkeypatch: pytest.MonkeyPatch) -> None:
    # The same small placement (some 60 KB) fits, then not once the machine has 10 KiB left.
    assert run_main(*PLACE, "--json").code == 0
    monkeypatch.setattr(memory, "available_memory", lambda: 10 * 2**10)
    message = _refused(run_main(*PLACE, "--json"), "--synthetic binary:parts=8x8: needs about")
    assert message.endswith("more than the 10.0 KiB this machine has available; expected fewer "
                            "partitions (parts=) or steps (steps=)")  # fmt: skip


def test_a_trace_file_too_big_to_place_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from grapeshot.model.synthetic import synthetic_workload
    from grapeshot.model.workload_file import save_workload

    path = tmp_path / "w.h5"
    save_workload(path, synthetic_workload("binary:parts=8x8,steps=4"))
    monkeypatch.setattr(memory, "available_memory", lambda: 100)
    args = ("place", "--machine", "plafrim", "--nodes", "2", "--trace", str(path))
    _refused(run_main(*args), f"--trace {path}: needs about")


# --- progress -----------------------------------------------------------------------------


def _on_a_terminal(monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], console: str) -> str:
    """What ``grapeshot ARGS`` draws on standard error: nothing off a terminal (a pipe, a
    log, these tests) and with ``--json``, checked here; on a terminal (``console``, the
    module's name for it, made one), returned."""
    quiet = run_main(*args)
    assert quiet.code == 0 and quiet.err == ""
    screen = io.StringIO()
    monkeypatch.setattr(console, Console(file=screen, force_terminal=True, width=120))
    assert run_main(*args, "--json").code == 0  # --json: for scripts, never a spinner
    assert screen.getvalue() == ""
    assert run_main(*args).code == 0
    return screen.getvalue()


def test_long_work_shows_its_stage_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    shown = _on_a_terminal(monkeypatch, PLACE, "grapeshot.cli.output.err_console")
    assert "building the workload" in shown
    assert "placing 64 partitions (birdshot) and measuring the placement" in shown


def test_a_simulation_shows_its_share_done_on_a_terminal_only(monkeypatch) -> None:
    """One run (no sweep) also shows a bar: the kernel stops now and then to report."""
    monkeypatch.setattr("grapeshot.sim.engine.POPS_PER_CALL", 50)
    args = ("simulate", "--machine", "plafrim", "--nodes", "2", "--synthetic",
            "binary:parts=8x8,steps=6", "--strategy", "birdshot", "--no-figure")  # fmt: skip
    shown = _on_a_terminal(monkeypatch, args, "grapeshot.cli.simulate.err_console")
    assert "simulating birdshot" in shown and "100%" in shown
    assert re.search(r"\D[1-9][0-9]?%", shown), shown  # a share of the run, mid-run


# --- under mpiexec ------------------------------------------------------------------------


@pytest.mark.mpi
@pytest.mark.parametrize(
    ("extra", "starts"),
    [
        (("--record", f"{UNWRITABLE}/x.h5"), "--record /proc/x.h5: cannot create files in /proc"),
        (("--timeline", UNDER_ROOT), f"--timeline {UNDER_ROOT}: would create the folder"),
        (("--cells", "1000000"), "--parts 4,4 --cells 1000000: needs about"),
    ],
)
def test_run_refuses_on_every_rank_before_the_program_is_built(extra, starts) -> None:
    from tests.mpi_harness import run_mpi

    args = ["-m", "grapeshot.cli.main", "run", "swe", "--parts", "4,4", "--steps", "400",
            "--timeout", "60", *extra]  # fmt: skip
    proc = run_mpi(2, args, check=False)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"grapeshot: error: {starts}"), proc.stderr
    assert proc.stdout == ""
    assert not Path("/grapeshot-no-such-top-folder").exists()


def test_an_allocation_no_estimate_foresaw_still_ends_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A user's own program has no known footprint: its MemoryError is one line, not a trace.
    def allocate(*args: object) -> None:
        raise MemoryError("Unable to allocate 74.5 GiB for an array with shape (100000, 100000)")

    monkeypatch.setattr("grapeshot.cli.place.open_workload", allocate)
    message = _refused(run_main(*PLACE), "out of memory (MemoryError: Unable to allocate 74.5 GiB")
    assert message.endswith("expected smaller sizes (--parts, --cells, a SPEC's parts= or "
                            "steps=) or more memory")  # fmt: skip
