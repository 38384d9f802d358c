"""The batch-log readers fuzzed: SWF and ``sacct --parsable2``, from files.

Each reader gets random bytes, valid logs with one field damaged (near-valid text), and
valid logs it must read back exactly. The property: the log is read (bad lines skipped and
each named by its line and field, or with ``strict`` the first one refused), or one
InputError naming the file; never another exception, and every job read holds a clean value
in every field (finite; ``-1`` or ``>= 0`` where SWF says so). tests/jobs/test_swf.py and
tests/jobs/test_workloads.py fuzz the text parsers on random lines too.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from grapeshot.jobs.partitions import partition_counts, partition_names, select_partitions
from grapeshot.jobs.sacct import read_sacct
from grapeshot.jobs.swf import SwfRead, format_swf, read_swf
from grapeshot.jobs.trace import FLOAT_FIELDS, SWF_FIELDS, make_trace
from grapeshot.model.errors import InputError
from tests.fuzz import example_file, fuzz

#: The readers go through a temporary file each.
SETTINGS = fuzz(0.5)


#: Values a damaged field may take.
BAD_FIELDS = st.one_of(
    st.sampled_from(["", " ", "-1", "-2", "1.5", "1e3", "1e400", "nan", "inf", "-0", "+1",
                     "0x1", "1_0", "٣", "²", "9" * 30, "9" * 5000, "\x00", "|", "Unknown",
                     "UNLIMITED", "None", "1-", ":", "1:2:3:4", "2024-13-01T00:00:00",
                     "0001-01-01T00:00:00", "9999-12-31T23:59:59", "4Gq", "1e5Mc"]),
    st.text(max_size=10),
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)  # fmt: skip


def _clean(read: SwfRead, path: Path) -> None:
    """What every read log holds: named bad lines, and finite, in-range values."""
    for e in read.bad:
        assert isinstance(e, InputError)
        assert e.where.startswith(f"{path.name} line "), e.where
        assert " field " in e.where or " column " in e.where, e.where
    for name, column in read.trace.columns.items():
        assert np.all(np.isfinite(column)), name
    t = read.trace
    assert (np.diff(t.submit) >= 0).all()
    for name in ("submit", "wait", "run", "procs", "req_time", "req_mem", "partition"):
        values = t.columns[name]
        assert ((values == -1) | (values >= 0)).all(), (name, values)
    # Partitions: every job counted once; choosing every recorded one keeps exactly those jobs.
    counts = partition_counts(t)
    assert sum(c.jobs for c in counts) == (len(t) if counts else 0)
    numbers = [str(c.number) for c in counts if c.number is not None]
    if numbers:
        kept, step = select_partitions(t, numbers, path.name)
        assert len(kept) == step.remaining == int((t.partition >= 0).sum())


# --- SWF ----------------------------------------------------------------------------------

GOOD_SWF = "1 0 5 100 4 -1 -1 4 200 -1 1 3 1 -1 -1 1 -1 -1"


def _swf_or_named_error(path: Path) -> None:
    for strict in (False, True):
        try:
            read = read_swf(path, strict=strict)
        except InputError as exc:
            assert strict and str(exc).startswith(f"{path.name} line "), str(exc)
            continue
        _clean(read, path)
        assert read.lines == len(read.trace) + len(read.bad)


@SETTINGS
@given(st.binary(max_size=400))
def test_swf_fuzz_any_bytes(data: bytes) -> None:
    _swf_or_named_error(example_file(data, ".swf"))


def _swf_jobs(draw: st.DrawFn, n: int) -> list[list[str]]:
    rows = []
    for i in range(n):
        row = []
        for name in SWF_FIELDS:
            if name == "job_id":
                row.append(str(i + 1))
            elif name == "submit":
                row.append(str(draw(st.integers(0, 10**6))))
            elif name in FLOAT_FIELDS:
                row.append(draw(st.sampled_from(["-1", "0", "5", "60.25", "86400"])))
            else:
                row.append(draw(st.sampled_from(["-1", "1", "4", "64"])))
        rows.append(row)
    return rows


@st.composite
def damaged_swf(draw: st.DrawFn) -> str:
    """A valid log (header comments, jobs) with one field, line or comment damaged."""
    rows = _swf_jobs(draw, draw(st.integers(1, 5)))
    i = draw(st.integers(0, len(rows) - 1))
    how = draw(st.sampled_from(["field", "drop", "extra", "comment"]))
    if how == "field":
        rows[i][draw(st.integers(0, len(SWF_FIELDS) - 1))] = draw(BAD_FIELDS)
    elif how == "drop":
        del rows[i][draw(st.integers(0, len(SWF_FIELDS) - 1))]
    elif how == "extra":
        rows[i].append(draw(BAD_FIELDS))
    header = ["; Version: 2.2", "; MaxProcs: " + draw(st.sampled_from(["64", "x", "", "-1"]))]
    if how == "comment":
        header.append(";" + draw(st.text(max_size=20)))
    return "\n".join(header + [" ".join(r) for r in rows]) + "\n"


@SETTINGS
@given(damaged_swf())
def test_swf_fuzz_one_damaged_field(text: str) -> None:
    _swf_or_named_error(example_file(text, ".swf"))


@st.composite
def job_columns(draw: st.DrawFn) -> dict[str, np.ndarray]:
    """The fields a simulated log holds, with SWF's 2-decimal seconds."""
    n = draw(st.integers(0, 8))
    quarter = st.integers(0, 4 * 10**7).map(lambda q: q / 4)  # exact in 2 decimals
    return {
        "submit": np.array(draw(st.lists(quarter, min_size=n, max_size=n))),
        "run": np.array(draw(st.lists(quarter | st.just(-1.0), min_size=n, max_size=n))),
        "procs": np.array(draw(st.lists(st.integers(1, 10**6), min_size=n, max_size=n))),
        "req_time": np.array(draw(st.lists(quarter | st.just(-1.0), min_size=n, max_size=n))),
        "user": np.array(draw(st.lists(st.integers(1, 500), min_size=n, max_size=n))),
    }


