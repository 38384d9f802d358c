"""A user's own program where a built-in app goes: `run --app`, `trace --app`, installed apps
(entry points), and every refusal one line with exit status 2, through the real entry point.
(Under mpiexec: tests/runtime/test_user_apps.py.)"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from grapeshot.apps.user import installed_apps, load_user_app
from grapeshot.model.errors import InputError
from grapeshot.model.workload_file import load_workload
from grapeshot.runtime.serial import run_serial
from tests.cli.helpers import run_main
from tests.mpi_harness import ROOT

HEAT = ROOT / "examples" / "program" / "heat.py"
APP = f"{HEAT}:make_heat"


def _refused(*args: str) -> str:
    result = run_main(*args)
    assert result.code == 2 and result.err.count("\n") == 1, result.err
    return result.error


def test_run_takes_a_file_factory_as_app_or_with_app() -> None:
    digest = run_serial(load_user_app(APP).make_program((4, 4), (48, 48), 0), 3).digest()
    for args in (["--app", APP], [APP]):
        result = run_main(
            "run", *args, "--parts", "4,4", "--cells", "48,48", "--steps", "3", "--json"
        )
        assert result.code == 0, result.err
        summary = json.loads(result.out)
        assert summary["fields_digest"] == digest and summary["app"] == "heat"
        assert summary["setup_seconds"] > 0 and summary["gather_seconds"] >= 0


def test_the_table_says_set_up_and_gathering() -> None:
    result = run_main("run", "--app", APP, "--parts", "2,2", "--cells", "16,16", "--steps", "1")
    assert result.code == 0, result.err
    assert result.out.startswith("heat torch, 32 substeps: 4 partitions on 1 rank")
    assert "set-up" in result.out and "gathering" in result.out


def test_trace_records_a_user_program(tmp_path: Path) -> None:
    out = tmp_path / "heat.h5"
    result = run_main(
        "trace", "--app", APP, "--parts", "4,4", "--cells", "64,64", "--steps", "4",
        "--units", "work", "--out", str(out), "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    workload = load_workload(out)
    assert workload.parts_shape == (4, 4) and workload.n_steps == 4 and workload.app == "heat"
    # Work units: one per cell and one per source substep of each burning cell.
    assert (workload.cost >= 16 * 16).all() and (workload.cost > 16 * 16).any()
    # Faces only: no partition exchanges with a diagonal neighbour.
    assert workload.halo.nbytes.size == 2 * (2 * 4 * 3)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--app", "nofile.py:make"], "nofile.py:make: no file nofile.py"),
        (["run", "--app", f"{HEAT}:nothing"], "has no nothing; expected a function nothing(parts="),
        (["run", "--app", f"{HEAT}:make_heat", "--scene", "x"], "--scene: "),
        (["run", "swe", "--app", APP], "--app: given with APP 'swe'"),
        (["run"], "APP: missing"),
        (["run", "heat"], "APP: unknown app 'heat'; expected one of sph"),
        (["run", "--app", "no_such_module_xyz:make"], "no module no_such_module_xyz"),
        (["run", "--app", "os.path:join", "--parts", "2,2"], "os.path:join: join(parts=(2, 2)"),
        (["run", "--app", "collections:OrderedDict"], "returned OrderedDict; expected a grapeshot"),
        (["run", "--app", f"{HEAT}:make_heat", "--parts", "2,2,2"], "the heat plate is 2-D"),
        (["trace", "--app", APP, "--parts", "2,2", "--steps", "1"], "--out: missing"),
        (["trace", "swe", "--parts", "2,2", "--steps", "1", "--out", "x.h5"], "--scene: missing"),
    ],
)
def test_a_mistake_is_one_line(args, message, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert message in _refused(*args)


def test_a_module_that_fails_to_import_names_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "broken.py"
    bad.write_text("import numpy\n\ndef make(parts, cells, seed):\n    return undefined_name\n"
                   "raise ImportError('no such library: libheat')\n")  # fmt: skip
    message = _refused("run", "--app", f"{bad}:make")
    assert f"{bad}:make: importing {bad} failed: ImportError: no such library: libheat" in message
    assert "(line 5)" in message


def test_a_kernel_that_raises_under_the_serial_executor(tmp_path: Path) -> None:
    from tests.runtime.test_user_apps import KERNEL_RAISES

    bad = tmp_path / "bad.py"
    bad.write_text(KERNEL_RAISES)
    message = _refused(
        "run", "--app", f"{bad}:make", "--parts", "4,4", "--steps", "3", "--executor", "serial"
    )
    assert "bad.py:make: partition 5, step 2, phase 'diffuse' failed: ValueError" in message


BROKEN_KERNEL = """
import numpy as np
from numba import njit
from grapeshot.model.program import Phase, Program

@njit(cache=False, nogil=True)
def kernel(u, box, params):
    return u[0, 0][1]  # a float has no item: numba refuses to compile

class Broken(Program):
    def __init__(self, parts, cells):
        self.parts_shape, self.domain_shape = parts, cells or (16, 16)
        self.phases = (Phase("diffuse", kernel, fields=("u",)),)
    def init_block(self, box):
        return {"u": np.zeros(box.padded_shape)}
    def output_fields(self, block, box):
        return {"u": block["u"][box.interior()].copy()}

def make(parts, cells=None, seed=0):
    return Broken(parts, cells)
"""


@pytest.mark.parametrize(
    ("executor", "message"),
    [
        ("task", "broken.py:make: phase 'diffuse': numba cannot compile its kernel: TypingError"),
        ("serial", "broken.py:make: partition 0, step 0, phase 'diffuse' failed: TypingError"),
    ],
)
def test_a_kernel_numba_cannot_compile_is_one_line(tmp_path, executor, message) -> None:
    bad = tmp_path / "broken.py"
    bad.write_text(BROKEN_KERNEL)
    error = _refused("run", "--app", f"{bad}:make", "--steps", "1", "--executor", executor)
    assert message in error and "getitem" in error and len(error) < 600


@pytest.fixture
def installed(tmp_path: Path, monkeypatch):
    """An installed package (a dist-info folder on sys.path) registering app ``myheat``."""
    (tmp_path / "myheat.py").write_text(
        "import importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('heat_example', {str(HEAT)!r})\n"
        "heat = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(heat)\n"
        "make = heat.make_heat\n"
    )
    info = tmp_path / "myheat-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: myheat\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[grapeshot.apps]\nmyheat = myheat:make\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    installed_apps.cache_clear()
    yield
    installed_apps.cache_clear()
    sys.modules.pop("myheat", None)


def test_an_installed_app_is_listed_and_runs(installed) -> None:
    assert installed_apps() == {"myheat": "myheat:make"}
    assert "myheat (myheat:make)" in run_main("run", "--help").out
    result = run_main("run", "myheat", "--parts", "2,2", "--cells", "16,16", "--steps", "2")
    assert result.code == 0, result.err
    assert "heat torch" in result.out


def test_the_factory_contract() -> None:
    app = load_user_app(APP)
    program = app.make_program((3, 2), None, seed=5)
    assert program.parts_shape == (3, 2) and program.origin == APP
    with pytest.raises(InputError, match="takes no scene"):
        app.make_program((3, 2), None, seed=5, scene="x")
    with pytest.raises(InputError, match=r"--app: got 'heat\.py'"):
        load_user_app("heat.py")
