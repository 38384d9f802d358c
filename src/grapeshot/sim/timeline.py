"""Chrome-trace timelines of a simulated run (open them in Perfetto or chrome://tracing).

One process per node, one thread per core: every task of the recorded window of steps is a
complete event (``ph: "X"``) on the core that ran it, named after its partition, with its
step and phase in ``args``. Every inter-node halo message of the window is an async span
(``ph: "b"``/``"e"``) from its send to its delivery on its receiving node's ``network in``
track, and the end of each step is a global instant event. Times are microseconds of
simulated time. The file is written atomically.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from grapeshot.model.atomic import write_text_atomic
from grapeshot.model.errors import InputError
from grapeshot.model.json_text import json_text
from grapeshot.sim.result import SimResult

#: Inter-node messages kept in a timeline at most (the earliest); the rest are counted.
MAX_MESSAGES = 100_000


def _node_of_step(result: SimResult, step: int) -> np.ndarray:
    node_of = result.placements[0][1]
    for first, placement in result.placements:
        if first <= step:
            node_of = placement
    return node_of


def chrome_trace(result: SimResult, *, max_messages: int = MAX_MESSAGES) -> dict[str, Any]:
    """The Chrome-trace document of ``result``'s recorded window (see the module docstring)."""
    tasks = result.tasks
    if tasks is None:
        raise InputError(
            "timeline", "the run recorded no window of steps", "simulate(..., timeline_steps=)"
        )
    events: list[dict[str, Any]] = []
    cores = result.cores
    for node in range(result.nodes):
        events.append(
            {
                "ph": "M",
                "name": "process_name",
                "pid": node,
                "tid": 0,
                "args": {"name": f"node {node}"},
            }
        )
        events.append(
            {
                "ph": "M",
                "name": "process_sort_index",
                "pid": node,
                "tid": 0,
                "args": {"sort_index": node},
            }
        )
        for core in range(int(cores[node])):
            events.append(
                {
                    "ph": "M",
                    "name": "thread_name",
                    "pid": node,
                    "tid": core,
                    "args": {"name": f"core {core}"},
                }
            )
        events.append(
            {
                "ph": "M",
                "name": "thread_name",
                "pid": node,
                "tid": int(cores[node]),
                "args": {"name": "network in"},
            }
        )
    per_step = tasks.phases * tasks.n_parts
    index = np.arange(len(tasks.start))
    steps = tasks.first_step + index // per_step
    phases = (index // tasks.n_parts) % tasks.phases
    parts = index % tasks.n_parts
    start_us = tasks.start * 1e6
    dur_us = (tasks.end - tasks.start) * 1e6
    for i in range(len(index)):
        events.append(
            {
                "name": f"p{int(parts[i])}",
                "cat": "task",
                "ph": "X",
                "ts": float(start_us[i]),
                "dur": float(dur_us[i]),
                "pid": int(tasks.node[i]),
                "tid": int(tasks.core[i]),
                "args": {
                    "partition": int(parts[i]),
                    "step": int(steps[i]),
                    "phase": int(phases[i]),
                },
            }
        )
    dropped = 0
    msgs = result.messages
    if msgs is not None:
        keep = min(len(msgs.src), max_messages)
        dropped = len(msgs.src) - keep
        for i in range(keep):
            step = int(msgs.step[i])
            node_of = _node_of_step(result, step)
            dst_node = int(node_of[msgs.dst[i]])
            name = f"p{int(msgs.src[i])}→p{int(msgs.dst[i])}"
            common = {
                "name": name,
                "cat": "halo",
                "id": i,
                "pid": dst_node,
                "tid": int(cores[dst_node]),
            }
            events.append(
                {
                    **common,
                    "ph": "b",
                    "ts": float(msgs.sent[i] * 1e6),
                    "args": {
                        "bytes": float(msgs.nbytes[i]),
                        "step": step,
                        "from_node": int(node_of[msgs.src[i]]),
                    },
                }
            )
            events.append({**common, "ph": "e", "ts": float(msgs.delivered[i] * 1e6)})
    last = tasks.first_step + len(index) // per_step if per_step else tasks.first_step
    for step in range(tasks.first_step, last):
        events.append(
            {
                "name": f"step {step} ends",
                "cat": "step",
                "ph": "i",
                "s": "g",
                "ts": float(result.step_end[step] * 1e6),
                "pid": 0,
                "tid": 0,
            }
        )
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "generator": "grapeshot simulate",
            "machine": result.machine,
            "nodes": result.nodes,
            "strategy": result.strategy,
            "seed": result.seed,
            "partitions": result.n_parts,
            "steps": [tasks.first_step, last],
            "messages_dropped": dropped,
        },
    }


def write_timeline(
    path: str | os.PathLike[str], result: SimResult, *, max_messages: int = MAX_MESSAGES
) -> Path:
    """Write ``result``'s recorded window as Chrome-trace JSON to ``path``, atomically."""
    doc = chrome_trace(result, max_messages=max_messages)
    write_text_atomic(path, json_text(doc, separators=(",", ":")) + "\n")
    return Path(path)
