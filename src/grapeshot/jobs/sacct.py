"""Slurm accounting reader: ``sacct --parsable2`` output (``|``-separated, a header line).

Export with, for example::

    sacct -a -X --parsable2 -S 2024-01-01 -E now \\
          --format=JobID,User,Submit,Start,End,Elapsed,Timelimit,NCPUS,ReqMem,State

Required columns: ``JobID``, ``Submit``, ``Elapsed``, ``Timelimit`` and ``NCPUS`` (or
``AllocCPUS``); ``User``, ``Start``, ``ReqMem``, ``State`` and ``Partition`` are used when
present. Job steps (``123.batch``, ``123.0``) are skipped; jobs that never started (``Start`` =
``Unknown`` or ``None``) are skipped as unrunnable. Bad rows are reported by line and column
like SWF's.

``Partition`` becomes SWF field 16 (``partition``), numbered 1, 2, … in the order the
partitions first appear in the file (among the rows read); an empty cell is -1 (none
recorded). A pending job submitted to several partitions is written ``a,b`` by Slurm: it is
counted in the first, ``a``. The names go into the trace header as SWF's header comments do,
``MaxPartitions: 2`` and one ``Partition: 1 batch`` line each (joined with newlines in
:attr:`~grapeshot.jobs.trace.JobTrace.header`; :func:`grapeshot.jobs.partitions.partition_names`
reads the number → name mapping back, from a sacct export or an SWF log alike).
"""

from __future__ import annotations

import os
import re
from datetime import datetime
from pathlib import Path

import numpy as np

from grapeshot.jobs.swf import SwfRead
from grapeshot.jobs.trace import JobTrace, empty_columns
from grapeshot.model.errors import InputError, read_input_text

# ASCII digits only (``\d`` takes any script's) and few of them: a value past int64 or float
# range is a damaged log, refused by its line and column, never a wrapped number or inf.
_DURATION = re.compile(
    r"^(?:([0-9]{1,9})-)?(?:([0-9]{1,9}):)?([0-9]{1,9}):([0-9]{1,9}(?:\.[0-9]{1,9})?)$"
)
_MEM = re.compile(r"^([0-9]{1,15}(?:\.[0-9]{1,9})?)([KMGT]?)([nc]?)$")
_COUNT = re.compile(r"^[0-9]{1,18}$")
#: A partition name: printable, no spaces (it is written as ``; Partition: 1 name``).
_PARTITION = re.compile(r"^[^\s,|]{1,200}$")
_UNIT_KB = {"": 1024.0, "K": 1.0, "M": 1024.0, "G": 1024.0**2, "T": 1024.0**3}
_STATUS = {"COMPLETED": 1, "FAILED": 0, "CANCELLED": 5, "TIMEOUT": 0, "OUT_OF_MEMORY": 0}


def parse_duration(text: str, where: str) -> float:
    """Slurm ``[D-][HH:]MM:SS`` → seconds; ``UNLIMITED`` / ``Partition_Limit`` → -1."""
    if text in ("UNLIMITED", "Partition_Limit", "INVALID", ""):
        return -1.0
    m = _DURATION.match(text)
    if m is None:
        raise InputError(where, f"got {text[:40]!r}", "a duration [D-][HH:]MM:SS")
    d, h, mi, s = m.groups()
    return int(d or 0) * 86400.0 + int(h or 0) * 3600.0 + int(mi) * 60.0 + float(s)


def parse_time(text: str, where: str) -> float:
    """ISO timestamp ``2024-01-31T12:00:00`` → POSIX seconds; ``Unknown``/``None`` → NaN."""
    if text in ("Unknown", "None", ""):
        return float("nan")
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise InputError(where, f"got {text[:40]!r}", "a timestamp YYYY-MM-DDTHH:MM:SS") from None


def parse_mem_kb(text: str, cpus: int, where: str) -> float:
    """``4000M``, ``4Gc`` (per CPU), ``16Gn`` (per node) → KB per processor; empty → -1."""
    if text in ("", "0", "0n", "0c"):
        return -1.0
    m = _MEM.match(text)
    if m is None:
        raise InputError(where, f"got {text[:40]!r}", "memory like 4000M, 4Gc or 16Gn")
    value, unit, per = m.groups()
    kb = float(value) * _UNIT_KB[unit]
    return kb if per == "c" or cpus <= 0 else kb / cpus


