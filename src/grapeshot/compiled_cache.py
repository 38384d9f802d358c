"""Keep numba's on-disk cache of grapeshot's compiled functions in step with their sources.

numba checks a cached function against the file that defines it only (a SHA-256 of its
contents, numba 0.68). A compiled function inlines or calls functions of other modules (the
simulator's kernel calls :mod:`grapeshot.sim.events`, the apps' batches call
:mod:`grapeshot.model.task_halos`): after one of *those* files changes (a ``git pull``, a
``pip install --upgrade`` over an old install, which leaves the ``.nbi``/``.nbc`` files
behind), numba would load the old machine code and compute with it, silently.

:func:`refresh` runs once, when :mod:`grapeshot` is imported, before any compiled function
loads. It compares the package's sources with a stamp written the last time:

- the sizes and modification times of every ``.py`` file (a few milliseconds of ``stat``):
  equal, nothing more is done;
- otherwise each file's SHA-256: the files whose contents changed (or went) and every file
  that imports one of them, directly or through others (``import grapeshot...`` and ``from
  grapeshot... import`` lines), are the stale ones; the cached ``.nbi``/``.nbc`` of each
  stale file that uses numba is deleted (in the source tree's ``__pycache__`` and in numba's
  other cache directories, ``NUMBA_CACHE_DIR`` or the user-wide one), so its functions
  compile again at their first call, once. Editing the simulator leaves the apps' compiled
  kernels alone; editing a module of constants a kernel reads does not.

A file outside the package (a user's program, its helpers, a test or benchmark module)
whose cached functions call grapeshot's (a ``Batch`` calling
:func:`~grapeshot.model.task_halos.task_begins`, a kernel reading the clock) has the same
hazard, and no stamp of this package to compare with: there numba's cache locators are
wrapped (:func:`_stamp_callers`) so that such a file's *source stamp*, which numba keeps in
the cache's index and compares before loading, holds :func:`sources_digest` of the grapeshot
modules the file imports besides the file's own stamp. Changed grapeshot modules make the
index stale, and numba compiles afresh (and overwrites it) as after an edit of the file.

The runtime's generated batches (:mod:`grapeshot.runtime.plain_batch`: small modules written
into :func:`cache_dir`, compiled with numba's cache) follow the same rule. Each one's name
carries :func:`sources_digest` of the grapeshot modules it imports (and of what those import),
so a batch never runs code of another grapeshot than the one loading it, even when two
installs share the folder; and :func:`refresh` deletes the batches (and their cached machine
code) that import a module found stale, so the folder does not keep them for ever.

Ranks starting together take a file lock for the comparison, so one of them clears while the
others wait, and none reads a cache being cleared. Where nothing can be written (a read-only
install), nothing is done: numba cannot cache there either.

One more hazard is numba's, not the sources': the machine code of a function names the
functions it calls by symbol, and numba makes each symbol unique within a process with a
counter that starts at 1 in every process (numba issue #10486). Two cached functions compiled
by two processes (two MPI ranks, two test workers) can then both contain a *different* helper
under one name, e.g. the quicksort closure behind ``np.argsort`` at the same count; a process
that loads both links each call to whichever copy it loaded first, and computes silently with
the other's code. It happened: SPH's halo packing sorted its particles in another order after
``place --ranks`` had loaded the rank splitter, and its fields changed. :func:`distinct_symbols`
starts this process's counter at a random 48-bit offset (names only: no result depends on it),
so the symbols of two processes' caches do not meet; :data:`SCHEME` in the stamp makes
:func:`refresh` clear the caches written before, whose counters started at 1.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.abc
import importlib.machinery
import itertools
import json
import os
import re
import sys
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path
from types import ModuleType

#: The package's sources.
PACKAGE = Path(__file__).resolve().parent

#: Where the stamp lives (beside the package's own byte code).
STAMP = PACKAGE / "__pycache__" / "compiled-sources.json"

#: How the cached code was named: a stamp of another scheme clears every cache once (2: each
#: process's numba symbols counted from a random offset, :func:`distinct_symbols`).
SCHEME = 2

#: The numba module whose counter names the compiled functions' symbols.
_IDENTITY_MODULE = "numba.core.bytecode"


def cache_dir() -> Path:
    """Where generated batch modules live: ``$GRAPESHOT_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/grapeshot`` (default ``~/.cache/grapeshot``), then ``batches/``."""
    root = os.environ.get("GRAPESHOT_CACHE_DIR")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = str(Path(base) / "grapeshot")
    return Path(root) / "batches"


def _sources(root: Path) -> list[tuple[str, int, int]]:
    """``(path relative to root, size, modification time ns)`` of every ``.py`` file under
    ``root`` (``__pycache__`` excluded), sorted: one ``stat`` each, without ``Path``
    objects (this runs at every import)."""
    found = []
    todo = [str(root)]
    while todo:
        with os.scandir(todo.pop()) as entries:
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    if e.name != "__pycache__":
                        todo.append(e.path)
                elif e.name.endswith(".py"):
                    st = e.stat()
                    found.append((os.path.relpath(e.path, root), st.st_size, st.st_mtime_ns))
    found.sort()
    return found


def _stat_key(files: list[tuple[str, int, int]]) -> str:
    """A digest of the naming scheme and the files' relative paths, sizes and modification
    times."""
    return hashlib.sha256(repr((SCHEME, files)).encode()).hexdigest()


def _import_lines(package: str) -> re.Pattern[bytes]:
    """A line importing a module of ``package``: ``import P.x`` or ``from P.x import a, b``
    (the names, to the end of the statement, may be submodules)."""
    name = re.escape(package.encode()) + rb"(?:\.\w+)*"
    return re.compile(
        rb"^[ \t]*(?:import[ \t]+(" + name + rb")|from[ \t]+(" + name + rb")[ \t]+import"
        rb"[ \t]*(\([^)]*\)|[^\n]*))",
        re.MULTILINE,
    )


def _module(rel: str, package: str) -> str:
    """The dotted name of the file ``rel`` (relative to the package's directory)."""
    parts = rel[: -len(".py")].replace(os.sep, "/").split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


def _imports(text: bytes, lines: re.Pattern[bytes]) -> set[str]:
    """The package's modules (and, for ``from X import a``, the candidates ``X.a``) that
    ``text`` imports."""
    found = set()
    for m in lines.finditer(text):
        name = (m.group(1) or m.group(2)).decode()
        found.add(name)
        for word in re.findall(rb"\w+", m.group(3) or b""):
            found.add(f"{name}.{word.decode()}")
    return found


def _file_of(name: str, root: Path) -> Path | None:
    """The source file of the package's module ``name`` (dotted), or ``None``."""
    parts = name.split(".")[1:]
    for path in (root.joinpath(*parts).with_suffix(".py"), root.joinpath(*parts, "__init__.py")):
        if parts and path.is_file():
            return path
    return None


@cache
def _closure_digest(modules: tuple[str, ...], root: Path) -> str:
    package = root.name
    lines = _import_lines(package)
    texts: dict[str, bytes] = {}
    todo = list(modules)
    while todo:
        name = todo.pop()
        if name in texts:
            continue
        path = _file_of(name, root)
        texts[name] = b"" if path is None else path.read_bytes()
        todo.extend(_imports(texts[name], lines))
    digest = hashlib.sha256()
    for name in sorted(texts):
        if texts[name]:  # (``from X import a`` names an ``X.a`` that is not a module)
            digest.update(f"{name} {hashlib.sha256(texts[name]).hexdigest()}\n".encode())
    return digest.hexdigest()


def sources_digest(modules: Iterable[str], root: Path = PACKAGE) -> str:
    """SHA-256 (hex) of the sources of the package's ``modules`` (dotted names) and of every
    module of the package they import, directly or not: what code compiled from them runs.

    Read once per process and set of modules (the files do not change under a running
    process in any way numba would notice either).
    """
    return _closure_digest(tuple(sorted(set(modules))), root)


def _stale(
    files: list[tuple[str, int, int]], root: Path, last: dict
) -> tuple[list[Path], set[str] | None, dict]:
    """The files that use numba whose cached functions may be stale, the stale modules
    (dotted; ``None``: all of them), and every file's content digest (SHA-256, hex). With no
    digests from last time, all of them are stale."""
    texts = {rel: (root / rel).read_bytes() for rel, _, _ in files}
    digests = {rel: hashlib.sha256(text).hexdigest() for rel, text in texts.items()}
    uses_numba = [rel for rel, text in texts.items() if b"numba" in text]
    before = last.get("files")
    if not isinstance(before, dict):
        return [root / rel for rel in uses_numba], None, digests
    package = root.name
    module_of = {rel: _module(rel, package) for rel in texts}
    changed = {module_of[rel] for rel in texts if before.get(rel) != digests[rel]}
    changed |= {_module(rel, package) for rel in before if rel not in texts}  # gone
    lines = _import_lines(package)
    importers: dict[str, set[str]] = {}
    for rel, text in texts.items():
        for name in _imports(text, lines):
            importers.setdefault(name, set()).add(module_of[rel])
    stale, todo = set(changed), list(changed)
    while todo:  # whatever imports a stale module, directly or not, is stale
        for importer in importers.get(todo.pop(), ()):
            if importer not in stale:
                stale.add(importer)
                todo.append(importer)
    return [root / rel for rel in uses_numba if module_of[rel] in stale], stale, digests


def _cache_dirs(source: Path) -> list[Path]:
    """Every directory numba may have cached ``source``'s functions in (its locators)."""
    dirs = [source.parent / "__pycache__"]
    try:  # numba's own rule for the others (private: a numba without it has the tree's only)
        from numba.core import caching, config  # only when clearing: numba is slow to import

        subpath = caching._CacheLocator.get_suitable_cache_subpath(str(source))
        if config.CACHE_DIR:
            dirs.append(Path(config.CACHE_DIR) / subpath)
        user = caching.AppDirs(appname="numba", appauthor=False).user_cache_dir
        dirs.append(Path(user) / subpath)
    except (ImportError, AttributeError, TypeError):
        pass
    return dirs


def _clear(stale: list[Path]) -> int:
    """Delete the cached functions of the files ``stale``; how many cache files went."""
    n = 0
    for source in stale:
        for folder in _cache_dirs(source):
            for pattern in (f"{source.stem}.*.nbi", f"{source.stem}.*.nbc"):
                for f in folder.glob(pattern):
                    with contextlib.suppress(FileNotFoundError):
                        f.unlink()
                        n += 1
    return n


def _clear_batches(folder: Path, stale: set[str] | None, package: str) -> int:
    """Delete the generated batches in ``folder`` that import a module of ``stale`` (all of
    the package's batches when ``None``), with their cached machine code; how many files
    went."""
    lines = _import_lines(package)
    gone = []
    for path in folder.glob("*.py"):
        try:
            used = _imports(path.read_bytes(), lines)
        except OSError:  # another process deleted it meanwhile
            continue
        if used and (stale is None or used & stale):
            gone.append(path)
    n = _clear(gone)
    for path in gone:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            n += 1
    return n


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (created) for the body; no lock where flock is missing."""
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        try:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        except ImportError:  # not POSIX: no ranks starting together to guard against
            pass
        yield
    finally:
        os.close(fd)  # releases the lock


def _read(stamp: Path) -> dict:
    try:
        data = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def refresh(root: Path = PACKAGE, stamp: Path = STAMP, batches: Path | None = None) -> int:
    """Clear numba's cache of ``root``'s compiled functions if their sources changed, and the
    generated batches that import a changed module.

    Parameters
    ----------
    root
        The package's directory.
    stamp
        The JSON file holding the last comparison's digests (created; its directory too).
    batches
        The folder of generated batch modules; default :func:`cache_dir` for grapeshot's own
        package, none for another ``root``.

    Returns
    -------
    int
        Cache files deleted (0 when the sources are as last time, or nothing can be written).
    """
    try:
        files = _sources(root)
        stat_key = _stat_key(files)
        if _read(stamp).get("stat") == stat_key:
            return 0
        stamp.parent.mkdir(parents=True, exist_ok=True)
        with _locked(stamp.with_name(stamp.name + ".lock")):
            last = _read(stamp)
            if last.get("stat") == stat_key:  # another process compared meanwhile
                return 0
            from grapeshot.model.atomic import write_text_atomic  # rarely: not at every import

            if last.get("scheme") != SCHEME:  # code named the old way: all of it goes
                last = {}
            stale, modules, digests = _stale(files, root, last)
            deleted = _clear(stale)
            if batches is None and root == PACKAGE:
                batches = cache_dir()
            if batches is not None and batches.is_dir():
                deleted += _clear_batches(batches, modules, root.name)
            write_text_atomic(
                stamp, json.dumps({"scheme": SCHEME, "stat": stat_key, "files": digests})
            )
            return deleted
    except OSError:  # a read-only install: numba cannot write a cache there either
        return 0


def _offset_counter(module: ModuleType) -> None:
    """Start ``module.FunctionIdentity``'s symbol counter at a random 48-bit offset (about
    ``1e-9`` that two processes' first million symbols overlap)."""
    start = int.from_bytes(os.urandom(6), "little") | 1 << 48
    module.FunctionIdentity._unique_ids = itertools.count(start)


@cache
def _caller_digest(py_file: str) -> str | None:
    """:func:`sources_digest` of the grapeshot modules the file ``py_file`` imports, if it
    lies outside the package and imports some (``None`` otherwise)."""
    path = Path(py_file)
    try:
        if path.resolve().is_relative_to(PACKAGE):
            return None  # the package's own: refresh() keeps their caches in step
        text = path.read_bytes()
    except OSError:
        return None
    if PACKAGE.name.encode() not in text:
        return None
    used = _imports(text, _import_lines(PACKAGE.name))
    return sources_digest(used) if used else None


def _stamp_callers(caching: ModuleType) -> None:
    """Put before each of numba's source-file locators (``NUMBA_CACHE_DIR``'s, the source
    tree's, the user-wide one) a variant that serves only the files calling grapeshot
    (:func:`_caller_digest`) and adds the digest to their source stamp (see the module)."""

    def keyed(base: type) -> type:
        class Locator(base):  # type: ignore[valid-type, misc]
            def get_source_stamp(self):
                return (super().get_source_stamp(), _caller_digest(self._py_file))

            @classmethod
            def from_function(cls, py_func, py_file):
                if _caller_digest(py_file) is None:
                    return None
                return super().from_function(py_func, py_file)

        Locator.__name__ = Locator.__qualname__ = f"GrapeshotCaller{base.__name__}"
        return Locator

    if any(c.__name__.startswith("GrapeshotCaller") for c in caching.CacheImpl._locator_classes):
        return  # done already in this process
    classes: list[type] = []
    for base in caching.CacheImpl._locator_classes:
        if base.__name__ in _KEYED_LOCATORS:
            classes.append(keyed(base))
        classes.append(base)
    caching.CacheImpl._locator_classes = classes


#: numba's locators of functions defined in a source file (numba 0.68 names).
_KEYED_LOCATORS = ("UserProvidedCacheLocator", "InTreeCacheLocator", "UserWideCacheLocator")
#: What to do to which numba module once it is imported (:class:`_OnImport`).
_HOOKS = {_IDENTITY_MODULE: _offset_counter, "numba.core.caching": _stamp_callers}


class _OnImport(importlib.abc.MetaPathFinder):
    """Runs :data:`_HOOKS`' function on each of its numba modules when first imported."""

    def __init__(self, pending: set[str]) -> None:
        self.pending = pending

    def find_spec(self, name, path, target=None):
        if name not in self.pending:
            return None
        self.pending.discard(name)
        if not self.pending:
            with contextlib.suppress(ValueError):
                sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        run, hook = spec.loader.exec_module, _HOOKS[name]

        def exec_module(module: ModuleType) -> None:
            run(module)
            hook(module)

        spec.loader.exec_module = exec_module  # this module's own loader instance
        return spec


def distinct_symbols() -> None:
    """Name this process's numba-compiled symbols apart from every other process's, and
    stamp the caches of files calling grapeshot with the grapeshot they call (see the
    module's docstring): at once where numba is loaded, else when it is (numba is slow to
    import; ``grapeshot --help`` does not need it)."""
    pending = set()
    module = sys.modules.get(_IDENTITY_MODULE)
    if module is None:
        pending.add(_IDENTITY_MODULE)
    elif next(module.FunctionIdentity._unique_ids) < 1 << 48:
        _offset_counter(module)
    caching = sys.modules.get("numba.core.caching")
    if caching is None:
        pending.add("numba.core.caching")
    else:
        _stamp_callers(caching)
    if pending and not any(isinstance(f, _OnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _OnImport(pending))
