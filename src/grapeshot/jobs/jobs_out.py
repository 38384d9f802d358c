"""Every job's simulated schedule, written out so a site can hold it against its accounting.

``jobs simulate --jobs-out FILE`` writes, by the file's extension:

- ``.csv``: one row per job and policy, floats in full precision (Python's shortest
  round-trip form), so the summary metrics recompute from the file exactly;
- ``.swf``: the simulated schedule as a Standard Workload Format log of one policy (wait =
  start − submit, run time = the time the job ran — with checkpointing, the time queued and
  the time run over all of a job's runs —, requested time = its final walltime, status 0
  where it was killed): what SWF can say, for tools that read SWF. The prediction
  and the corrections have no SWF field; the CSV has them.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from grapeshot.jobs.simulate import Schedule
from grapeshot.jobs.swf import format_swf
from grapeshot.jobs.trace import JobTrace
from grapeshot.model.atomic import check_output_path, write_text_atomic
from grapeshot.model.errors import InputError

#: The formats ``--jobs-out`` writes, by extension.
SUFFIXES = (".csv", ".swf")

#: The CSV's columns, in order (seconds for times).
CSV_COLUMNS = (
    "policy", "job_id", "user", "procs", "submit", "start", "end", "run",
    "predicted", "walltime", "corrections", "noop_corrections", "killed", "in_metrics",
    "wait", "ran", "restarts",
)  # fmt: skip


def check_jobs_out(path: str | os.PathLike[str], schedules: int) -> Path:
    """Refuse, before any job is simulated, a ``--jobs-out`` path that cannot be written,
    or an SWF file asked to hold several schedules (SWF holds one; with checkpointing each
    policy has two, without and with).

    Raises
    ------
    InputError
        Naming ``--jobs-out``.
    """
    final = check_output_path(path, "--jobs-out", suffixes=SUFFIXES)
    if final.suffix.lower() == ".swf" and schedules != 1:
        raise InputError(
            f"--jobs-out {path}",
            f"an SWF log holds one schedule, and {schedules} were asked",
            "one policy (--policies NAME) without --checkpoint-cost for .swf, or a .csv file "
            "(one row per job and policy)",
        )
    return final


def jobs_csv(trace: JobTrace, schedules: Sequence[Schedule], in_metrics: np.ndarray) -> str:
    """The CSV text of ``schedules`` (all over ``trace``'s jobs, in its order)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    ids, users = trace.job_id.tolist(), trace.user.tolist()
    metric = in_metrics.astype(np.int8).tolist()
    for s in schedules:
        rows = zip(
            [s.policy] * len(ids), ids, users, s.procs.tolist(), s.submit.tolist(),
            s.start.tolist(), s.end.tolist(), s.run.tolist(), s.prediction.tolist(),
            s.walltime.tolist(), s.corrections.tolist(), s.noop_corrections.tolist(),
            s.killed.astype(np.int8).tolist(),
            metric, s.wait.tolist(), s.ran.tolist(), s.restarts.tolist(), strict=True,
        )  # fmt: skip
        writer.writerows(rows)
    return buf.getvalue()


def schedule_swf(trace: JobTrace, schedule: Schedule) -> str:
    """The SWF text of ``schedule``: ``trace``'s jobs with their simulated wait and run."""
    out = trace
    for name, values in (
        ("wait", schedule.wait),
        ("run", schedule.ran),
        ("req_time", schedule.walltime),
        ("status", np.where(schedule.killed, 0, 1)),
    ):
        out = out.with_column(name, values)
    header = dict(trace.header)
    header["Note"] = (
        f"simulated by grapeshot jobs simulate, policy {schedule.policy}, backfill "
        f"{schedule.backfill}: wait and run time simulated, RequestedTime = final walltime"
    )
    return format_swf(replace(out, header=header))


def write_jobs_out(
    path: str | os.PathLike[str],
    trace: JobTrace,
    schedules: Sequence[Schedule],
    in_metrics: np.ndarray,
) -> Path:
    """Write every job's schedule to ``path`` atomically (format by extension); the path."""
    final = Path(path)
    if final.suffix.lower() == ".swf":
        (schedule,) = schedules  # check_jobs_out refused several
        write_text_atomic(final, schedule_swf(trace, schedule))
    else:
        write_text_atomic(final, jobs_csv(trace, schedules, in_metrics))
    return final
