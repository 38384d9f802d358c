"""Placements (partition → node) and the metrics that judge them on a workload.

LIF, the load imbalance factor, is the source paper's ``max / mean − 1`` over nodes of one
step's load, read as the step's time over its perfectly balanced time:
``max_k(load_k / cores_k) / (Σ load / Σ cores) − 1`` (0 for a step with no load). A step lasts
as long as its busiest node, which needs ``load_k / cores_k``; perfect balance gives every core
``Σ load / Σ cores``. On equal nodes that is the paper's number. :func:`load_imbalance` is the
one definition: every strategy, metric and report computes the LIF through it.

A placement file is written in one of :data:`PLACEMENT_FORMATS` (docs/formats.md): grapeshot's
JSON, which keeps everything, or one of three files any language reads without a JSON parser
(a METIS-style ``.part`` file, a ``.csv`` table, a NumPy ``.npy`` array), which keep the node
of every partition (the ``.csv`` also its core) but not the strategy, the seed or the number
of nodes. :func:`load_placement` reads all four back.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from grapeshot.model.atomic import atomic_path
from grapeshot.model.csv_table import (
    Column,
    Table,
    decode_utf8,
    read_bytes,
    read_lines,
    read_table,
)
from grapeshot.model.errors import InputError
from grapeshot.model.json_text import json_text
from grapeshot.model.machine import Machine
from grapeshot.model.memory import JSON_READ_BYTES_PER_BYTE, TEXT_READ_BYTES_PER_BYTE, check_memory
from grapeshot.model.npy_header import read_npy_header
from grapeshot.model.workload import Workload

#: Most nodes a placement may have: node numbers are int32 (MPI ranks are C ints).
MAX_NODES = int(np.iinfo(np.int32).max)
#: Partitions taken at a time by the passes over a whole placement (its count per node, the
#: text writers, the CSV reader's order check): their temporaries stay a few MB at any size,
#: where one of the placement's size is 800 MB at 10^8 partitions.
_CHUNK = 1 << 20
#: JSON placements of this size and more have their lists read by the compiled scanner
#: (:mod:`grapeshot.model.json_ints`). Below it ``json.loads`` is quicker than starting numba
#: in a fresh process (about 0.7 s): ``show`` took 1.8 s either way on a 25 MB file of 2.4M
#: partitions, 6.0 s against 2.8 s on a 100 MB one.
JSON_SCAN_MIN_BYTES = 32 << 20


@dataclass(frozen=True, eq=False)
class Placement:
    """Which node (and optionally which core) each partition runs on.

    Parameters
    ----------
    node_of
        int32, shape ``(P,)``: node of each partition.
    nodes
        Number of nodes of the machine placed on.
    strategy
        Name of the strategy that made it.
    seed
        Seed it was made with (``None`` for deterministic strategies given no seed).
    core_of
        Optional int32, shape ``(P,)``: core within the node, where a strategy decides it.
    """

    node_of: np.ndarray
    nodes: int
    strategy: str
    seed: int | None = None
    core_of: np.ndarray | None = None

    def __post_init__(self) -> None:
        node_of = np.asarray(self.node_of)
        if node_of.ndim != 1 or not np.issubdtype(node_of.dtype, np.integer):
            raise InputError("node_of", f"has shape {node_of.shape}", "a 1-D integer array")
        if not 1 <= self.nodes <= MAX_NODES:
            # node_of is stored as int32: a larger node number would wrap around silently.
            raise InputError("nodes", f"got {self.nodes}", f"an integer in [1, {MAX_NODES}]")
        if len(node_of) and (node_of.min() < 0 or node_of.max() >= self.nodes):
            raise InputError("node_of", "has nodes out of range", f"[0, {self.nodes})")
        object.__setattr__(self, "node_of", node_of.astype(np.int32, copy=False))
        if self.core_of is not None:
            core_of = np.asarray(self.core_of)
            if core_of.shape != node_of.shape or not np.issubdtype(core_of.dtype, np.integer):
                raise InputError(
                    "core_of", f"has shape {core_of.shape}", f"{node_of.shape} integers"
                )
            if len(core_of) and (core_of.min() < 0 or core_of.max() > np.iinfo(np.int32).max):
                raise InputError("core_of", "has cores out of range", "indices >= 0")
            object.__setattr__(self, "core_of", core_of.astype(np.int32, copy=False))

    @property
    def n_parts(self) -> int:
        """Number of partitions placed."""
        return len(self.node_of)

    def counts(self) -> np.ndarray:
        """Partitions per node, int64, shape ``(nodes,)``."""
        # By chunks: np.bincount casts int32 to int64 first, a fresh 800 MB array to fault
        # in at 10^8 partitions (1-2.7 s, against 0.2 s for the counting itself).
        counts = np.zeros(self.nodes, dtype=np.int64)
        for lo in range(0, self.n_parts, _CHUNK):
            counts += np.bincount(self.node_of[lo : lo + _CHUNK], minlength=self.nodes)
        return counts

    def to_dict(self, lists: bool = True) -> dict[str, Any]:
        """JSON-ready form (the placement file); without ``node_of`` and ``core_of`` if not
        ``lists``."""
        out: dict[str, Any] = {
            "format": "grapeshot-placement",
            "version": 1,
            "strategy": self.strategy,
            "seed": self.seed,
            "nodes": self.nodes,
            "parts": self.n_parts,
        }
        if not lists:
            return out
        out["node_of"] = self.node_of.tolist()
        if self.core_of is not None:
            out["core_of"] = self.core_of.tolist()
        return out


#: The placement file formats and the file extension that selects each (docs/formats.md).
PLACEMENT_FORMATS: dict[str, str] = {"json": ".json", "part": ".part", "csv": ".csv", "npy": ".npy"}
#: The header of a placement ``.csv`` file.
CSV_HEADER = "partition,node,core"
#: ``core`` in a ``.csv`` placement whose strategy left the core to the runtime: a number,
#: so the column reads as integers everywhere (an empty field would not, in C or numpy).
NO_CORE = -1
#: The dtype of a ``.npy`` placement: little-endian int32, the same bytes on every machine
#: (MPI ranks are C ints).
NPY_DTYPE = np.dtype("<i4")
_NODE = f"a node number in [0, {MAX_NODES - 1}]"


def placement_format(path: str | os.PathLike[str], fmt: str | None = None) -> str:
    """The format ``place --out PATH [--format FMT]`` writes: ``FMT``, else by extension.

    Raises
    ------
    InputError
        If ``fmt`` is not a format, or it is ``None`` and the extension selects none.
    """
    names = "|".join(PLACEMENT_FORMATS)
    if fmt is not None:
        if fmt.lower() not in PLACEMENT_FORMATS:
            raise InputError("--format", f"got {fmt!r}", f"one of {', '.join(PLACEMENT_FORMATS)}")
        return fmt.lower()
    suffix = Path(path).suffix.lower()
    for name, extension in PLACEMENT_FORMATS.items():
        if suffix == extension:
            return name
    problem = f"has the extension {suffix!r}" if suffix else "has no extension"
    raise InputError(
        f"--out {path}",
        f"{problem}, which names no placement format",
        f"{', '.join(PLACEMENT_FORMATS.values())}, or --format {names}",
    )


def save_placement(
    path: str | os.PathLike[str], placement: Placement, fmt: str = "json", **extra: Any
) -> None:
    """Write the placement file atomically in the format ``fmt``.

    Parameters
    ----------
    path
        The file.
    placement
        What to write.
    fmt
        A name of :data:`PLACEMENT_FORMATS`: ``json`` (everything, and ``extra``), ``part``
        (one node a line), ``csv`` (``partition,node,core``), ``npy`` (int32 nodes).
    extra
        Fields the JSON adds, such as ``metrics``; the other formats have no room for them.
    """
    if fmt not in _WRITERS:
        raise InputError("format", f"got {fmt!r}", f"one of {', '.join(PLACEMENT_FORMATS)}")
    _WRITERS[fmt](path, placement, extra)


def _save_json(path: str | os.PathLike[str], placement: Placement, extra: dict[str, Any]) -> None:
    # The document's text with a marker where each list goes, the lists written into it a
    # chunk at a time: the bytes json.dumps gives, without a Python int per partition.
    lists = {"node_of": placement.node_of, "core_of": placement.core_of}
    marks = {key: f"@grapeshot-list-{key}@" for key, values in lists.items() if values is not None}
    text = json_text({**placement.to_dict(lists=False), **marks, **extra}) + "\n"
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        for key, mark in marks.items():
            head, text = text.split(json_text(mark), 1)
            fh.write(head.encode("utf-8") + b"[")
            values = lists[key]
            for lo in range(0, values.size, _CHUNK):
                chunk = _int_text(values[lo : lo + _CHUNK], end=b", ")
                fh.write(chunk if lo + _CHUNK < values.size else chunk[:-2])
            fh.write(b"]")
        fh.write(text.encode("utf-8"))


def _int_text(*columns: np.ndarray, end: bytes = b"\n") -> memoryview:
    """Rows of ``columns`` (equal lengths) as text: fields joined by commas, each row followed
    by ``end`` (:func:`grapeshot.model.int_rows.format_int_rows`)."""
    from grapeshot.model.int_rows import format_int_rows  # numba: only when writing text

    values = np.stack([np.asarray(c, dtype=np.int64) for c in columns])
    comma = np.frombuffer(b",", dtype=np.uint8)
    return memoryview(format_int_rows(values, comma, np.frombuffer(end, dtype=np.uint8)))


def _save_part(path: str | os.PathLike[str], placement: Placement, extra: dict[str, Any]) -> None:
    node_of = placement.node_of
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        if not node_of.size:
            fh.write(b"\n")
        # A chunk at a time: the text of the whole placement at once would be 1 GB at 10^8.
        for lo in range(0, node_of.size, _CHUNK):
            fh.write(_int_text(node_of[lo : lo + _CHUNK]))


def _save_csv(path: str | os.PathLike[str], placement: Placement, extra: dict[str, Any]) -> None:
    node_of, core_of = placement.node_of, placement.core_of
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        fh.write(CSV_HEADER.encode("ascii") + b"\n")
        for lo in range(0, node_of.size, _CHUNK):
            hi = min(lo + _CHUNK, node_of.size)
            cores = np.full(hi - lo, NO_CORE) if core_of is None else core_of[lo:hi]
            fh.write(_int_text(np.arange(lo, hi), node_of[lo:hi], cores))


def _save_npy(path: str | os.PathLike[str], placement: Placement, extra: dict[str, Any]) -> None:
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        # Version 1.0 of the format: the one small C and Fortran .npy readers support.
        np.lib.format.write_array(
            fh, placement.node_of.astype(NPY_DTYPE, copy=False), version=(1, 0)
        )


#: Format name → ``writer(path, placement, extra)``; only the JSON has room for ``extra``.
_WRITERS = {"json": _save_json, "part": _save_part, "csv": _save_csv, "npy": _save_npy}


def load_placement(path: str | os.PathLike[str]) -> Placement:
    """Read a placement file in any of :data:`PLACEMENT_FORMATS`.

    The extension says which; a file with another extension is recognised by its first
    bytes (``place --out FILE --format ...`` may have named it anything). ``.part``,
    ``.csv`` and ``.npy`` files hold no strategy, seed or node count: the placement read
    has strategy ``"unknown"``, no seed, and the largest node number + 1 nodes.

    Raises
    ------
    InputError
        Naming the file and the line, field or element that is wrong.
    """
    return _LOADERS[_stored_format(path)](path)


def _stored_format(path: str | os.PathLike[str]) -> str:
    suffix = Path(path).suffix.lower()
    for name, extension in PLACEMENT_FORMATS.items():
        if suffix == extension:
            return name
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
    except OSError:
        return "json"  # its reader says why the file cannot be read
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if head.startswith(np.lib.format.MAGIC_PREFIX):
        return "npy"
    if text[:1].isdigit() or (text[:1] == b"-" and text[1:2].isdigit()):
        return "part"
    if text.lower().startswith(b"partition"):
        return "csv"
    return "json"


def _load_json(path: str | os.PathLike[str]) -> Placement:
    where, expected = str(path), "a placement JSON file"
    raw = read_bytes(path, expected, TEXT_READ_BYTES_PER_BYTE)
    data = scan_placement_json(raw)
    if data is None:
        # Every number a Python int: weighed again at what that takes.
        check_memory(
            JSON_READ_BYTES_PER_BYTE * len(raw), where, f"to read its {len(raw):,} bytes", expected
        )
        try:
            data = json.loads(decode_utf8(raw, where, expected))
        except json.JSONDecodeError as exc:
            raise InputError(
                f"{where} line {exc.lineno}", f"invalid JSON: {exc.msg}", None
            ) from None
    del raw
    return placement_from_json(data, where)


def scan_placement_json(raw: bytes) -> Any | None:
    """The JSON document ``raw`` with its ``node_of`` and ``core_of`` lists as int64 arrays,
    read by the compiled scanner (:mod:`grapeshot.model.json_ints`) if the file is of
    :data:`JSON_SCAN_MIN_BYTES` or more; None for a smaller file or one the scanner leaves
    to ``json.loads``."""
    if len(raw) < JSON_SCAN_MIN_BYTES:
        return None
    from grapeshot.model.json_ints import loads_with_int_lists  # numba: for large files

    return loads_with_int_lists(raw, ("node_of", "core_of"))


def placement_from_json(data: Any, where: str) -> Placement:
    """The placement of a placement JSON document as read (``json.loads``, or
    :func:`grapeshot.model.json_ints.loads_with_int_lists` with its lists as arrays).

    Raises
    ------
    InputError
        Naming ``where`` (the file) and the field or item that is wrong.
    """
    if not isinstance(data, dict) or data.get("format") != "grapeshot-placement":
        raise InputError(where, "is not a grapeshot placement", '"format": "grapeshot-placement"')
    for key in ("node_of", "nodes", "strategy"):
        if key not in data:
            raise InputError(f"{where}: {key}", "missing", None)
    node_of = _json_ints(data["node_of"], f"{where}: node_of", "node")
    core_of = data.get("core_of")
    if core_of is not None:
        core_of = _json_ints(core_of, f"{where}: core_of", "core")
    try:
        return Placement(
            node_of=node_of,
            nodes=int(data["nodes"]),
            strategy=str(data["strategy"]),
            seed=data.get("seed"),
            core_of=core_of,
        )
    except (TypeError, ValueError, OverflowError) as exc:
        if isinstance(exc, InputError):
            raise InputError(f"{where}: {exc.where}", exc.problem, exc.expected) from None
        raise InputError(where, f"malformed placement ({exc})", None) from None


def _json_ints(values: Any, where: str, what: str) -> np.ndarray:
    """A JSON list of integers (``what`` numbers: node, core) as int64; refuses anything
    else, naming its first bad item (``numpy.asarray`` with an integer dtype would read
    ``1.7`` as 1 and ``true`` as 1); an int64 array (a list the compiled reader took) as is."""
    if isinstance(values, np.ndarray):
        return values
    if not isinstance(values, list):
        raise InputError(where, f"is {json_text(values)[:40]}", f"a list of {what} numbers")
    if set(map(type, values)) - {int}:
        i, bad = next((i, v) for i, v in enumerate(values) if type(v) is not int)
        raise InputError(f"{where}[{i}]", f"is {json_text(bad)[:40]}", f"a {what} number")
    try:
        return np.asarray(values, dtype=np.int64)
    except OverflowError:
        i = next(i for i, v in enumerate(values) if not -(2**63) <= v < 2**63)
        raise InputError(f"{where}[{i}]", f"is {values[i]}", f"a {what} number") from None


def _from_nodes(node_of: np.ndarray, core_of: np.ndarray | None = None) -> Placement:
    """A placement read from a file without a node count: as many nodes as are named."""
    return Placement(
        node_of=node_of,
        nodes=int(node_of.max()) + 1,
        strategy="unknown",
        seed=None,
        core_of=core_of,
    )


def _load_part(path: str | os.PathLike[str]) -> Placement:
    node = Column("node", True, f"{_NODE} (line i + 1 holds partition i's)", 0, MAX_NODES - 1)
    return _from_nodes(read_lines(path, node, "a .part file: one node number a line"))


def _load_csv(path: str | os.PathLike[str]) -> Placement:
    columns = (
        Column("partition", True, f"a partition number in [0, {MAX_NODES - 1}]", 0, MAX_NODES - 1),
        Column("node", True, _NODE, 0, MAX_NODES - 1),
        Column("core", True, f"a core number >= 0, or {NO_CORE} for none", NO_CORE, MAX_NODES,
               required=False),
    )  # fmt: skip
    table = read_table(path, columns, f"a placement CSV file ({CSV_HEADER})")
    if not len(table):
        raise InputError(table.where, "has no rows", "one row per partition after the header")
    order = None if _in_order(table.columns["partition"]) else _partition_order(table)
    node_of = table.columns["node"]
    core_of = table.columns.get("core")
    if order is not None:
        node_of = node_of[order]
        core_of = None if core_of is None else core_of[order]
    if core_of is not None:
        unset = core_of == NO_CORE
        if unset.all():
            core_of = None
        elif unset.any():
            rows = np.array([np.argmax(unset), np.argmin(unset)])
            rows = rows if order is None else order[rows]
            raise InputError(
                table.at(rows[0], "core"),
                f"is {NO_CORE} where line {table.lines[rows[1]]} gives a core",
                f"a core on every row, or {NO_CORE} on every row (no core decided)",
            )
    return _from_nodes(node_of, core_of)


def _in_order(part: np.ndarray) -> bool:
    """Whether ``part`` is 0, 1, ..., n - 1, as a file written in partition order has it,
    checked :data:`_CHUNK` rows at a time."""
    return all(
        np.array_equal(part[lo : lo + _CHUNK], np.arange(lo, min(lo + _CHUNK, len(part))))
        for lo in range(0, len(part), _CHUNK)
    )


def _partition_order(table: Table) -> np.ndarray:
    """The rows of a placement CSV in partition order; refuses a repeated or missing one."""
    part = table.columns["partition"]
    order = np.argsort(part, kind="stable")
    ranked = part[order]
    again = np.flatnonzero(ranked[1:] == ranked[:-1]) + 1
    if again.size:
        # The repeat met first in the file, and the line it repeats.
        j = again[np.argmin(table.lines[order[again]])]
        raise InputError(
            table.at(order[j], "partition"),
            f"repeats partition {ranked[j]} (line {table.lines[order[j - 1]]})",
            "each partition on one row",
        )
    gap = np.flatnonzero(ranked != np.arange(len(ranked)))
    if gap.size:
        raise InputError(
            table.where,
            f"has no row for partition {gap[0]} (its {len(ranked)} rows name partitions up "
            f"to {ranked[-1]})",
            "one row for each partition 0 to N - 1",
        )
    return order


def _load_npy(path: str | os.PathLike[str]) -> Placement:
    where = str(path)
    expected = "a NumPy .npy file of one integer node number per partition"
    try:
        with open(path, "rb") as fh:
            shape, _, dtype = read_npy_header(fh, where, expected)
            if len(shape) == 1 and shape[0] < 0:
                raise InputError(where, f"has a damaged .npy header (shape {shape})", expected)
            if dtype.kind not in "iu":
                raise InputError(where, f"holds {dtype} values", "integers (int32 or int64)")
            if len(shape) != 1:
                raise InputError(where, f"has shape {shape}", "a 1-D array (one node a partition)")
            data = fh.read()
    except OSError as exc:
        raise InputError(where, f"cannot read ({exc.strerror or exc})", expected) from None
    need = shape[0] * dtype.itemsize
    if len(data) != need:
        size = "is truncated" if len(data) < need else "is longer than its header says"
        raise InputError(
            where, f"{size}: {len(data):,} bytes of data for {need:,}", f"{shape[0]} {dtype}"
        )
    if not shape[0]:
        raise InputError(where, "has no partitions", expected)
    node_of = np.frombuffer(data, dtype=dtype)
    bad = np.flatnonzero((node_of < 0) | (node_of > MAX_NODES - 1))
    if bad.size:
        raise InputError(f"{where}: partition {bad[0]}", f"has node {node_of[bad[0]]}", _NODE)
    return _from_nodes(node_of.astype(np.int32))


#: Format name → ``reader(path)``.
_LOADERS = {"json": _load_json, "part": _load_part, "csv": _load_csv, "npy": _load_npy}


@dataclass(frozen=True, eq=False)
class PlacementMetrics:
    """How a placement does on a workload.

    Attributes
    ----------
    node_load
        float64, ``(steps, nodes)``: summed partition cost per node per step (workload units).
    lif
        float64, ``(steps,)``: load imbalance factor per step, :func:`load_imbalance` of
        ``node_load`` (the workload's cost alone: no overheads, unlike a simulated run's).
    bytes_cut
        Bytes per step of halo messages whose ends are on different nodes.
    bytes_total
        Bytes per step of all halo messages.
    neighbour_nodes
        int64, ``(nodes,)``: how many other nodes each node exchanges halos with.
    """

    node_load: np.ndarray
    lif: np.ndarray
    bytes_cut: int
    bytes_total: int
    neighbour_nodes: np.ndarray

    @property
    def lif_mean(self) -> float:
        """Mean of the per-step LIF."""
        return float(self.lif.mean())

    @property
    def lif_max(self) -> float:
        """Largest per-step LIF."""
        return float(self.lif.max())


def balanced_load(load: np.ndarray, cores: np.ndarray | None = None) -> np.ndarray:
    """Load per core of each row of ``load`` (``(..., nodes)``) under perfect balance.

    Parameters
    ----------
    load
        float, ``(..., nodes)``: the load of every node (any unit: work, seconds).
    cores
        ``(nodes,)``: cores of every node; ``None`` means equal nodes (load per node).

    Returns
    -------
    numpy.ndarray
        float64, ``(...)``: ``Σ load / Σ cores`` (``Σ load / nodes`` without ``cores``).
    """
    load = np.asarray(load, dtype=np.float64)
    if cores is None:
        return load.mean(axis=-1)
    cores = np.asarray(cores, dtype=np.float64)
    if cores.size and np.all(cores == cores.flat[0]):
        # Equal nodes: the mean of the per-core loads is Σ load / Σ cores in exact arithmetic,
        # and it is how the LIF has always been computed there, so preset machines keep the
        # same bits.
        return (load / cores).mean(axis=-1)
    return load.sum(axis=-1) / cores.sum()


def load_imbalance(load: np.ndarray, cores: np.ndarray | None = None) -> np.ndarray:
    """LIF of each row of ``load``: the step's time over its perfectly balanced time, − 1.

    ``max_k(load_k / cores_k) / (Σ load / Σ cores) − 1``: the busiest node per core against
    what every core would carry under perfect balance (:func:`balanced_load`). Unweighted
    means of the per-core loads are wrong on unequal nodes (a lone 1-core node 18 % over
    reads 9.5 % next to a 7-core node); this is the one definition every strategy, metric and
    report uses (a strategy wanting ``max/avg`` takes this ``+ 1``).

    Parameters
    ----------
    load
        float, ``(..., nodes)``: the load of every node in each step (or any leading shape).
    cores
        ``(nodes,)``: cores of every node; ``None`` means equal nodes.

    Returns
    -------
    numpy.ndarray
        float64, ``(...)``: the LIF of each row, ``>= 0``; 0 for a row with no load.
    """
    load = np.asarray(load, dtype=np.float64)
    per_core = load if cores is None else load / np.asarray(cores, dtype=np.float64)
    level = balanced_load(load, cores)
    peak = per_core.max(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(level > 0, peak / np.where(level > 0, level, 1.0) - 1.0, 0.0)


def placement_metrics(
    placement: Placement, workload: Workload, machine: Machine | None = None
) -> PlacementMetrics:
    """Evaluate ``placement`` on ``workload`` (and the cores of ``machine``, if given)."""
    if placement.n_parts != workload.n_parts:
        raise InputError(
            "placement",
            f"places {placement.n_parts} partitions",
            f"{workload.n_parts}, the workload's",
        )
    n = placement.nodes
    if machine is not None and machine.nodes != n:
        raise InputError("placement", f"is for {n} nodes", f"{machine.nodes}, the machine's")
    assign = sp.csr_matrix(
        (np.ones(placement.n_parts), (np.arange(placement.n_parts), placement.node_of)),
        shape=(placement.n_parts, n),
    )
    node_load = np.asarray((assign.T @ workload.cost.T).T)
    cores = None if machine is None else machine.cores().astype(np.float64)
    lif = load_imbalance(node_load, cores)
    halo = workload.halo
    src_node = placement.node_of[halo.sources()]
    dst_node = placement.node_of[halo.indices]
    cut = src_node != dst_node
    # Distinct (source node, destination node) pairs as one int64 key each, sorted in place
    # and compared with their predecessor: np.unique over rows sorts an opaque void view and
    # np.unique over keys hashes them, 27 s and 9 s for the 8M messages of 2M partitions,
    # against 0.2 s.
    keys = src_node[cut].astype(np.int64) * n + dst_node[cut]
    keys.sort()
    first = np.ones(keys.size, dtype=bool)
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    neighbours = np.bincount(keys[first] // n, minlength=n)
    return PlacementMetrics(
        node_load=node_load,
        lif=lif,
        bytes_cut=int(halo.nbytes[cut].sum()),
        bytes_total=int(halo.nbytes.sum()),
        neighbour_nodes=neighbours.astype(np.int64),
    )
