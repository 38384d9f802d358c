"""The workload file (HDF5): how traces are stored and read back.

Layout (see ``docs/formats.md``):

- ``cost``: float64, ``(steps, P)``, cost per partition per step in ``units``.
- ``halo/indptr``, ``halo/indices``, ``halo/bytes``: int64 CSR over partitions; bytes per step.
- ``work`` (optional): the counts that drive ``cost``, ``(steps, P)``.
- ``wall`` (optional): float64, ``(steps, P)``, the kernels' wall-clock seconds beside a cost
  timed by the CPU clock (or counted in work).
- attributes: ``domain_shape``, ``parts_shape`` (int arrays), ``units`` (``"s"`` or
  ``"work"``), ``app``, ``scene`` (strings), ``clock`` (optional: ``"cpu"``, ``"wall"`` or
  ``""``, what timed ``cost``), ``format_version`` (int, currently 1).

A file written before ``wall`` and ``clock`` existed reads as ``clock=""``, no ``wall``: both
are additions a reader that does not know them skips, so the version stays 1.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import h5py
import numpy as np

from grapeshot.model.atomic import atomic_path
from grapeshot.model.errors import InputError
from grapeshot.model.workload import HaloGraph, Workload

FORMAT_VERSION = 1
#: The eight bytes an HDF5 file starts with (its superblock signature).
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
#: What h5py raises when the bytes under a file's structure are wrong (besides InputError).
_H5_READ_ERRORS = (OSError, KeyError, ValueError, RuntimeError, TypeError, IndexError)
#: What to do about a damaged file: the same sentence in every message.
_REWRITE = "an intact HDF5 file (write it again, or copy it again if it was copied)"


def _h5_reason(exc: BaseException) -> str:
    """h5py's reason, without its wrapper: ``"Unable to ... (bad object header)"`` → inner."""
    text = str(exc).strip("'\" ").splitlines()[0] if str(exc) else type(exc).__name__
    inner = re.search(r"\(([^()]*)\)\s*$", text)
    return inner.group(1) if inner else text


def hdf5_open_problem(path: str | os.PathLike[str], exc: BaseException) -> str:
    """Why ``h5py.File(path, "r")`` failed, in words: empty, not HDF5, truncated, damaged."""
    size = os.path.getsize(path)
    if size == 0:
        return "is empty (0 bytes)"
    with open(path, "rb") as fh:
        head = fh.read(len(HDF5_SIGNATURE))
    if head != HDF5_SIGNATURE:
        return "is not an HDF5 file (it does not start with the HDF5 signature)"
    reason = _h5_reason(exc)
    cut = re.search(r"eof = (\d+).*stored_eof = (\d+)", reason)
    if cut:
        return (
            f"is truncated: {int(cut.group(1)):,} bytes of the {int(cut.group(2)):,} "
            "it was written with"
        )
    return f"is damaged: {reason}"


def open_hdf5(path: str | os.PathLike[str], expected: str) -> h5py.File:
    """Open ``path`` for reading; any failure is one :class:`InputError` naming the file.

    Parameters
    ----------
    path
        The file.
    expected
        What the caller wanted, for the message, e.g. ``"an HDF5 workload file"``.
    """
    where = str(path)
    if not Path(path).is_file():
        raise InputError(where, "no such file", expected)
    try:
        return h5py.File(path, "r")
    except OSError as exc:
        problem = hdf5_open_problem(path, exc)
        if problem.startswith("is not an HDF5 file") or problem.startswith("is empty"):
            raise InputError(where, problem, expected) from None
        raise InputError(where, problem, _REWRITE) from None


def damaged(path: str | os.PathLike[str], exc: BaseException) -> InputError:
    """The error for a file h5py opened but could not read (``exc`` from h5py)."""
    reason = _h5_reason(exc)
    if "filter" in reason:  # the Fletcher-32 checksum or the gzip stream of a chunk
        reason = f"its data fail their checksum ({reason})"
    return InputError(str(path), f"is damaged: {reason}", _REWRITE)


