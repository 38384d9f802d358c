"""Atomic file output: a reader sees the old file or the new one, never a torn one.

The file is written under a temporary name beside the destination and renamed over it. The
temporary file is created private (``tempfile.mkstemp`` makes it mode 0600); before the rename
it is given the mode a plain ``open(path, "w")`` would have given it, ``0666`` less the
process's umask, so colleagues in a shared project directory can read the results.

Every command checks its output paths with :func:`check_output_path` before any work starts,
so a run is never computed only to fail at the write. Missing folders are created (by
:func:`atomic_path`, when the file is written) below the nearest folder that exists, unless
that folder is the root ``/``: a typo in the first folder of an absolute path is refused
rather than left behind as a new top-level folder (docs/formats.md, "Output files").
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from grapeshot.model.errors import InputError

#: The mode a new file gets before the umask applies (what ``open(path, "w")`` asks for).
_NEW_FILE_MODE = 0o666


def current_umask() -> int:
    """The process's umask, read without changing it where the system allows.

    Linux reports it in ``/proc/self/status``; elsewhere it is read by setting it and
    restoring it at once (``os.umask`` has no read-only form).
    """
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success rename it over ``path``.

    The temporary file lives in the destination directory so the final ``os.replace`` is a
    rename on one file system. Missing folders above ``path`` are created under the rule of
    :func:`make_folders` (never directly under ``/``). If the body raises (or the process is
    interrupted) the temporary file is removed and ``path`` is untouched. The file ends with
    mode ``0666 & ~umask``, as if written in place.
    """
    final = Path(path)
    make_folders(final.parent, str(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        with open(tmp_path, "rb+") as fh:
            os.fchmod(fh.fileno(), _NEW_FILE_MODE & ~current_umask())
            os.fsync(fh.fileno())
        os.replace(tmp_path, final)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        raise


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def _nearest_existing(folder: Path) -> Path:
    """``folder`` itself if it exists, else the nearest folder above it that does."""
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def _refuse_under_root(folder: Path, label: str) -> Path:
    """The nearest existing folder at or above ``folder``; refused if folders would have to
    be created directly under the file system's root.

    Raises
    ------
    InputError
        If the path crosses a file, or its first missing folder would sit directly in ``/``.
    """
    existing = _nearest_existing(folder)
    if not existing.is_dir():
        raise InputError(label, f"{existing} is not a folder", "a path whose folders are folders")
    if existing != folder and existing.resolve() == Path(existing.resolve().anchor):
        # A typo such as --out /reslts/x.json must not leave a new top-level folder behind.
        first = folder
        while first.parent != existing:
            first = first.parent
        raise InputError(
            label,
            f"would create the folder {first.resolve()} directly under {existing.resolve()}",
            "a path inside a folder that exists (other than the root)",
        )
    return existing


def make_folders(folder: str | os.PathLike[str], where: str) -> None:
    """Create ``folder`` and the missing folders above it, unless that means creating a
    folder directly under the file system's root.

    The rule for every output of grapeshot: missing folders are created below the nearest
    folder that exists, provided that folder is not ``/`` (``--out results/run1/p.json``
    creates ``results/run1`` in the current folder; ``--out /reslts/p.json`` is refused).

    Raises
    ------
    InputError
        Naming ``where``, if the rule refuses the path or a file stands where a folder is
        needed.
    """
    target = Path(folder)
    if target.is_dir():
        return
    _refuse_under_root(target, where)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(
            where, f"cannot create {target} ({exc.strerror or exc})", "a folder you may write in"
        ) from None


def _probe(folder: Path, label: str) -> None:
    """Refuse ``folder`` unless a file can be created in it (and is removed at once).

    Creating a file is the only test that answers for every case: ``os.access`` says yes to
    root for ``/proc``, and nothing about a read-only or full file system.
    """
    try:
        fd, probe = tempfile.mkstemp(prefix=".grapeshot-probe.", dir=folder)
    except OSError as exc:
        raise InputError(
            label,
            f"cannot create files in {folder} ({exc.strerror or exc})",
            "a folder you may write in",
        ) from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)


def check_output_path(
    path: str | os.PathLike[str],
    where: str,
    *,
    folder: bool = False,
    suffixes: Sequence[str] | None = None,
) -> Path:
    """Refuse, before any work starts, an output path that :func:`atomic_path` cannot write.

    A file's path is writable when it is not a folder itself, its extension is one of
    ``suffixes`` (when the format follows from it), and a file can be created in its folder,
    or in the nearest folder that exists above it when the missing ones may be created
    (:func:`make_folders`: never directly under ``/``). A folder's path (``folder=True``, for
    commands that write several files into it) must be a folder, or missing under the same
    rule, and a file can be created in it. The test creates and removes one empty file in the
    folder; nothing else is written and no folder is created.

    Parameters
    ----------
    path
        The file (or folder) to be written.
    where
        The option that names it, for the message (``"--out"``).
    folder
        ``path`` is a folder that will hold the outputs, not a file.
    suffixes
        The extensions accepted (``(".png", ".svg")``), compared without case; ``None``
        accepts any.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    InputError
        ``"<where> <path>: <what is wrong>; expected ..."``.
    """
    final = Path(path)
    label = f"{where} {path}"
    if folder:
        if final.exists() and not final.is_dir():
            raise InputError(label, "is a file", "a folder (or a name for a new one)")
        _probe(_refuse_under_root(final, label), label)
        return final
    if final.is_dir():
        raise InputError(label, "is a folder", "a file name")
    if suffixes is not None and final.suffix.lower() not in {s.lower() for s in suffixes}:
        got = f"the extension {final.suffix!r}" if final.suffix else "no extension"
        raise InputError(label, f"has {got}", f"one of {', '.join(suffixes)}")
    _probe(_refuse_under_root(final.parent, label), label)
    return final
