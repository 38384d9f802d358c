"""Loading a user's Python object named by ``FILE.py:NAME`` or ``package.module:NAME``.

One importlib machinery for everything a user hands grapeshot as code: programs (``--app``,
:mod:`grapeshot.apps.user`) and job-scheduling policies (``--policies``,
:mod:`grapeshot.jobs.plugin`). A file is imported under its own stem where that name is free
(numba's on-disk cache finds the module again by name), its folder goes on ``sys.path``
after the standard library's, and everything that stops the load is an
:class:`~grapeshot.model.errors.InputError` naming the file (and the line) and the name.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
import traceback
from pathlib import Path
from typing import Any

from grapeshot.model.errors import InputError, exception_line


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
