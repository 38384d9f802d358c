"""A workload from the user's own timings: a cost CSV file and, optionally, a halo CSV file.

A code grapeshot does not run can still be placed and simulated: time it however you like,
write what you measured as

- **costs** ``step,partition,seconds``: one row for every step ``0 .. S-1`` and every
  partition ``0 .. P-1``, in any order, each ``(step, partition)`` once; a partition idle in
  a step is a row with ``0`` seconds (a missing row is refused, never read as zero);
- **halo** (optional) ``src,dst,bytes``: the bytes partition ``src`` sends partition ``dst``
  in every step, one row per directed message, each ``(src, dst)`` once (list both
  directions of an exchange);

and :func:`import_trace` builds the :class:`~grapeshot.model.workload.Workload` (``grapeshot
trace import`` writes it to HDF5). Partition ids flatten the partition grid in C order, as
everywhere in grapeshot. Without a halo file the halo is the grid's
(:func:`~grapeshot.model.workload.grid_halo`: one ghost layer of :data:`GRID_CELL_BYTES`-byte
cells to every face, edge and corner neighbour, the synthetic SPECs' defaults) over the
domain's cells, which default to one cell per partition.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from grapeshot.model.csv_table import Column, Table, read_table
from grapeshot.model.errors import InputError
from grapeshot.model.workload import HaloGraph, Workload, check_grid, grid_halo

#: The columns of the cost file and of the halo file, in the order documentation lists them.
COST_HEADER = "step,partition,seconds"
HALO_HEADER = "src,dst,bytes"
#: Largest halo message accepted, bytes per step (1 TiB): sums over millions of messages
#: stay within int64, and no halo is near it.
MAX_MESSAGE_BYTES = 2**40
#: The grid halo of a trace imported without a halo file (the synthetic SPECs' defaults).
GRID_GHOST = 1
GRID_CELL_BYTES = 8
#: The ``app`` attribute of an imported trace (``scene`` is the cost file's name).
APP = "import"


def _grid_text(parts_shape: tuple[int, ...]) -> str:
    return ",".join(map(str, parts_shape))


def _first_repeat(table: Table, keys: tuple[np.ndarray, np.ndarray]) -> tuple[int, int] | None:
    """``(row, earlier row)`` of the first row (in the file) repeating another's keys."""
    order = np.lexsort(keys[::-1])  # stable: rows with equal keys stay in file order
    a, b = keys[0][order], keys[1][order]
    again = np.flatnonzero((a[1:] == a[:-1]) & (b[1:] == b[:-1])) + 1
    if not again.size:
        return None
    j = again[np.argmin(table.lines[order[again]])]
    return int(order[j]), int(order[j - 1])


def read_costs(path: str | os.PathLike[str], parts_shape: tuple[int, ...]) -> np.ndarray:
    """The cost file's seconds as a ``(steps, P)`` float64 array.

    Parameters
    ----------
    path
        The cost CSV file (header ``step,partition,seconds``, columns in any order).
    parts_shape
        The partition grid; ``P`` is its product.

    Raises
    ------
    InputError
        Naming the file, the line and the column: a value that is not what the column
        holds, a repeated ``(step, partition)``, or the first one with no row.
    """
    n = math.prod(parts_shape)
    grid = _grid_text(parts_shape)
    columns = (
        Column("step", True, "a step number >= 0"),
        Column("partition", True, f"a partition in [0, {n - 1}] (--parts {grid})", 0, n - 1),
        Column("seconds", False, "a number >= 0"),
    )
    table = read_table(path, columns, f"a cost CSV file ({COST_HEADER}; docs/formats.md)")
    if not len(table):
        raise InputError(
            table.where, "has no rows", "a row per step and partition after the header"
        )
    step, part = table.columns["step"], table.columns["partition"]
    repeat = _first_repeat(table, (step, part))
    if repeat is not None:
        row, first = repeat
        raise InputError(
            table.at(row),
            f"repeats step {step[row]}, partition {part[row]} (line {table.lines[first]})",
            "each (step, partition) on one row",
        )
    steps = int(step.max()) + 1
    if len(table) != steps * n:
        s, p = _first_missing(step, part, n)
        raise InputError(
            table.where,
            f"has no row for step {s}, partition {p} ({len(table)} rows for steps 0 to "
            f"{steps - 1})",
            f"{steps} × {n} rows, one for every step and every partition of --parts {grid} "
            "(an idle partition: seconds 0)",
        )
    cost = np.empty((steps, n), dtype=np.float64)
    cost[step, part] = table.columns["seconds"]
    return cost