def parse_sacct_text(text: str, source: str = "<sacct>", *, strict: bool = False) -> SwfRead:
    """Parse ``sacct --parsable2`` text into a trace; bad rows skipped (or refused)."""
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        raise InputError(source, "is empty", "sacct --parsable2 output with a header line")
    names = [h.strip() for h in lines[first].split("|")]
    col = {name: k for k, name in enumerate(names)}
    if "AllocCPUS" in col and "NCPUS" not in col:
        col["NCPUS"] = col["AllocCPUS"]
    missing = [c for c in ("JobID", "Submit", "Elapsed", "Timelimit", "NCPUS") if c not in col]
    if missing:
        raise InputError(
            f"{source} line {first + 1}", f"header lacks {', '.join(missing)}",
            "the columns JobID, Submit, Elapsed, Timelimit, NCPUS",
        )  # fmt: skip
    rows: list[tuple[float, ...]] = []
    users: dict[str, int] = {}
    partitions: dict[str, int] = {}
    bad: list[InputError] = []
    seen = 0
    for number, raw in enumerate(lines[first + 1 :], start=first + 2):
        if not raw.strip():
            continue
        seen += 1
        cells = raw.split("|")
        where = f"{source} line {number}"
        try:
            if len(cells) < len(names):
                k = len(cells)
                raise InputError(f"{where} column {names[k]}", "missing",
                                 f"{len(names)} '|'-separated columns")  # fmt: skip

            def cell(name: str, cells: list[str] = cells) -> str:
                return cells[col[name]].strip() if name in col else ""

            job = cell("JobID")
            if "." in job:  # a job step, not a job
                seen -= 1
                continue
            base = job.split("_")[0].split("+")[0]
            if not _COUNT.fullmatch(base):
                raise InputError(f"{where} column JobID", f"got {job[:40]!r}", "a job number")
            if not _COUNT.fullmatch(cell("NCPUS")):
                raise InputError(f"{where} column NCPUS", f"got {cell('NCPUS')[:40]!r}",
                                 "an integer >= 0")  # fmt: skip
            ncpus = int(cell("NCPUS"))
            submit = parse_time(cell("Submit"), f"{where} column Submit")
            if np.isnan(submit):
                raise InputError(f"{where} column Submit", "unknown", "a timestamp")
            start = parse_time(cell("Start"), f"{where} column Start") if "Start" in col else submit
            if start < submit:
                raise InputError(f"{where} column Start", f"{cell('Start')[:40]!r} is before "
                                 "Submit", "a start at or after the submission")  # fmt: skip
            elapsed = parse_duration(cell("Elapsed"), f"{where} column Elapsed")
            limit = parse_duration(cell("Timelimit"), f"{where} column Timelimit")
            mem = parse_mem_kb(cell("ReqMem"), ncpus, f"{where} column ReqMem")
            state = cell("State").split(" ")[0]
            # "a,b": a pending job submitted to several partitions, counted in the first.
            part = next((x.strip() for x in cell("Partition").split(",") if x.strip()), "")
            if part and (not _PARTITION.fullmatch(part) or not part.isprintable()):
                raise InputError(f"{where} column Partition", f"got {part[:40]!r}",
                                 "a partition name without spaces")  # fmt: skip
            user = users.setdefault(cell("User") or "?", len(users) + 1)
            part_no = partitions.setdefault(part, len(partitions) + 1) if part else -1
            run = elapsed if not np.isnan(start) else -1.0
            wait = start - submit if not np.isnan(start) else -1.0
            rows.append((float(base), submit, wait, run, float(ncpus), limit, mem,
                         float(_STATUS.get(state, -1)), float(user), float(part_no)))  # fmt: skip
        except InputError as exc:
            if strict:
                raise
            bad.append(exc)
    table = np.array(rows, dtype=np.float64).reshape(len(rows), 10)
    cols = empty_columns(len(rows))
    t0 = table[:, 1].min() if len(rows) else 0.0
    cols["job_id"] = table[:, 0].astype(np.int64)
    cols["submit"] = table[:, 1] - t0
    cols["wait"] = table[:, 2]
    cols["run"] = table[:, 3]
    cols["procs"] = table[:, 4].astype(np.int64)
    cols["req_procs"] = cols["procs"].copy()
    cols["req_time"] = table[:, 5]
    cols["req_mem"] = table[:, 6]
    cols["status"] = table[:, 7].astype(np.int64)
    cols["user"] = table[:, 8].astype(np.int64)
    cols["partition"] = table[:, 9].astype(np.int64)
    header = {"Note": "from sacct --parsable2"}
    if partitions:
        header["MaxPartitions"] = str(len(partitions))
        header["Partition"] = "\n".join(f"{k} {name}" for name, k in partitions.items())
    trace = JobTrace(cols, header, source)
    return SwfRead(trace.take(np.argsort(trace.submit, kind="stable")), tuple(bad), seen)


def read_sacct(path: str | os.PathLike[str], *, strict: bool = False) -> SwfRead:
    """Read a ``sacct --parsable2`` file; see :func:`parse_sacct_text`."""
    text = read_input_text(path, "a sacct file", errors="replace")
    return parse_sacct_text(text, Path(path).name, strict=strict)
