"""Partitions of a log: which jobs ran where, what is merged into one pool, which to keep.

A Slurm log's jobs ran in partitions (sacct's ``Partition``; SWF field 16, named by the
header's ``; Partition: 1 batch`` lines). ``jobs simulate`` models one pool of ``--cpus``
CPUs: without ``--partition`` the jobs of every partition share it
(:func:`merged_partitions_line` says so); with it, :func:`select_partitions` keeps the chosen
ones as a counted cleaning step, ``drop-other-partitions``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from grapeshot.jobs.clean import CleanStep
from grapeshot.jobs.trace import JobTrace
from grapeshot.model.errors import InputError


@dataclass(frozen=True)
class PartitionCount:
    """Jobs of one partition: its SWF number (None: no partition recorded), name, job count."""

    number: int | None
    name: str | None
    jobs: int

    @property
    def label(self) -> str:
        """The name, else the number, else ``no partition``."""
        if self.name is not None:
            return self.name
        return "no partition" if self.number is None else str(self.number)

    def as_dict(self) -> dict[str, object]:
        """``{"name", "number", "jobs"}`` (the name is the number as text without a header)."""
        name = self.name if self.name is not None or self.number is None else str(self.number)
        return {"name": name, "number": self.number, "jobs": self.jobs}


def partition_names(trace: JobTrace) -> dict[int, str]:
    """Partition number → name, from the header's ``Partition`` lines (``"1 batch"``).

    SWF logs describe each partition in a ``; Partition: <number> <name …>`` comment (the
    HPC2N Seth log: ``; Partition: 1 DEFAULT``); the sacct reader writes the same. The name is
    the first word after the number; a line without a leading number is a free description
    and ignored, and the first line of a number wins.
    """
    names: dict[int, str] = {}
    for line in trace.header.get("Partition", "").split("\n"):
        words = line.split()
        if words and words[0].isascii() and words[0].isdigit():
            names.setdefault(int(words[0]), words[1] if len(words) > 1 else words[0])
    return names


def partition_counts(trace: JobTrace) -> tuple[PartitionCount, ...]:
    """Jobs per partition of ``trace``, by partition number; empty if none is recorded.

    Jobs without a partition (-1) form one entry with ``number`` None, last, when other jobs
    have one.
    """
    part = np.asarray(trace.partition)
    recorded = part >= 0
    if not recorded.any():
        return ()
    names = partition_names(trace)
    numbers, jobs = np.unique(part[recorded], return_counts=True)
    out = [
        PartitionCount(int(k), names.get(int(k)), int(c))
        for k, c in zip(numbers, jobs, strict=True)
    ]
    if not recorded.all():
        out.append(PartitionCount(None, None, int((~recorded).sum())))
    return tuple(out)


def merged_partitions_line(trace: JobTrace, cpus: int) -> str | None:
    """One line saying which partitions share the pool of ``cpus`` CPUs; None for one or none.

    ``"merged 3 partitions into one pool of 240 CPUs: batch (2,900 jobs), debug (120), gpu
    (40); --partition NAME simulates one"``.
    """
    counts = partition_counts(trace)
    if len(counts) < 2:
        return None
    parts = [f"{c.label} ({c.jobs:,}{' jobs' if k == 0 else ''})" for k, c in enumerate(counts)]
    return (
        f"merged {len(counts)} partitions into one pool of {cpus:,} CPUs: {', '.join(parts)}; "
        "--partition NAME simulates one"
    )


def select_partitions(
    trace: JobTrace, wanted: str | Sequence[str], source: str = "the log"
) -> tuple[JobTrace, CleanStep]:
    """The jobs of the partitions ``wanted``, and the counted step that dropped the others.

    Parameters
    ----------
    trace
        Jobs as read, with SWF field 16 (``partition``) and, if the log names them, the
        ``Partition`` header lines (see :func:`partition_names`).
    wanted
        Partition names or numbers, a list or one comma-separated string (``"batch,gpu"``,
        ``"1,3"``). A name is matched first, then a number; only partitions that hold jobs in
        ``trace`` can be chosen.
    source
        The log's name, for the message.

    Raises
    ------
    InputError
        ``--partition`` naming a partition ``trace`` has no job in (the message lists those it
        has; one the header names but no job ran in is said to hold no job), an empty name, or
        a log that records no partition.
    """
    tokens = [w.strip() for w in wanted.split(",")] if isinstance(wanted, str) else list(wanted)
    counts = partition_counts(trace)
    present = [c for c in counts if c.number is not None]
    if not present:
        raise InputError(
            f"--partition {','.join(tokens)}", f"{source} records no partition",
            "a sacct export with a Partition column, or an SWF log with partitions in field 16",
        )  # fmt: skip
    listed = ", ".join(c.label if c.name is None else f"{c.name} ({c.number})" for c in present)
    by_name = {c.name: c.number for c in reversed(present) if c.name is not None}
    by_number = {str(c.number): c.number for c in present}
    named = {name: k for k, name in partition_names(trace).items()}
    chosen: list[int] = []
    for token in tokens:
        number = by_name.get(token, by_number.get(token))
        if number is None:
            problem = f"no partition {token!r} in {source}" if token else "got an empty name"
            if token and (token in named or token in {str(k) for k in named.values()}):
                problem = f"partition {token!r} holds no job in {source}"  # header only
            raise InputError(f"--partition {token}".rstrip(), problem, f"one of {listed}")
        if number not in chosen:
            chosen.append(number)
    keep = np.isin(trace.partition, chosen)
    kept = trace.take(keep)
    label = {c.number: c.label for c in present}
    step = CleanStep(
        "drop-other-partitions",
        "jobs outside partition " + ", ".join(label[k] for k in chosen),
        int((~keep).sum()),
        len(kept),
    )
    return kept, step
