"""A batch workload as columns: one numpy array per SWF field, one row per job."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

#: The 18 fields of the Standard Workload Format 2.2, in file order (1-based numbers in docs).
SWF_FIELDS: tuple[str, ...] = (
    "job_id",
    "submit",
    "wait",
    "run",
    "procs",
    "cpu_used",
    "mem_used",
    "req_procs",
    "req_time",
    "req_mem",
    "status",
    "user",
    "group",
    "exe",
    "queue",
    "partition",
    "preceding",
    "think",
)

#: Fields kept as floats (seconds or KB); the others are integer ids and counts.
FLOAT_FIELDS: frozenset[str] = frozenset(
    {"submit", "wait", "run", "cpu_used", "mem_used", "req_time", "req_mem", "think"}
)


@dataclass(frozen=True)
class JobTrace:
    """A workload: jobs sorted by submit time, every SWF field as an array of shape ``(n,)``.

    Missing values (``-1`` in SWF) are ``-1`` (ints) or ``-1.0`` (floats), as in the file.

    Attributes
    ----------
    columns
        Field name (see :data:`SWF_FIELDS`) → array. Times in seconds (``submit`` from the
        log's start), memory in KB per processor, ``procs`` = processors the job ran on.
    header
        The header comments (``; Key: value``) as a dict of strings; repeated keys (``Queue``,
        ``Partition``) are joined with newlines.
    source
        Where the jobs came from (file name or generator spec), for messages and reports.
    """

    columns: dict[str, np.ndarray]
    header: dict[str, str] = field(default_factory=dict)
    source: str = "trace"

    def __post_init__(self) -> None:
        lengths = {len(v) for v in self.columns.values()}
        if len(lengths) > 1:
            raise ValueError(f"columns of unequal length: {sorted(lengths)}")

    def __len__(self) -> int:
        return len(self.columns["submit"])

    def __getattr__(self, name: str) -> np.ndarray:
        # Column access as attributes: trace.submit, trace.run, ...
        columns = self.__dict__.get("columns")
        if columns is not None and name in columns:
            return columns[name]
        raise AttributeError(name)

    def take(self, index: np.ndarray) -> JobTrace:
        """The jobs at ``index`` (a boolean mask or integer positions), in that order."""
        return replace(self, columns={k: v[index] for k, v in self.columns.items()})

    def with_column(self, name: str, values: np.ndarray) -> JobTrace:
        """A copy with column ``name`` replaced by ``values`` (same length)."""
        cols = dict(self.columns)
        cols[name] = np.asarray(values)
        return replace(self, columns=cols)

    def header_int(self, key: str) -> int | None:
        """Header value ``key`` (e.g. ``"MaxProcs"``) as an int, or None if absent or not one."""
        value = self.header.get(key)
        if value is None:
            return None
        try:
            return int(value.split()[0])
        except (ValueError, IndexError):
            return None


def empty_columns(n: int) -> dict[str, np.ndarray]:
    """All 18 SWF columns filled with ``-1`` (missing), ``n`` rows."""
    return {
        name: np.full(
            n,
            -1.0 if name in FLOAT_FIELDS else -1,
            np.float64 if name in FLOAT_FIELDS else np.int64,
        )
        for name in SWF_FIELDS
    }


def make_trace(
    *,
    submit: np.ndarray,
    run: np.ndarray,
    procs: np.ndarray,
    req_time: np.ndarray,
    user: np.ndarray | None = None,
    req_mem: np.ndarray | None = None,
    source: str = "trace",
    header: dict[str, str] | None = None,
) -> JobTrace:
    """Build a trace from the fields the simulator needs; the rest are missing (-1).

    Parameters
    ----------
    submit, run, req_time
        Seconds, shape ``(n,)``; jobs are re-sorted by ``submit`` (stable).
    procs
        Processors per job.
    user
        User ids (default all 1).
    req_mem
        Requested memory, KB per processor (default missing).
    """
    submit = np.asarray(submit, dtype=np.float64)
    n = len(submit)
    cols = empty_columns(n)
    cols["job_id"] = np.arange(1, n + 1, dtype=np.int64)
    cols["submit"] = submit
    cols["wait"] = np.full(n, -1.0)
    cols["run"] = np.asarray(run, dtype=np.float64)
    cols["procs"] = np.asarray(procs, dtype=np.int64)
    cols["req_procs"] = cols["procs"].copy()
    cols["req_time"] = np.asarray(req_time, dtype=np.float64)
    cols["status"] = np.ones(n, dtype=np.int64)
    cols["user"] = np.ones(n, np.int64) if user is None else np.asarray(user, dtype=np.int64)
    if req_mem is not None:
        cols["req_mem"] = np.asarray(req_mem, dtype=np.float64)
    order = np.argsort(submit, kind="stable")
    trace = JobTrace(cols, dict(header or {}), source)
    return trace.take(order)
