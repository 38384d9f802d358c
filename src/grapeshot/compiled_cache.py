"""Keep numba's on-disk cache of grapeshot's compiled functions in step with their sources.

numba checks a cached function against the file that defines it only (its modification time
and size). A compiled function inlines or calls functions of other modules (the simulator's
kernel calls :mod:`grapeshot.sim.events`, the apps' batches call
:mod:`grapeshot.model.task_halos`): after one of *those* files changes (a ``git pull``, a
``pip install --upgrade`` over an old install, which leaves the ``.nbi``/``.nbc`` files
behind), numba would load the old machine code and compute with it, silently.

:func:`refresh` runs once, when :mod:`grapeshot` is imported, before any compiled function
loads. It compares the package's sources with a stamp written the last time:

- the sizes and modification times of every ``.py`` file (a few milliseconds of ``stat``):
  equal, nothing more is done;
- otherwise a SHA-256 of the files that use numba: if it changed, every cached
  ``.nbi``/``.nbc`` of those files is deleted (in the source tree's ``__pycache__`` and in
  numba's other cache directories, ``NUMBA_CACHE_DIR`` or the user-wide one), so each
  function compiles again at its first call, once.

Ranks starting together take a file lock for the comparison, so one of them clears while the
others wait, and none reads a cache being cleared. Where nothing can be written (a read-only
install), nothing is done: numba cannot cache there either.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

#: The package's sources.
PACKAGE = Path(__file__).resolve().parent

#: Where the stamp lives (beside the package's own byte code).
STAMP = PACKAGE / "__pycache__" / "compiled-sources.json"


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
    """A digest of the files' relative paths, sizes and modification times."""
    return hashlib.sha256(repr(files).encode()).hexdigest()


def _compiled(files: list[tuple[str, int, int]], root: Path) -> list[tuple[Path, bytes]]:
    """The files that use numba, with their contents."""
    out = []
    for rel, _, _ in files:
        text = (root / rel).read_bytes()
        if b"numba" in text:
            out.append((root / rel, text))
    return out


def _content_key(compiled: list[tuple[Path, bytes]], root: Path) -> str:
    """A digest of the relative paths and contents of the files that use numba."""
    h = hashlib.sha256()
    for f, text in compiled:
        h.update(str(f.relative_to(root)).encode() + b"\0")
        h.update(hashlib.sha256(text).digest())
    return h.hexdigest()


def _cache_dirs(source: Path) -> list[Path]:
    """Every directory numba may have cached ``source``'s functions in (its locators)."""
    dirs = [source.parent / "__pycache__"]
    from numba.core import caching, config  # only when clearing: numba is slow to import

    subpath = caching._CacheLocator.get_suitable_cache_subpath(str(source))
    if config.CACHE_DIR:
        dirs.append(Path(config.CACHE_DIR) / subpath)
    user = caching.AppDirs(appname="numba", appauthor=False).user_cache_dir
    dirs.append(Path(user) / subpath)
    return dirs


def _clear(compiled: list[tuple[Path, bytes]]) -> int:
    """Delete the cached functions of ``compiled``'s files; how many files were deleted."""
    n = 0
    for source, _ in compiled:
        for folder in _cache_dirs(source):
            for pattern in (f"{source.stem}.*.nbi", f"{source.stem}.*.nbc"):
                for f in folder.glob(pattern):
                    with contextlib.suppress(FileNotFoundError):
                        f.unlink()
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


def _write(stamp: Path, data: dict) -> None:
    tmp = stamp.with_name(f"{stamp.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, stamp)


def refresh(root: Path = PACKAGE, stamp: Path = STAMP) -> int:
    """Clear numba's cache of ``root``'s compiled functions if their sources changed.

    Parameters
    ----------
    root
        The package's directory.
    stamp
        The JSON file holding the last comparison's digests (created; its directory too).

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
            compiled = _compiled(files, root)
            content_key = _content_key(compiled, root)
            deleted = _clear(compiled) if last.get("compiled") != content_key else 0
            _write(stamp, {"stat": stat_key, "compiled": content_key})
            return deleted
    except OSError:  # a read-only install: numba cannot write a cache there either
        return 0
