"""The checkpoint file format: one HDF5 file per rank, and an index naming them.

A checkpoint ``ck.h5`` is an *index* (small: the run's identity, the step and simulated time,
the placement, and the rank files with their sizes and CRC-32 checksums) and, beside it, one
*rank file* per rank that wrote it, ``ck.h5.<tag>.rank<R>.h5``, holding that rank's partitions:
its entries grouped by name and dtype (:func:`write_rank_file`). The index is written last, under a
temporary name, and renamed over the old one: until then the old index, and the rank files
it names, stay whole. Rank files carry the checkpoint's own tag, so a new checkpoint never
overwrites the files of the one it replaces.

Why not one file written by every rank: the h5py wheels on the package index are built
without MPI-IO (``h5py.get_config().mpi`` is ``False``), and a cluster's parallel HDF5 is not
what every user has. One file per rank needs nothing shared but the file system, every rank
writes at its own disk's speed, and a restart on another rank count reads only the groups it
needs (docs/checkpoint.md).

Everything here is plain file I/O in one process; the ranks' coordination is in
:mod:`grapeshot.runtime.checkpoint`.
"""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from grapeshot.model.atomic import atomic_path
from grapeshot.model.errors import InputError

#: Bumped when the layout changes; a checkpoint of another format is refused.
FORMAT = 1

Block = dict[str, Any]


@dataclass(frozen=True)
class RankFile:
    """One rank file as the index names it: its name (beside the index), bytes, CRC-32."""

    name: str
    size: int
    crc32: int


@dataclass(frozen=True)
class CheckpointIndex:
    """What a checkpoint's index holds.

    Attributes
    ----------
    path
        The index file.
    identity
        The run's identity: ``app``, ``scene``, ``parts``, ``cells``, ``seed``, ``version``
        (grapeshot's), ``format``, and for a user's program ``program_sha256`` (its file).
    step
        Steps done; the run goes on with this step.
    time
        Simulated time at that step (seconds, float64, bitwise).
    values
        The reductions' values published in the last step done (``{name: float}``).
    node_of
        int32 ``(P,)``: the rank (of the run that wrote it) holding each partition.
    files
        One :class:`RankFile` per rank of that run, by rank.
    total_steps
        The ``--steps`` of the run that wrote it (a restart's default).
    strategy
        The placement strategy of that run.
    """

    path: Path
    identity: dict[str, Any]
    step: int
    time: float
    values: dict[str, float]
    node_of: np.ndarray
    files: tuple[RankFile, ...]
    total_steps: int
    strategy: str

    def rank_path(self, rank: int) -> Path:
        """The rank file of rank ``rank`` (of the run that wrote it)."""
        return self.path.parent / self.files[rank].name


def rank_file_name(index: str | os.PathLike[str], tag: str, rank: int) -> str:
    """The name (beside the index) of rank ``rank``'s file of the checkpoint tagged ``tag``."""
    return f"{Path(index).name}.{tag}.rank{rank}.h5"


def _storable(part: int, key: str, value: Any) -> np.ndarray:
    """``value`` as the array HDF5 stores, or an :class:`InputError` naming it."""
    if isinstance(value, (bool, int, float, complex, np.generic)):
        value = np.asarray(value)
    if not isinstance(value, np.ndarray) or value.dtype.hasobject or value.dtype.kind in "UV":
        raise InputError(
            f"--checkpoint: partition {part}, block entry {key!r}",
            f"is {type(value).__name__}"
            + (f" of {value.dtype}" if isinstance(value, np.ndarray) else ""),
            "numpy arrays of numbers or booleans (docs/program-api.md, restartable state)",
        )
    # Not np.ascontiguousarray: it makes a 0-d array 1-d.
    return value if value.flags.c_contiguous else value.copy(order="C")


def content_checksum(crcs: list[np.ndarray]) -> int:
    """A rank file's checksum: the CRC-32 of its arrays' CRC-32s, group by group."""
    crc = 0
    for c in crcs:
        crc = zlib.crc32(np.ascontiguousarray(c, dtype="<i8"), crc)
    return crc


def _kind(value: Any) -> str:
    """How a block entry is read back: ``""`` an array, ``"numpy"`` a numpy scalar, or the
    Python scalar type's name."""
    if isinstance(value, np.ndarray):
        return ""
    return "numpy" if isinstance(value, np.generic) else type(value).__name__