def save_workload(path: str | os.PathLike[str], workload: Workload) -> None:
    """Write ``workload`` to ``path`` atomically (a reader never sees a half-written file)."""
    with atomic_path(path) as tmp, h5py.File(tmp, "w") as f:
        # Fletcher-32 checksums on every dataset: a flipped byte in the data is an error when
        # read, not a silently different trace.
        packed = {"compression": "gzip", "shuffle": True, "fletcher32": True}
        f.create_dataset("cost", data=workload.cost, **packed)
        g = f.create_group("halo")
        g.create_dataset("indptr", data=workload.halo.indptr.astype(np.int64), **packed)
        g.create_dataset("indices", data=workload.halo.indices.astype(np.int64), **packed)
        g.create_dataset("bytes", data=workload.halo.nbytes.astype(np.int64), **packed)
        if workload.work is not None:
            f.create_dataset("work", data=workload.work, **packed)
        if workload.wall is not None:
            f.create_dataset("wall", data=workload.wall, **packed)
        f.attrs["domain_shape"] = np.asarray(workload.domain_shape, dtype=np.int64)
        f.attrs["parts_shape"] = np.asarray(workload.parts_shape, dtype=np.int64)
        f.attrs["units"] = workload.units
        f.attrs["app"] = workload.app
        f.attrs["scene"] = workload.scene
        f.attrs["clock"] = workload.clock
        f.attrs["format_version"] = FORMAT_VERSION


def _dataset(f: h5py.File, name: str, where: str) -> np.ndarray:
    if name not in f:
        raise InputError(f"{where}: dataset '{name}'", "missing", "see docs/formats.md")
    obj = f[name]
    if not isinstance(obj, h5py.Dataset):
        raise InputError(f"{where}: '{name}'", "is a group", "a dataset")
    return obj[()]


def _attr(f: h5py.File, name: str, where: str, default: object = None) -> object:
    if name not in f.attrs:
        if default is not None:
            return default
        raise InputError(f"{where}: attribute '{name}'", "missing", "see docs/formats.md")
    value = f.attrs[name]
    return value.decode() if isinstance(value, bytes) else value


def load_workload(path: str | os.PathLike[str]) -> Workload:
    """Read and validate a workload file; every error names the file and the dataset.

    A file that is empty, not HDF5, truncated or damaged (a checksum or a structure that does
    not hold) is one :class:`InputError` saying which.
    """
    where = str(path)
    with open_hdf5(path, "an HDF5 workload file") as f:
        try:
            fields = _read_fields(f, where)
        except InputError:
            raise
        except _H5_READ_ERRORS as exc:
            raise damaged(path, exc) from None
    try:
        return Workload(**fields)
    except InputError as exc:
        raise InputError(f"{where}: {exc.where}", exc.problem, exc.expected) from None


def _read_fields(f: h5py.File, where: str) -> dict[str, object]:
    version = int(_attr(f, "format_version", where, FORMAT_VERSION))
    if version > FORMAT_VERSION:
        raise InputError(f"{where}: format_version", f"is {version}", f"<= {FORMAT_VERSION}")
    cost = _dataset(f, "cost", where)
    halo = HaloGraph(
        _dataset(f, "halo/indptr", where),
        _dataset(f, "halo/indices", where),
        _dataset(f, "halo/bytes", where),
    )
    work = _dataset(f, "work", where) if "work" in f else None
    wall = _dataset(f, "wall", where) if "wall" in f else None
    domain_attr = _attr(f, "domain_shape", where)
    parts_attr = _attr(f, "parts_shape", where)
    try:
        domain = tuple(int(x) for x in np.atleast_1d(domain_attr))
        parts = tuple(int(x) for x in np.atleast_1d(parts_attr))
    except (TypeError, ValueError):
        raise InputError(f"{where}: shape attributes", "are not integers", None) from None
    return {
        "domain_shape": domain,
        "parts_shape": parts,
        "cost": cost,
        "halo": halo,
        "units": str(_attr(f, "units", where)),
        "work": work,
        "app": str(_attr(f, "app", where, "")),
        "scene": str(_attr(f, "scene", where, "")),
        "clock": str(_attr(f, "clock", where, "")),
        "wall": wall,
    }