@SETTINGS
@given(job_columns())
def test_swf_fuzz_round_trip(cols: dict[str, np.ndarray]) -> None:
    trace = make_trace(**cols, header={"MaxProcs": "64", "Note": "fuzz"})
    path = example_file(format_swf(trace), ".swf")
    read = read_swf(path, strict=True)
    assert not read.bad and read.lines == len(trace)
    assert read.trace.header == trace.header
    for name in SWF_FIELDS:
        assert np.array_equal(read.trace.columns[name], trace.columns[name]), name


# --- sacct --------------------------------------------------------------------------------

SACCT_HEADER = "JobID|User|Submit|Start|End|Elapsed|Timelimit|NCPUS|ReqMem|State|Partition"
#: Partition cells and the partition each means: Slurm writes ``a,b`` for a pending job
#: submitted to several (the first counts); an empty cell records none.
PARTITIONS = {"batch": "batch", "gpu": "gpu", "debug,batch": "debug", ",gpu": "gpu",
              "": None, "long-queue_2": "long-queue_2", "7": "7"}  # fmt: skip
EPOCH = datetime(2024, 1, 1)


def _duration(seconds: int, style: int) -> str:
    d, rest = divmod(seconds, 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    if style == 0 or d:
        return f"{d}-{h:02d}:{m:02d}:{s:02d}" if d else f"{h:02d}:{m:02d}:{s:02d}"
    return f"{h * 60 + m:02d}:{s:02d}"  # MM:SS, as sacct prints short times


@st.composite
def sacct_jobs(draw: st.DrawFn) -> list[dict]:
    """Jobs of a sacct export: what each row says, and what the reader must make of it."""
    jobs = []
    for i in range(draw(st.integers(1, 6))):
        submit = EPOCH + timedelta(seconds=draw(st.integers(0, 10**7)))
        started = draw(st.booleans())
        wait = draw(st.integers(0, 10**5))
        elapsed = draw(st.integers(0, 30 * 86400))
        limit = draw(st.integers(1, 30 * 86400) | st.none())
        ncpus = draw(st.integers(1, 4096))
        mem = draw(st.integers(1, 10**5))
        unit = draw(st.sampled_from(["K", "M", "G", "T", ""]))
        per = draw(st.sampled_from("cn"))
        kb = mem * {"": 1024.0, "K": 1.0, "M": 1024.0, "G": 1024.0**2, "T": 1024.0**3}[unit]
        start = submit + timedelta(seconds=wait)
        partition = draw(st.sampled_from(sorted(PARTITIONS)))
        row = [
            str(1000 + i) + draw(st.sampled_from(["", "_3", "+0"])),
            draw(st.sampled_from(["ana", "ben", "", "c d"])),
            submit.isoformat(),
            start.isoformat() if started else draw(st.sampled_from(["Unknown", "None"])),
            "Unknown",
            _duration(elapsed, draw(st.integers(0, 1))),
            _duration(limit, draw(st.integers(0, 1))) if limit else "UNLIMITED",
            str(ncpus),
            f"{mem}{unit}{per}",
            draw(st.sampled_from(["COMPLETED", "FAILED", "PENDING", "CANCELLED by 5"])),
            partition,
        ]
        jobs.append(
            {
                "row": "|".join(row),
                "step": f"{1000 + i}.batch||{submit.isoformat()}|||00:01||1||COMPLETED|x",
                "submit": submit.timestamp(),
                "wait": float(wait) if started else -1.0,
                "run": float(elapsed) if started else -1.0,
                "req_time": float(limit) if limit else -1.0,
                "procs": ncpus,
                "req_mem": kb if per == "c" else kb / ncpus,
                "partition": PARTITIONS[partition],
            }
        )
    return jobs


@SETTINGS
@given(sacct_jobs(), st.booleans())
def test_sacct_fuzz_round_trip(jobs: list[dict], steps: bool) -> None:
    rows = [r for j in jobs for r in ([j["row"], j["step"]] if steps else [j["row"]])]
    path = example_file(SACCT_HEADER + "\n" + "\n".join(rows) + "\n", ".txt")
    read = read_sacct(path, strict=True)
    assert not read.bad and read.lines == len(jobs) and len(read.trace) == len(jobs)
    order = np.argsort([j["submit"] for j in jobs], kind="stable")
    t = read.trace
    t0 = min(j["submit"] for j in jobs)
    for k, i in enumerate(order):
        j = jobs[i]
        assert t.submit[k] == j["submit"] - t0
        assert (t.wait[k], t.run[k], t.req_time[k]) == (j["wait"], j["run"], j["req_time"])
        assert t.procs[k] == j["procs"] and math.isclose(t.req_mem[k], j["req_mem"])
    # Partitions numbered 1, 2, ... in the order they first appear in the file (steps skipped).
    first: dict[str, int] = {}
    for j in jobs:
        if j["partition"] is not None:
            first.setdefault(j["partition"], len(first) + 1)
    assert partition_names(t) == {k: name for name, k in first.items()}
    for k, i in enumerate(order):
        assert t.partition[k] == first.get(jobs[i]["partition"], -1)
    # ... and the SWF it is written as says the same.
    back = read_swf(example_file(format_swf(t), ".swf"), strict=True).trace
    assert np.array_equal(back.partition, t.partition)
    assert partition_names(back) == partition_names(t)


def _sacct_or_named_error(path: Path) -> None:
    for strict in (False, True):
        try:
            read = read_sacct(path, strict=strict)
        except InputError as exc:
            assert str(exc).startswith(path.name), str(exc)
            continue
        _clean(read, path)
        t = read.trace  # the header names exactly the partitions of the jobs read
        assert set(partition_names(t)) == set(t.partition[t.partition > 0].tolist())


@SETTINGS
@given(sacct_jobs(), st.data())
def test_sacct_fuzz_one_damaged_cell(jobs: list[dict], data: st.DataObject) -> None:
    rows = [j["row"].split("|") for j in jobs]
    i = data.draw(st.integers(0, len(rows) - 1))
    how = data.draw(st.sampled_from(["cell", "drop", "extra", "header"]))
    header = SACCT_HEADER.split("|")
    if how == "cell":
        rows[i][data.draw(st.integers(0, len(header) - 1))] = data.draw(BAD_FIELDS)
    elif how == "drop":
        del rows[i][data.draw(st.integers(0, len(header) - 1))]
    elif how == "extra":
        rows[i].append(data.draw(BAD_FIELDS))
    else:
        header[data.draw(st.integers(0, len(header) - 1))] = data.draw(
            st.sampled_from(["AllocCPUS", "", "JobID", "x"]) | st.text(max_size=6)
        )
    text = "|".join(header) + "\n" + "\n".join("|".join(r) for r in rows) + "\n"
    _sacct_or_named_error(example_file(text, ".txt"))


@SETTINGS
@given(st.binary(max_size=400), st.booleans())
def test_sacct_fuzz_any_bytes(data: bytes, with_header: bool) -> None:
    prefix = (SACCT_HEADER + "\n").encode() if with_header else b""
    _sacct_or_named_error(example_file(prefix + data, ".txt"))
