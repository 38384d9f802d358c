"""Run records: HDF5 (also a valid workload trace) and Chrome-trace timelines.

The HDF5 run record holds the workload datasets (``cost`` = measured kernel seconds per
partition per step, the halo graph of the bytes actually packed, ``work``), so
``grapeshot simulate --trace run.h5`` and ``grapeshot place --workload run.h5`` read it as a
trace, plus a ``run`` group:

- ``run/tasks/{rank,part,step,phase,thread,start,end,cpu,wait,halo}``: one row per task;
  ``start``/``end`` in wall seconds since the run's start; ``cpu`` the thread CPU seconds it
  used; ``wait`` the time between the task's own inputs being ready and its last neighbour's
  halo arriving (time spent waiting on messages); ``halo`` the part of ``cpu`` spent on the
  task's own halo copies where exchanges are fused into tasks (``cost`` leaves it out).
- ``run/ranks/{busy,idle}``: per rank, seconds (busy = task CPU time summed over threads;
  idle = threads × wall time − busy); ``run/ranks/{halo_seconds,wait_seconds,
  serial_seconds,copied_bytes}``: the main thread's time outside tasks, split into halo
  copies, waiting and the runtime's bookkeeping, and the bytes the copies moved (those the
  tasks made too); ``run/ranks/task_halo_seconds``: the part of busy tasks spent on their own
  halo copies.
- ``run/network/{bytes,seconds}`` (runs on two ranks or more): one-way time of messages of
  8 B to 2 MiB between rank 0 and every other rank, measured by a ping-pong after the run.
- ``run/messages/{src,dst,bytes,seconds}``: one row per inter-rank MPI message (the runtime
  batches the buffers ready for one rank into one message), with the seconds from its send
  being posted to its receive completing on the ranks' system clocks (what the simulator
  calibrates on).
- ``run/node_of``, ``run/node_of_final``: the rank of each partition at start and end.
- ``run/rebalances/*`` (runs that rebalance inside, a dynamic strategy or ``--migrate-at``):
  one row per call, ``step`` (steps done before it), ``parts_moved``, ``bytes`` (partition
  state sent), ``node_of`` (``(calls, P)``, the placement after it), and per rank (``(calls,
  ranks)``) ``call_seconds`` (gathering the loads, deciding, moving the blocks) and
  ``seconds`` (the whole time between the rank's segments: the call and the re-plan in
  place), ``own_seconds`` (the part of ``seconds`` after the last rank ended its segment:
  the rebalance's own cost, not the wait for a slower rank; a checkpoint written at the
  call's step is taken out of both); the group's ``dynamic``
  attribute is the strategy as JSON, its name and parameters
  (``make_dynamic_strategy(name, **rest)`` makes it again). ``run/ranks/rebalance_seconds``
  sums ``seconds`` per rank: the wall time holds it.
- ``run`` attributes: the JSON summary's scalars.
"""

from __future__ import annotations

import os

import h5py
import numpy as np

from grapeshot.model.atomic import atomic_path, write_text_atomic
from grapeshot.model.json_text import json_text
from grapeshot.model.program import Program
from grapeshot.model.workload import HaloGraph, Workload
from grapeshot.model.workload_file import save_workload
from grapeshot.runtime.driver import RunOutcome


def outcome_workload(program: Program, outcome: RunOutcome) -> Workload:
    """The measured trace of a run: seconds per partition per step, bytes per message."""
    steps = outcome.summary["steps"]
    n = program.n_parts
    t = outcome.tasks
    cost = np.zeros((steps, n))
    # A task's own halo copies (fused exchanges) are the runtime's work, not the kernel's.
    kernel = t["cpu"] - t["halo"] if "halo" in t else t["cpu"]
    np.add.at(cost, (t["step"], t["part"]), kernel)
    pairs = sorted(outcome.halo_bytes)
    src = np.array([p[0] for p in pairs], dtype=np.int64)
    dst = np.array([p[1] for p in pairs], dtype=np.int64)
    nbytes = np.array([outcome.halo_bytes[p] for p in pairs], dtype=np.int64) // steps
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    return Workload(
        program.domain_shape,
        program.parts_shape,
        np.maximum(cost, 0.0),
        HaloGraph(indptr, dst, nbytes),
        "s",
        outcome.work,
        program.name,
        program.scene,
        clock="cpu",  # the tasks' cost is their thread's CPU time (TaskRecord.cpu)
    )


