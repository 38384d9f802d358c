"""Shared pytest configuration. Tests never read a clock to decide pass or fail: timing
claims live in ``benchmarks/`` as ratios against a baseline measured in the same run.

Two lanes (see the Makefile): ``make test-fast`` runs the tests that start no process and are
not ``slow``, in parallel; ``make test`` runs every test without a process in parallel too,
then the process-starting ones one at a time (MPI ranks on 2 cores time out when two runs
share them). Which lane a test belongs to is found here, at collection, from the test's code
rather than from a list kept by hand:

- ``mpi``: the test (or a fixture or module helper it calls) uses :mod:`tests.mpi_harness`
  (``run_mpi``, ``mpiexec``), or carries the marker already;
- ``process``: any ``mpi`` test, and any that uses :mod:`subprocess` the same way.

A test whose command starts processes from ``src/`` (which the scan does not follow) carries
the marker in its file. ``slow`` comes from measured durations, the one list kept in a file
(``tests/slow.txt``, rewritten by ``make slow-list``): a test's code does not say its speed.

A process started by project code during a test the scan left unmarked (a command that
launches ``mpiexec`` itself, say) fails that test, naming the command, so the fast lane's
"no process started" stays true as tests are added.
"""

from __future__ import annotations

import dis
import importlib
import inspect
import subprocess
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

SHM = Path("/dev/shm")
ROOT = Path(__file__).resolve().parents[1]

#: Names whose use in a test's code means it starts MPI ranks (``tests/mpi_harness.py``).
MPI_NAMES = frozenset({"mpi_harness", "run_mpi", "mpiexec"})
#: Names whose use means it starts some other process.
PROCESS_NAMES = frozenset({"subprocess", "Popen", "check_output"})


_IMPORT_FROM = dis.opmap["IMPORT_FROM"]


def _code_names(code: types.CodeType) -> Iterator[tuple[str, object]]:
    """Every global or attribute name a code object and its nested code (lambdas,
    comprehensions, inner functions) refer to, with what a ``from tests.x import name``
    inside the function binds it to (``None`` for other names)."""
    module = ""
    if _IMPORT_FROM in code.co_code[::2]:  # opcodes sit at even offsets; dis only then (slow)
        for ins in dis.get_instructions(code):
            if ins.opname == "IMPORT_NAME":
                module = str(ins.argval)
            elif ins.opname == "IMPORT_FROM" and module.split(".")[0] == "tests":
                yield ins.argval, getattr(importlib.import_module(module), ins.argval, None)
    for name in code.co_names:
        yield name, None
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_names(const)


def _ours(obj: object) -> bool:
    """Whether ``obj`` is a function or class defined in this ``tests`` package."""
    return getattr(obj, "__module__", "").split(".")[0] == "tests" and (
        inspect.isfunction(obj) or inspect.isclass(obj)
    )


def _uses(func: Callable[..., Any], seen: dict[object, frozenset[str]]) -> frozenset[str]:
    """The markers ``func`` needs: the names it uses, and those of the test helpers it calls
    (recursively, through module globals; each function scanned once)."""
    func = getattr(inspect.unwrap(func), "__func__", func)  # a method: its function, once
    if func in seen:
        return seen[func]
    seen[func] = frozenset()  # a cycle through helpers adds nothing new
    found: set[str] = set()
    codes = []
    if inspect.isclass(func):
        codes = [f.__code__ for f in vars(func).values() if inspect.isfunction(f)]
        scope: dict[str, Any] = vars(sys.modules.get(func.__module__, types.ModuleType("?")))
    elif hasattr(func, "__code__"):
        codes = [func.__code__]
        scope = func.__globals__
    else:
        return seen[func]
    for code in codes:
        for name, imported in _code_names(code):
            if name in MPI_NAMES:
                found.add("mpi")
            elif name in PROCESS_NAMES:
                found.add("process")
            target = scope.get(name) if imported is None else imported
            if target is not None and target is not func and _ours(target):
                found |= _uses(target, seen)
    seen[func] = frozenset(found)
    return seen[func]


def _needs(item: pytest.Item, seen: dict[object, frozenset[str]]) -> frozenset[str]:
    found: set[str] = set()
    if isinstance(item, pytest.Function):
        found |= _uses(item.obj, seen)
        for defs in item._fixtureinfo.name2fixturedefs.values():
            for fixturedef in defs:
                # This module's own guards watch processes; they start none.
                if _ours(fixturedef.func) and fixturedef.func.__module__ != __name__:
                    found |= _uses(fixturedef.func, seen)
    if item.get_closest_marker("mpi") is not None:
        found.add("mpi")
    if "mpi" in found:
        found.add("process")
    return frozenset(found)


#: pytest-timeout's net for a test that starts processes (pyproject's 300 s for the others).
PROCESS_TIMEOUT_S = 900

#: Tests measured to take seconds in one process (``make slow-list`` writes it): a test id, or a
#: module's path for all its tests (when a shared fixture is what takes the time).
SLOW_LIST = Path(__file__).with_name("slow.txt")
#: What counts as slow, in seconds of one test's setup, call and teardown on this machine.
SLOW_SECONDS = 2.0