def write_rank_file(path: str | os.PathLike[str], blocks: dict[int, Block]) -> RankFile:
    """Write ``blocks`` (``{partition: block}``) to the rank file ``path``, atomically.

    The entries of every partition that share a name, dtype, number of axes and kind go into
    one group ``entries/<i>`` (attributes ``key``, ``kind``): their partitions ``parts``
    ``(m,)``, their ``shapes`` ``(m, ndim)``, ``crc32`` ``(m,)`` of each array's bytes, and
    ``data``, the arrays flattened one after the other, partition ``parts[j]``'s from
    ``offsets[j]`` to ``offsets[j + 1]``. A few large datasets, not one per partition and
    entry: HDF5 spends tens of microseconds creating each dataset, which at thousands of
    partitions costs more than the bytes. Each array is written straight from the block (no
    copy of the rank's state), and its checksum taken while it is in the CPU's cache (no
    second pass over the file).

    Raises
    ------
    InputError
        A block entry that is not an array of numbers (an object, a list, strings).
    """
    groups: dict[tuple[str, str, int, str], list[tuple[int, np.ndarray]]] = {}
    for p in sorted(blocks):
        for key, value in blocks[p].items():
            data = _storable(p, key, value)
            groups.setdefault((key, data.dtype.str, data.ndim, _kind(value)), []).append((p, data))
    crcs = []
    with atomic_path(path) as tmp:
        with h5py.File(tmp, "w") as f:
            f.attrs["format"] = FORMAT
            f.create_dataset("parts", data=np.array(sorted(blocks), dtype=np.int64))
            for i, ((key, dtype, ndim, kind), rows) in enumerate(groups.items()):
                g = f.create_group(f"entries/{i}")
                g.attrs["key"], g.attrs["kind"] = key, kind
                sizes = np.array([a.size for _, a in rows], dtype=np.int64)
                offsets = np.concatenate([[0], np.cumsum(sizes)])
                g.create_dataset("parts", data=np.array([p for p, _ in rows], dtype=np.int64))
                g.create_dataset("offsets", data=offsets)
                shapes = [a.shape for _, a in rows]
                g.create_dataset("shapes", data=np.array(shapes, np.int64).reshape(len(rows), ndim))
                data = g.create_dataset("data", shape=(int(offsets[-1]),), dtype=np.dtype(dtype))
                space = data.id.get_space()
                crc = np.zeros(len(rows), dtype=np.int64)
                for j, (_, a) in enumerate(rows):
                    flat = a.reshape(-1)
                    crc[j] = zlib.crc32(flat)
                    if flat.size:  # h5py's low level: a slice costs microseconds, not tens
                        space.select_hyperslab((int(offsets[j]),), (flat.size,))
                        data.id.write(h5py.h5s.create_simple((flat.size,)), space, flat)
                g.create_dataset("crc32", data=crc)
                crcs.append(crc)
    return RankFile(Path(path).name, os.path.getsize(path), content_checksum(crcs))


_PYTHON = {"bool": bool, "int": int, "float": float, "complex": complex}


def read_blocks(path: str | os.PathLike[str], parts: list[int]) -> dict[int, Block]:
    """The blocks of ``parts`` from the rank file ``path``, as they were written (every
    array its dtype and shape, a scalar its type).

    Raises
    ------
    InputError
        An array whose bytes are not those written (its CRC-32 differs), or a partition the
        file does not hold.
    """
    out: dict[int, Block] = {p: {} for p in parts}
    with h5py.File(path, "r") as f:
        for g in f["entries"].values():
            key, kind = str(g.attrs["key"]), str(g.attrs["kind"])
            rows = g["parts"][()]
            wanted = np.flatnonzero(np.isin(rows, parts))
            if not len(wanted):
                continue
            offsets, shapes, crcs = g["offsets"][()], g["shapes"][()], g["crc32"][()]
            # One read of the span the wanted partitions cover, then views into it.
            lo, hi = int(offsets[wanted.min()]), int(offsets[wanted.max() + 1])
            span = g["data"][lo:hi]
            for j in wanted:
                a = span[offsets[j] - lo : offsets[j + 1] - lo]
                if zlib.crc32(a) != crcs[j]:
                    raise InputError(
                        f"--restart: rank file {path}",
                        f"partition {rows[j]}'s {key!r} is damaged (its checksum differs)",
                        "the file as written",
                    )
                a = a.reshape(tuple(shapes[j])).copy()
                if kind == "numpy":
                    value: Any = a[()]
                elif kind:
                    value = _PYTHON[kind](a[()])
                else:
                    value = a
                out[int(rows[j])][key] = value
    missing = [p for p in parts if not out[p]]
    if missing:
        raise InputError(f"--restart: rank file {path}", f"lacks partitions {missing}", None)
    return out