def _check_rows(outcome: RunOutcome, what: str) -> None:
    if outcome.tasks is None:
        raise ValueError(f"{what} needs every task's row: run with task_rows=True")


#: Per-rank datasets under ``run/ranks`` (the summary's lists of the same names).
RANK_COLUMNS = (
    "busy", "idle", "halo_seconds", "wait_seconds", "serial_seconds", "copied_bytes",
    "task_halo_seconds", "rebalance_seconds",
)  # fmt: skip


def write_run_record(path: str | os.PathLike[str], program: Program, outcome: RunOutcome) -> None:
    """Write the HDF5 run record atomically (see the module docstring for its layout).

    Raises
    ------
    ValueError
        If ``outcome`` holds no task rows (a run with ``task_rows=False``).
    """
    _check_rows(outcome, "a run record")
    with atomic_path(path) as tmp:
        save_workload(tmp, outcome_workload(program, outcome))
        with h5py.File(tmp, "a") as f:
            run = f.create_group("run")
            tasks = run.create_group("tasks")
            for key, col in outcome.tasks.items():
                tasks.create_dataset(key, data=col)
            ranks = run.create_group("ranks")
            for key in RANK_COLUMNS:
                ranks.create_dataset(key, data=np.asarray(outcome.summary[key]))
            if outcome.network is not None:
                network = run.create_group("network")
                for key, col in outcome.network.items():
                    network.create_dataset(key, data=col)
            messages = run.create_group("messages")
            for key, col in outcome.messages.items():
                messages.create_dataset(key, data=col)
            run.create_dataset("node_of", data=outcome.node_of)
            run.create_dataset("node_of_final", data=outcome.node_of_final)
            if outcome.rebalances is not None:
                calls = run.create_group("rebalances")
                for key, col in outcome.rebalances.items():
                    calls.create_dataset(key, data=col)
                if outcome.summary.get("dynamic") is not None:
                    calls.attrs["dynamic"] = json_text(outcome.summary["dynamic"])
            for key, value in outcome.summary.items():
                if isinstance(value, str | int | float):
                    run.attrs[key] = value


def write_timeline(path: str | os.PathLike[str], program: Program, outcome: RunOutcome) -> None:
    """Chrome-trace JSON of every task (Perfetto and chrome://tracing open it).

    Raises
    ------
    ValueError
        If ``outcome`` holds no task rows (a run with ``task_rows=False``).
    """
    _check_rows(outcome, "a timeline")
    t = outcome.tasks
    names = [p.name for p in program.phases]
    events = [
        {"name": "process_name", "ph": "M", "pid": int(r), "args": {"name": f"rank {int(r)}"}}
        for r in np.unique(t["rank"])
    ]
    for i in range(len(t["part"])):
        phase = int(t["phase"][i])
        events.append(
            {
                "name": names[phase] if phase >= 0 else "step",
                "cat": program.name,
                "ph": "X",
                "ts": float(t["start"][i]) * 1e6,
                "dur": float(t["end"][i] - t["start"][i]) * 1e6,
                "pid": int(t["rank"][i]),
                "tid": int(t["thread"][i]),
                "args": {
                    "partition": int(t["part"][i]),
                    "step": int(t["step"][i]),
                    "wait_us": float(t["wait"][i]) * 1e6,
                },
            }
        )
    write_text_atomic(
        path,
        json_text({"traceEvents": events, "displayTimeUnit": "ms", "otherData": outcome.summary}),
    )