def _first_missing(step: np.ndarray, part: np.ndarray, n: int) -> tuple[int, int]:
    """The first ``(step, partition)`` in C order with no row (rows distinct, some missing).

    Never allocates by the largest step: a typo such as step 10**15 is one missing row away.
    """
    present, count = np.unique(step, return_counts=True)
    gaps = np.flatnonzero(present != np.arange(len(present)))
    absent = int(gaps[0]) if gaps.size else len(present)  # first step with no row at all
    short = np.flatnonzero(count < n)
    if short.size and present[short[0]] < absent:
        s = int(present[short[0]])
        seen = np.sort(part[step == s])
        holes = np.flatnonzero(seen != np.arange(len(seen)))
        return s, int(holes[0]) if holes.size else len(seen)
    return absent, 0


def read_halo(path: str | os.PathLike[str], parts_shape: tuple[int, ...]) -> HaloGraph:
    """The halo file's messages as a :class:`~grapeshot.model.workload.HaloGraph`.

    Parameters
    ----------
    path
        The halo CSV file (header ``src,dst,bytes``, columns in any order); a file with the
        header alone is a code that sends nothing.
    parts_shape
        The partition grid.

    Raises
    ------
    InputError
        Naming the file, the line and the column: a value out of range, a message from a
        partition to itself, or a repeated ``(src, dst)``.
    """
    n = math.prod(parts_shape)
    grid = _grid_text(parts_shape)
    part = f"a partition in [0, {n - 1}] (--parts {grid})"
    columns = (
        Column("src", True, part, 0, n - 1),
        Column("dst", True, part, 0, n - 1),
        Column("bytes", True, "an integer number of bytes in [0, 2**40]", 0, MAX_MESSAGE_BYTES),
    )
    table = read_table(path, columns, f"a halo CSV file ({HALO_HEADER}; docs/formats.md)")
    src, dst = table.columns["src"], table.columns["dst"]
    self_sent = np.flatnonzero(src == dst)
    if self_sent.size:
        row = int(self_sent[0])
        raise InputError(
            table.at(row, "dst"),
            f"is {dst[row]}, the src",
            "a partition other than src (a partition sends itself nothing)",
        )
    repeat = _first_repeat(table, (src, dst))
    if repeat is not None:
        row, first = repeat
        raise InputError(
            table.at(row),
            f"repeats src {src[row]}, dst {dst[row]} (line {table.lines[first]})",
            "each (src, dst) on one row: the bytes of all its messages in a step",
        )
    order = np.lexsort((dst, src))
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    return HaloGraph(indptr, dst[order], table.columns["bytes"][order])


def import_trace(
    costs: str | os.PathLike[str],
    parts_shape: tuple[int, ...],
    *,
    cells: tuple[int, ...] | None = None,
    halo: str | os.PathLike[str] | None = None,
) -> Workload:
    """The workload of a cost file (and a halo file) on a partition grid.

    Parameters
    ----------
    costs
        The cost CSV file: ``step,partition,seconds``.
    parts_shape
        Partitions per axis (2 or 3 axes); partition ids flatten it in C order.
    cells
        Cells per axis of the domain; default one cell per partition (``parts_shape``).
        They size what the simulator derives from cells: the grid halo when there is no halo
        file, and the state a migrated partition carries.
    halo
        The halo CSV file ``src,dst,bytes``; default the grid halo (module docstring).

    Raises
    ------
    InputError
        For the grid (naming ``--parts``/``--cells``) before any file is read, then naming
        the file, line and column of the first bad value.
    """
    parts_shape = tuple(int(k) for k in parts_shape)
    domain = parts_shape if cells is None else tuple(int(c) for c in cells)
    check_grid(domain, parts_shape, "--parts/--cells")
    cost = read_costs(costs, parts_shape)
    if halo is None:
        graph = grid_halo(domain, parts_shape, ghost=GRID_GHOST, cell_bytes=GRID_CELL_BYTES)
    else:
        graph = read_halo(halo, parts_shape)
    return Workload(domain, parts_shape, cost, graph, "s", None, APP, Path(costs).name)