def write_index(
    path: str | os.PathLike[str],
    *,
    identity: dict[str, Any],
    step: int,
    time: float,
    values: dict[str, float],
    node_of: np.ndarray,
    files: list[RankFile],
    total_steps: int,
    strategy: str,
) -> None:
    """Write the index ``path`` atomically (renamed over the old one when whole)."""
    with atomic_path(path) as tmp:
        with h5py.File(tmp, "w") as f:
            f.attrs["format"] = FORMAT
            f.attrs["identity"] = json.dumps(identity, sort_keys=True)
            f.attrs["step"] = int(step)
            f.attrs["time"] = np.float64(time)
            f.attrs["total_steps"] = int(total_steps)
            f.attrs["strategy"] = strategy
            names = sorted(values)
            f.create_dataset("values/names", data=np.array(names, dtype=h5py.string_dtype()))
            f.create_dataset("values/values", data=np.array([values[k] for k in names], "f8"))
            f.create_dataset("node_of", data=np.asarray(node_of, dtype=np.int32))
            f.create_dataset(
                "files/name", data=np.array([r.name for r in files], dtype=h5py.string_dtype())
            )
            f.create_dataset("files/size", data=np.array([r.size for r in files], np.int64))
            f.create_dataset("files/crc32", data=np.array([r.crc32 for r in files], np.int64))


def read_index(path: str | os.PathLike[str], where: str = "--restart") -> CheckpointIndex:
    """Read a checkpoint's index.

    Raises
    ------
    InputError
        The file is missing, not HDF5, or not a grapeshot checkpoint of this format.
    """
    label = f"{where} {path}"
    if not Path(path).is_file():
        raise InputError(label, "does not exist", "a checkpoint written by run --checkpoint")
    try:
        with h5py.File(path, "r") as f:
            if "format" not in f.attrs or "identity" not in f.attrs:
                raise InputError(label, "is not a grapeshot checkpoint", "run --checkpoint's file")
            if int(f.attrs["format"]) != FORMAT:
                raise InputError(
                    label,
                    f"is of checkpoint format {int(f.attrs['format'])}",
                    f"format {FORMAT}, this grapeshot's",
                )
            names = [n.decode() if isinstance(n, bytes) else n for n in f["values/names"][()]]
            files = tuple(
                RankFile(n.decode() if isinstance(n, bytes) else str(n), int(s), int(c))
                for n, s, c in zip(
                    f["files/name"][()], f["files/size"][()], f["files/crc32"][()], strict=True
                )
            )
            return CheckpointIndex(
                path=Path(path),
                identity=json.loads(f.attrs["identity"]),
                step=int(f.attrs["step"]),
                time=float(f.attrs["time"]),
                values=dict(zip(names, map(float, f["values/values"][()]), strict=True)),
                node_of=np.asarray(f["node_of"][()], dtype=np.int32),
                files=files,
                total_steps=int(f.attrs["total_steps"]),
                strategy=str(f.attrs["strategy"]),
            )
    except OSError as exc:
        raise InputError(label, f"cannot be read as HDF5 ({exc})", "a checkpoint file") from None


def verify_rank_file(index: CheckpointIndex, rank: int) -> None:
    """Refuse a rank file that is missing, or whose size or checksum differ from the index's.

    Raises
    ------
    InputError
        Naming the file and what differs.
    """
    entry = index.files[rank]
    path = index.rank_path(rank)
    label = f"--restart {index.path}: rank file {path}"
    if not path.is_file():
        raise InputError(label, "is missing", "the files the index names, beside it")
    size = path.stat().st_size
    if size != entry.size:
        raise InputError(label, f"has {size} bytes", f"{entry.size}, as the index says")
    try:
        with h5py.File(path, "r") as f:
            crcs = [g["crc32"][()] for g in f["entries"].values()]
    except (OSError, KeyError) as exc:
        raise InputError(label, f"cannot be read ({exc})", "the file as written") from None
    if content_checksum(crcs) != entry.crc32:
        raise InputError(label, "has another checksum than the index's", "the file as written")


def identity_differences(saved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """``"key: checkpoint X, this run Y"`` per key of ``current`` whose value differs."""
    out = []
    for key, value in current.items():
        if saved.get(key) != value:
            out.append(f"{key} {_shown(saved.get(key))} in the checkpoint, {_shown(value)} here")
    return out


def _shown(value: Any) -> str:
    if isinstance(value, str) and len(value) == 64:  # a SHA-256: its start tells them apart
        return value[:12]
    if isinstance(value, list):
        return ",".join(map(str, value))
    return str(value)
