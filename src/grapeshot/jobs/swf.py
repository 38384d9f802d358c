"""Standard Workload Format (SWF 2.2) reader and writer.

A data line holds the 18 whitespace-separated fields of :data:`~grapeshot.jobs.trace.SWF_FIELDS`
(extended logs append more columns: tolerated and ignored); ``-1`` means missing. Lines
starting with ``;`` are header comments (``; MaxProcs: 240``). A bad data line is reported by
line number and field; it is skipped and counted, or, with ``strict=True``, refused with an
:class:`~grapeshot.model.errors.InputError`.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from grapeshot.jobs.trace import FLOAT_FIELDS, SWF_FIELDS, JobTrace
from grapeshot.model.atomic import atomic_path
from grapeshot.model.errors import InputError, read_input_text

_N = len(SWF_FIELDS)
_IS_FLOAT = tuple(name in FLOAT_FIELDS for name in SWF_FIELDS)
#: Fields that may not be missing: without a submit time a job cannot be placed in time.
_REQUIRED = frozenset({"submit"})


@dataclass(frozen=True)
class SwfRead:
    """What :func:`read_swf` found.

    Attributes
    ----------
    trace
        The good jobs, sorted by submit time (stable).
    bad
        One :class:`InputError` per skipped line, each naming the line and the field.
    lines
        Data lines seen (good + bad; comments and blank lines excluded).
    """

    trace: JobTrace
    bad: tuple[InputError, ...]
    lines: int


def _check_field(token: str, k: int, where: str) -> float:
    """Parse field ``k`` (0-based) of a line; raise InputError naming it if invalid."""
    name = SWF_FIELDS[k]
    fwhere = f"{where} field {k + 1} ({name})"
    try:
        value = float(token)
    except ValueError:
        raise InputError(fwhere, f"got {token[:40]!r}", "a number or -1 for missing") from None
    if not math.isfinite(value):
        raise InputError(fwhere, f"got {token[:40]!r}", "a finite number or -1 for missing")
    if value == -1.0:
        if name in _REQUIRED:
            raise InputError(fwhere, "missing (-1)", "seconds >= 0 since the log's start")
        return value
    if value < 0.0:
        raise InputError(fwhere, f"got {token[:40]}", "a value >= 0, or -1 for missing")
    if not _IS_FLOAT[k] and value != int(value):
        raise InputError(fwhere, f"got {token[:40]}", "an integer, or -1 for missing")
    if not _IS_FLOAT[k] and value > 2**62:
        raise InputError(fwhere, f"got {token[:40]}", "an integer below 2**62")
    return value


def parse_swf_text(text: str, source: str = "<swf>", *, strict: bool = False) -> SwfRead:
    """Parse SWF ``text``; see :func:`read_swf` (``source`` names it in messages)."""
    header: dict[str, str] = {}
    rows: list[list[float]] = []
    bad: list[InputError] = []
    lines = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith(";"):
            key, sep, value = line[1:].partition(":")
            key = key.strip()
            if sep and key and " " not in key:
                value = value.strip()
                header[key] = f"{header[key]}\n{value}" if key in header else value
            continue
        lines += 1
        where = f"{source} line {number}"
        tokens = line.split()
        try:
            values = [_check_field(tokens[k], k, where) for k in range(min(len(tokens), _N))]
            if len(tokens) < _N:
                k = len(tokens)
                raise InputError(
                    f"{where} field {k + 1} ({SWF_FIELDS[k]})",
                    f"missing: the line has {len(tokens)} fields",
                    f"{_N} whitespace-separated fields",
                )
            rows.append(values)
        except InputError as exc:
            if strict:
                raise
            bad.append(exc)
    table = np.array(rows, dtype=np.float64).reshape(len(rows), _N)
    columns = {
        name: (table[:, k].copy() if _IS_FLOAT[k] else table[:, k].astype(np.int64))
        for k, name in enumerate(SWF_FIELDS)
    }
    trace = JobTrace(columns, header, source)
    order = np.argsort(trace.submit, kind="stable")
    return SwfRead(trace.take(order), tuple(bad), lines)


def read_swf(path: str | os.PathLike[str], *, strict: bool = False) -> SwfRead:
    """Read an SWF file.

    Parameters
    ----------
    path
        The file (UTF-8 or ASCII; undecodable bytes make their field invalid).
    strict
        Refuse the file at its first bad line instead of skipping bad lines.

    Returns
    -------
    SwfRead
        The trace, the skipped lines' errors and the number of data lines.

    Raises
    ------
    InputError
        If the file cannot be read, or (``strict``) at the first bad line, naming the line and
        field: ``"log.swf line 12 field 4 (run): got 'x'; expected a number or -1 for missing"``.
    """
    text = read_input_text(path, "an SWF file", errors="replace")
    return parse_swf_text(text, Path(path).name, strict=strict)


def format_swf(trace: JobTrace) -> str:
    """The SWF text of ``trace``: its header comments, then one line of 18 fields per job."""
    out = [f"; {k}: {line}" for k, v in trace.header.items() for line in v.split("\n")]
    cols = [trace.columns[name] for name in SWF_FIELDS]
    for i in range(len(trace)):
        fields = []
        for k, col in enumerate(cols):
            v = col[i]
            if _IS_FLOAT[k] and v != -1.0 and v != int(v):
                fields.append(f"{v:.2f}")
            else:
                fields.append(str(int(v)))
        out.append(" ".join(fields))
    return "\n".join(out) + "\n"


def write_swf(trace: JobTrace, path: str | os.PathLike[str]) -> Path:
    """Write ``trace`` as SWF to ``path`` atomically; returns the path."""
    final = Path(path)
    with atomic_path(final) as tmp:
        tmp.write_text(format_swf(trace), encoding="utf-8")
    return final
