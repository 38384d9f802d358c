"""A user's own program where a built-in app name goes: ``FILE.py:FACTORY``,
``package.module:FACTORY``, or the name of an installed app.

The factory is called ``FACTORY(parts=(px, py[, pz]), cells=(nx, ...) or None, seed=S)``
(and ``scene=NAME`` when the command line gives ``--scene`` and the factory takes it) and
must return a :class:`~grapeshot.model.program.Program` with those partitions and cells.
Before any executor builds the partitions, one of them is built (its ``init_block``) to check
the program's grid fields against ``--parts`` and to size the run: a program with other axes
than the grid asked for, or needing more memory than the machine has, is refused in one line.
Installed packages register apps under the entry-point group ``grapeshot.apps``::

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
from grapeshot.model.memory import check_user_program_memory

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
        *,
        steps: int = 0,
        share: float | None = None,
    ) -> Any:
        """Call the factory, check the :class:`~grapeshot.model.program.Program` it returns
        against ``parts`` and ``cells``, and size it from one partition (see the module).

        Parameters
        ----------
        parts, cells
            Partitions and cells per axis (``--parts``, ``--cells``; ``cells=None``: the
            factory's default).
        seed, scene
            Passed on to the factory (``scene`` only when given).
        steps
            Steps the run records, counted in its memory.
        share
            The part of the partitions this machine holds (``L / N`` for ``L`` of ``N``
            ranks on it), as :func:`grapeshot.model.memory.check_program_memory` takes it;
            ``None``: all of them, in this process or on this node.

        Raises
        ------
        InputError
            Naming the file and the factory, or the option the program does not follow.
        """
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
        _check_cells(program, parts, cells, self.spec)
        if not program.phases:
            raise InputError(self.spec, f"{call} returned a program without phases", None)
        program.origin = self.spec
        if not program.name or program.name == Program.name:
            program.name = self.name
        given = f"--parts {_listed(parts)}" + (
            "" if cells is None else f" --cells {_listed(cells)}"
        )
        block_bytes, output_bytes = _sample(program)
        check_user_program_memory(
            program.name, parts, steps, where=given, share=share,
            block_bytes=block_bytes, output_bytes=output_bytes,
        )  # fmt: skip
        return program


def _listed(sizes: tuple[int, ...]) -> str:
    return ",".join(str(int(n)) for n in sizes)


def _check_cells(program: Any, parts: tuple[int, ...], cells: Any, spec: str) -> None:
    """Refuse a program whose domain has other axes than ``--parts``, or other cells than
    ``--cells`` gave: the factory did not follow them."""
    domain = tuple(int(n) for n in program.domain_shape)
    if len(domain) != len(parts):
        raise InputError(
            "--cells" if cells is not None else "--parts",
            f"{spec} returned a {len(domain)}-D program (cells {domain}) for a "
            f"{len(parts)}-D grid of {tuple(parts)} partitions",
            _other_axes(len(domain)),
        )
    if cells is not None and domain != tuple(cells):
        raise InputError(
            "--cells",
            f"{spec} returned a program of cells {domain}",
            f"the cells asked for, {tuple(cells)} (the factory's domain_shape = cells)",
        )


def _sample(program: Any) -> tuple[int, int]:
    """Bytes of the largest partition's block and of its final fields, from one
    ``init_block`` and ``output_fields``; the block's grid fields checked on the way
    (:func:`_check_grid_fields`)."""
    from grapeshot.model.program import largest_box, make_block

    box = largest_box(program)
    block = make_block(program, box)
    _check_grid_fields(program, block, box)
    block_bytes = sum(int(getattr(a, "nbytes", 0)) for a in block.values())
    try:
        output = program.output_fields(block, box)
        output_bytes = sum(int(getattr(a, "nbytes", 0)) for a in output.values())
    except Exception:  # a program whose output needs a step first: the run will tell
        output_bytes = block_bytes
    return block_bytes, output_bytes


def _check_grid_fields(program: Any, block: dict, box: Any) -> None:
    """Refuse a block whose fields exchanged as grids do not start with the box's padded
    shape (what halos slice): with fewer axes than ``--parts``, a program of another
    dimension (one line naming ``--parts`` and the program's axes)."""
    ndim = len(box.padded_shape)
    for phase in program.phases:
        exchange = phase.exchange
        if exchange is None or exchange.pack is not None:
            continue
        for name in exchange.fields:
            shape = tuple(getattr(block[name], "shape", ()))
            if shape[:ndim] == box.padded_shape:
                continue
            if 1 <= len(shape) < ndim:
                raise InputError(
                    "--parts",
                    f"{program.origin} builds a {len(shape)}-D program (init_block's {name!r} "
                    f"has shape {shape}) for a {ndim}-D grid of {program.parts_shape} partitions",
                    _other_axes(len(shape)),
                )
            raise InputError(
                f"{program.origin}: partition {box.part}",
                f"init_block's {name!r}, exchanged by phase {phase.name!r}, has shape {shape}",
                f"a grid field starting with the padded shape {box.padded_shape} (cells "
                f"{box.shape} and {box.ghost} ghost layers a side)",
            )


def _other_axes(ndim: int) -> str:
    """What a program of ``ndim`` axes needs on the command line."""
    if ndim >= 2:
        return f"--parts (and --cells) with {ndim} values, one per axis of the program"
    return (
        "a 2-D or 3-D program: grapeshot runs 2-D and 3-D grids, not 1-D ones yet (one "
        "--parts value means a square 2-D grid; docs/program-api.md)"
    )


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
    # Under its own name too: numba's cache written by a run that imported the file under
    # that name (its stem was taken there) finds the module in this one.
    names = {name, _mangled(resolved)}
    for known in names:
        sys.modules.setdefault(known, module)
    # Imports next to the file work as they would for `python FILE.py`, but for modules
    # named like the standard library's.
    folder = str(resolved.parent)
    if folder not in sys.path:
        sys.path.insert(_after_stdlib(), folder)
    try:
        found.loader.exec_module(module)
    except BaseException as exc:
        for known in names:
            if sys.modules.get(known) is module:
                del sys.modules[known]
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        raise InputError(spec, f"importing {path} failed: {_where(exc, resolved)}", None) from None
    return module


def _after_stdlib() -> int:
    """Where a user's folder goes on ``sys.path``: right after the standard library's
    folders, so that a file beside the program named like a standard-library module
    (``wave.py``) never shadows it for the rest of the run (numba's, numpy's or the
    standard library's own imports of it), and before the installed packages'."""
    import sysconfig

    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    at = 0
    for i, entry in enumerate(sys.path):
        path = Path(entry or ".").resolve()
        inside = path == stdlib or path.is_relative_to(stdlib)
        zipped = path.suffix == ".zip" and path.parent == stdlib.parent  # python311.zip
        if (inside or zipped) and not {"site-packages", "dist-packages"} & set(path.parts):
            at = i + 1
    return at


def _module_name(path: Path) -> str:
    """The name ``path`` is imported under: its stem, as ``import heat`` next to it would
    name it, so that numba's on-disk cache (which rebuilds a cached function's module by
    name) serves the user's own scripts and grapeshot alike; a name of grapeshot's own
    (:func:`_mangled`) when the stem is taken by another module (``wave.py``, ``heapq.py``:
    the standard library's) or is not an identifier."""
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
    """``_grapeshot_app_<stem>_<hash of the file's bytes>``: what names the module is the
    file itself, not where it lies. numba's cache next to the file records this name and
    imports it again when it loads the kernels: in the next run, or from a copy of the
    folder with its cache (``cp -a``, ``rsync -a``, another mount of the same home), the
    file is imported under the same name. Another file of the same stem gets its own name
    (the same bytes elsewhere, in the same process: the module already imported); an edited
    file gets a new one, and numba compiles it afresh anyway."""
    try:
        data = path.read_bytes()
    except OSError:  # the import that follows says what is wrong with the file
        data = str(path).encode()
    digest = hashlib.sha256(data).hexdigest()[:12]
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
