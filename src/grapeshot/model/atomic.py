"""Atomic file output: a reader sees the old file or the new one, never a torn one.

The file is written under a temporary name beside the destination and renamed over it. The
temporary file is created private (``tempfile.mkstemp`` makes it mode 0600); before the rename
it is given the mode a plain ``open(path, "w")`` would have given it, ``0666`` less the
process's umask, so colleagues in a shared project directory can read the results.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
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
    rename on one file system. If the body raises (or the process is interrupted) the
    temporary file is removed and ``path`` is untouched. The file ends with mode
    ``0666 & ~umask``, as if written in place.
    """
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
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


def check_output_path(path: str | os.PathLike[str], where: str) -> Path:
    """Refuse, before any work starts, an output path that :func:`atomic_path` cannot write.

    ``atomic_path`` creates missing folders, so the path is writable when it is not a folder
    itself and the nearest folder that exists above it is a folder this process may write in.

    Parameters
    ----------
    path
        The file to be written.
    where
        The option that names it, for the message (``"--out"``).

    Raises
    ------
    InputError
        ``"<where> <path>: <what is wrong>; expected ..."``.
    """
    final = Path(path)
    label = f"{where} {path}"
    if final.is_dir():
        raise InputError(label, "is a folder", "a file name")
    parent = final.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise InputError(label, f"{parent} is not a folder", "a path whose folders are folders")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(label, f"cannot write in {parent}", "a folder you may write in")
    return final