def _slow_ids() -> frozenset[str]:
    if not SLOW_LIST.is_file():
        return frozenset()
    lines = SLOW_LIST.read_text(encoding="utf-8").splitlines()
    return frozenset(x.strip() for x in lines if x.strip() and not x.startswith("#"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--write-slow", metavar="PATH", default=None,
        help=f"write the ids of the tests that took over {SLOW_SECONDS} s to PATH",
    )  # fmt: skip


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test that starts a process (``process``) or MPI ranks (``mpi``), and the
    ones :data:`SLOW_LIST` names (``slow``)."""
    seen: dict[object, frozenset[str]] = {}
    slow = _slow_ids()
    for item in items:
        needs = set(_needs(item, seen))
        if {item.nodeid, item.nodeid.split("[")[0], item.nodeid.split("::")[0]} & slow:
            needs.add("slow")
        for marker in sorted(needs):
            if item.get_closest_marker(marker) is None:
                item.add_marker(marker)
        if "process" in needs and item.get_closest_marker("timeout") is None:
            # Several runs, each with its own deadline (tests/mpi_harness.py): a wider net.
            item.add_marker(pytest.mark.timeout(PROCESS_TIMEOUT_S))


_durations: dict[str, dict[str, float]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Keep each test's phase durations for ``--write-slow`` (on xdist's controller too)."""
    _durations.setdefault(report.nodeid, {})[report.when] = report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = session.config.getoption("--write-slow")
    if path is None or hasattr(session.config, "workerinput"):
        return
    slow: set[str] = set()
    for nodeid, phases in _durations.items():
        if phases.get("setup", 0.0) > SLOW_SECONDS:  # a shared fixture: its whole module
            slow.add(nodeid.split("::")[0])
        elif sum(phases.values()) > SLOW_SECONDS:
            slow.add(nodeid)
    slow = {x for x in slow if "::" not in x or x.split("::")[0] not in slow}
    head = (
        f"# Tests over {SLOW_SECONDS:g} s in one process: `make test-fast` leaves them out.\n"
        "# Written by `make slow-list`; a line is a test id, or a module (a slow shared fixture).\n"
    )
    Path(path).write_text(head + "".join(f"{x}\n" for x in sorted(slow)), encoding="utf-8")


#: What the code under test starts of its own: every in-process ``grapeshot run`` starts the
#: runtime's watchdog (a small process that ends an orphaned rank), part of what is tested.
OWN_HELPERS = ("grapeshot.runtime.lifeline",)


def _started_by_project_code(args: Any) -> bool:
    """Whether the ``Popen`` being made was asked for by this repository's code (the tests or
    ``src/``), not by a library's own probing (``ctypes.util.find_library`` runs ``ldconfig``)
    nor as one of :data:`OWN_HELPERS`."""
    if not isinstance(args, str) and any(str(a) in OWN_HELPERS for a in args):
        return False
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename == subprocess.__file__:
        frame = frame.f_back
    return frame is not None and Path(frame.f_code.co_filename).resolve().is_relative_to(ROOT)


@pytest.fixture(autouse=True)
def _no_unmarked_process(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test the scan left unmarked that starts a process anyway (through a command of
    ``src/`` that launches one, say): mark it ``process`` by hand, or call a helper the scan
    sees."""
    if request.node.get_closest_marker("process") is not None:
        yield
        return
    started: list[str] = []
    original = subprocess.Popen.__init__

    def recording(self: subprocess.Popen[Any], args: Any, *rest: Any, **kw: Any) -> None:
        if _started_by_project_code(args):
            started.append(args if isinstance(args, str) else " ".join(map(str, args)))
        original(self, args, *rest, **kw)

    subprocess.Popen.__init__ = recording  # type: ignore[method-assign]
    try:
        yield
    finally:
        subprocess.Popen.__init__ = original  # type: ignore[method-assign]
    if started:
        pytest.fail(
            f"started a process but is not marked `process` (tests/conftest.py): {started[0]}",
            pytrace=False,
        )


def _mpich_segments() -> set[str]:
    return {p.name for p in SHM.glob("mpich_shm_*")} if SHM.is_dir() else set()


@pytest.fixture(autouse=True)
def _remove_mpich_segments_of_killed_runs(request: pytest.FixtureRequest) -> Iterator[None]:
    """A run whose ranks are killed (the tests of failures, timeouts and dead ranks do it on
    purpose) leaves MPICH's shared-memory segment in /dev/shm, as any killed MPI job does;
    remove the ones a test made, once its processes are gone (the ``mpi`` tests run one at a
    time, never beside each other: the Makefile runs them serially after the parallel lane)."""
    if request.node.get_closest_marker("mpi") is None:
        yield
        return
    before = _mpich_segments()
    yield
    for name in _mpich_segments() - before:
        (SHM / name).unlink(missing_ok=True)
