"""The workload file (HDF5): how traces are stored and read back.

Layout (see ``docs/formats.md``):

- ``cost``: float64, ``(steps, P)``, cost per partition per step in ``units``.
- ``halo/indptr``, ``halo/indices``, ``halo/bytes``: int64 CSR over partitions; bytes per step.
- ``work`` (optional): the counts that drive ``cost``, ``(steps, P)``.
- attributes: ``domain_shape``, ``parts_shape`` (int arrays), ``units`` (``"s"`` or
  ``"work"``), ``app``, ``scene`` (strings), ``format_version`` (int, currently 1).
"""

from __future__ import annotations

import os
from pathlib import Path

import h5py
import numpy as np

from grapeshot.model.atomic import atomic_path
from grapeshot.model.errors import InputError
from grapeshot.model.workload import HaloGraph, Workload

FORMAT_VERSION = 1


def save_workload(path: str | os.PathLike[str], workload: Workload) -> None:
    """Write ``workload`` to ``path`` atomically (a reader never sees a half-written file)."""
    with atomic_path(path) as tmp, h5py.File(tmp, "w") as f:
        f.create_dataset("cost", data=workload.cost, compression="gzip", shuffle=True)
        g = f.create_group("halo")
        g.create_dataset("indptr", data=workload.halo.indptr.astype(np.int64))
        g.create_dataset("indices", data=workload.halo.indices.astype(np.int64))
        g.create_dataset("bytes", data=workload.halo.nbytes.astype(np.int64))
        if workload.work is not None:
            f.create_dataset("work", data=workload.work, compression="gzip", shuffle=True)
        f.attrs["domain_shape"] = np.asarray(workload.domain_shape, dtype=np.int64)
        f.attrs["parts_shape"] = np.asarray(workload.parts_shape, dtype=np.int64)
        f.attrs["units"] = workload.units
        f.attrs["app"] = workload.app
        f.attrs["scene"] = workload.scene
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
    """Read and validate a workload file; every error names the file and the dataset."""
    where = str(path)
    if not Path(path).is_file():
        raise InputError(where, "no such file", "an HDF5 workload file")
    try:
        f = h5py.File(path, "r")
    except OSError:
        raise InputError(where, "is not an HDF5 file", "an HDF5 workload file") from None
    with f:
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
        domain_attr = _attr(f, "domain_shape", where)
        parts_attr = _attr(f, "parts_shape", where)
        try:
            domain = tuple(int(x) for x in np.atleast_1d(domain_attr))
            parts = tuple(int(x) for x in np.atleast_1d(parts_attr))
        except (TypeError, ValueError):
            raise InputError(f"{where}: shape attributes", "are not integers", None) from None
        try:
            return Workload(
                domain_shape=domain,
                parts_shape=parts,
                cost=cost,
                halo=halo,
                units=str(_attr(f, "units", where)),
                work=work,
                app=str(_attr(f, "app", where, "")),
                scene=str(_attr(f, "scene", where, "")),
            )
        except InputError as exc:
            raise InputError(f"{where}: {exc.where}", exc.problem, exc.expected) from None
