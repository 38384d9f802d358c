"""A user's own program where a built-in app name goes: ``FILE.py:FACTORY``,
``package.module:FACTORY``, or the name of an installed app.

The factory is called ``FACTORY(parts=(px, py[, pz]), cells=(nx, ...) or None, seed=S)``
(and ``scene=NAME`` when the command line gives ``--scene`` and the factory takes it) and
must return a :class:`~grapeshot.model.program.Program` with those partitions. Installed
packages register apps under the entry-point group ``grapeshot.apps``::

    [project.entry-points."grapeshot.apps"]
    heat = "myheat.program:make_heat"

Everything that can go wrong in the user's module (the file is missing, its import fails,
there is no such factory, the factory raises or returns something else) is an
:class:`~grapeshot.model.errors.InputError` naming the file and the factory; every MPI rank
loads the module, meets the same error, and the command line prints it once.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
import traceback
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from grapeshot.model.errors import InputError, exception_line

#: The entry-point group installed packages register their apps under.
ENTRY_POINT_GROUP = "grapeshot.apps"


@dataclass(frozen=True)
class UserApp:
    """A factory found in a user's module.

    Attributes
    ----------
    spec
        What the user wrote (``heat.py:make_heat``); the first words of every error.
    factory
        The callable.
    name
        A short name for titles and records (the factory's module stem).
    """

    spec: str
    factory: Any
    name: str

    def make_program(
        self,
        parts: tuple[int, ...],
        cells: tuple[int, ...] | None,
        seed: int,
        scene: str | None = None,
    ) -> Any:
        """Call the factory and check the :class:`~grapeshot.model.program.Program` it
        returns (see the module)."""
        from grapeshot.model.program import Program  # numpy: not for `run --help`

        kwargs: dict[str, Any] = {"parts": tuple(parts), "cells": cells, "seed": seed}
        if scene is not None:
            if not _takes(self.factory, "scene"):
                raise InputError(
                    "--scene",
                    f"{self.spec} takes no scene",
                    "no --scene, or a factory with a scene= parameter",
                )
            kwargs["scene"] = scene
        call = f"{_name(self.factory)}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})"
        try:
            program = self.factory(**kwargs)
        except InputError:
            raise
        except Exception as exc:
            raise InputError(self.spec, f"{call} raised {exception_line(exc)}", None) from None
        if not isinstance(program, Program):
            raise InputError(
                self.spec,
                f"{call} returned {type(program).__name__}",
                "a grapeshot.model.program.Program (docs/program-api.md)",
            )
        if tuple(program.parts_shape) != tuple(parts):
            raise InputError(
                self.spec,
                f"{call} returned a program of partitions {tuple(program.parts_shape)}",
                f"the partitions asked for, {tuple(parts)}",
            )
        if not program.phases:
            raise InputError(self.spec, f"{call} returned a program without phases", None)
        program.origin = self.spec
        if not program.name or program.name == Program.name:
            program.name = self.name
        return program


def is_user_app(app: str) -> bool:
    """Whether ``app`` names a factory (``...:FACTORY``) rather than a registered name."""
    return ":" in app


@cache
def installed_apps() -> dict[str, str]:
    """``{name: "module:factory"}`` of the apps installed packages register."""
    from importlib.metadata import entry_points

    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def load_user_app(app: str) -> UserApp:
    """The factory ``app`` names: ``FILE.py:FACTORY``, ``package.module:FACTORY`` or the name
    of an installed app (:func:`installed_apps`).

    Raises
    ------
    InputError
        Naming the file (or module) and the factory, for everything that stops the load.
    """
    spec = installed_apps().get(app, app)
    factory, target = load_object(
        spec,
        option="--app",
        expected="FILE.py:FACTORY or package.module:FACTORY (a factory returning a Program)",
        kind=inspect.isfunction,
        wanted="a function {name}(parts=, cells=, seed=) returning a Program",
    )
    return UserApp(spec, factory, Path(target).stem if target.endswith(".py") else target)


def load_object(
    spec: str, *, option: str, expected: str, kind: Any, wanted: str
) -> tuple[Any, str]:
    """The callable ``spec`` names (``FILE.py:NAME`` or ``package.module:NAME``) and the file
    or module part of ``spec``.

    ``option`` and ``expected`` word the refusal of a malformed spec; ``kind`` (e.g.
    ``inspect.isclass``) picks the names listed when ``NAME`` is missing, and ``wanted``
    (with ``{name}``) says what ``NAME`` should be.

    Raises
    ------
    InputError
        Naming the file (or module) and the name, for everything that stops the load.
    """
    target, sep, name = spec.rpartition(":")
    if not sep or not target or not name.isidentifier():
        raise InputError(option, f"got {spec!r}", expected)
    if target.endswith(".py") or "/" in target or "\\" in target:
        module = _import_file(Path(target), spec)
    else:
        module = _import_module(target, spec)
    found = getattr(module, name, None)
    if found is None or not callable(found):
        defined = sorted(n for n, v in vars(module).items() if kind(v) and not n.startswith("_"))
        raise InputError(
            spec,
            f"{target} has no {'callable ' if found is not None else ''}{name}",
            wanted.format(name=name) + (f"; it defines {', '.join(defined)}" if defined else ""),
        )
    return found, target


def _import_file(path: Path, spec: str) -> Any:
    if not path.is_file():
        raise InputError(
            spec, f"no file {path}", f"a Python file defining {spec.rpartition(':')[2]}"
        )
    resolved = path.resolve()
    name = _module_name(resolved)
    if name in sys.modules:
        return sys.modules[name]
    found = importlib.util.spec_from_file_location(name, resolved)
    if found is None or found.loader is None:
        raise InputError(spec, f"cannot import {path}", "a Python file (.py)")
    module = importlib.util.module_from_spec(found)
    sys.modules[name] = module
    # Imports next to the file work as they would for `python FILE.py`.
    folder = str(resolved.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        found.loader.exec_module(module)
    except BaseException as exc:
        del sys.modules[name]
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        raise InputError(spec, f"importing {path} failed: {_where(exc, resolved)}", None) from None
    return module


def _module_name(path: Path) -> str:
    """The name ``path`` is imported under: its stem, as ``import heat`` next to it would
    name it, so that numba's on-disk cache (which rebuilds a cached function's module by
    name) serves the user's own scripts and grapeshot alike; a mangled name when the stem is
    taken by another module (``random.py``) or is not an identifier."""
    stem = path.stem
    taken = sys.modules.get(stem)
    if taken is not None:
        same = getattr(taken, "__file__", None) and Path(taken.__file__).resolve() == path
        return stem if same else _mangled(path)
    if not stem.isidentifier():
        return _mangled(path)
    try:
        found = importlib.util.find_spec(stem)
    except (ImportError, ValueError):
        found = None
    if found is not None and (found.origin is None or Path(found.origin).resolve() != path):
        return _mangled(path)
    return stem


def _mangled(path: Path) -> str:
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    return f"_grapeshot_app_{_identifier(path.stem)}_{digest}"


def _import_module(name: str, spec: str) -> Any:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and name.startswith(exc.name):
            raise InputError(
                spec, f"no module {name}", "an installed module, or FILE.py:FACTORY"
            ) from None
        raise InputError(spec, f"importing {name} failed: {exception_line(exc)}", None) from None
    except Exception as exc:
        raise InputError(spec, f"importing {name} failed: {exception_line(exc)}", None) from None


def _where(exc: BaseException, path: Path) -> str:
    """``Type: message (line N)``, N the last line of ``path`` the traceback passed through."""
    line = None
    if isinstance(exc, SyntaxError) and exc.filename and Path(exc.filename) == path:
        line = exc.lineno
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename) == path:
            line = frame.lineno
    return exception_line(exc) + (f" (line {line})" if line is not None else "")


def _identifier(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text)


def _name(factory: Any) -> str:
    return getattr(factory, "__name__", type(factory).__name__)


def _takes(factory: Any, keyword: str) -> bool:
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False
    return keyword in params or any(p.kind is p.VAR_KEYWORD for p in params.values())
