"""The run record of one simulated run: per step, per node and over the whole run.

Steps overlap in time when the program has no global operation (a fast partition may start
step ``s + 1`` while a slow one still runs step ``s``), so a step's *window* is the time from
the end of the previous step to the end of this one: step ``s`` ends when its last task ends
(or, with a global operation, when its last node is released). ``makespan[s]`` is the window's
length and the makespans add up to the total time. A node's busy time in a step is the
core-seconds its cores compute inside the window, its idle time the rest of
``cores * makespan``. The LIF of a step is :func:`grapeshot.model.placement.load_imbalance`
of the task time of that step's tasks on each node: the busiest node per core over the
balanced time per core, − 1. It is the *busy-time* LIF: task time includes each task's
overhead and its halo packing and copies, which every partition pays, busy or idle, so it is
not the *cost* LIF ``grapeshot place`` reports for the same placement (the workload's cost
alone): on equal nodes the overheads dilute the imbalance (0.080 against 0.155 for a dam break
on 4 × plafrim), on unequal nodes a small node packing more halo per core can raise it. With
no overheads (``Overheads.none()``) the two are the same number.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from grapeshot.model.placement import load_imbalance


@dataclass(frozen=True, eq=False)
class TaskRecords:
    """Start, end and core of every task of a window of steps (for timelines).

    Tasks are ordered by step, phase, partition: task ``i`` of the window is step
    ``first_step + i // (phases * P)``.
    """

    first_step: int
    n_parts: int
    phases: int
    start: np.ndarray
    end: np.ndarray
    core: np.ndarray
    node: np.ndarray


@dataclass(frozen=True, eq=False)
class MessageRecords:
    """The inter-node halo messages sent by tasks of the recorded window of steps."""

    src: np.ndarray
    dst: np.ndarray
    step: np.ndarray
    sent: np.ndarray
    delivered: np.ndarray
    nbytes: np.ndarray


@dataclass(frozen=True, eq=False)
class SimResult:
    """What one simulated run measured. Times in seconds, bytes in bytes.

    Attributes
    ----------
    machine, nodes, cores
        Machine name, node count, cores per node (int64, ``(nodes,)``).
    strategy, seed
        The placement that ran.
    n_parts, phases
        Partitions and phases per step.
    step_end
        float64, ``(steps,)``: when each step is over (absolute time).
    makespan
        float64, ``(steps,)``: length of each step's window.
    node_busy, node_idle
        float64, ``(steps, nodes)``: core-seconds computing and idle in each step's window.
    node_work
        float64, ``(steps, nodes)``: task seconds of each step's tasks on each node.
    bytes_sent, bytes_recv
        float64, ``(steps, nodes)``: inter-node halo bytes sent and received by each node,
        attributed to the step of the sending task.
    lif
        float64, ``(steps,)``: the busy-time LIF, :func:`step_lif` of ``node_work``.
    comm_time, hidden_comm_time
        Node-seconds with inter-node communication under way towards a node (halo messages
        in flight to it, collectives), and the part of it covered by the node's computation
        (weighted by the fraction of its cores busy).
    bytes_migrated, partitions_migrated, migration_time
        Partition state moved by a dynamic strategy, how many moves, and the seconds from
        the first node's release from each rebalancing point to the last arrival of a moved
        partition, summed over the rebalancing points.
    rebalance_time
        Seconds from the last node's release at each rebalancing point until every partition
        may run again: the decision, the moved state's transfer and the re-plan
        (:class:`~grapeshot.sim.program.Overheads`'s ``rebalance`` and ``replan``), summed
        over the points.
    n_tasks, n_messages
        Tasks run and halo messages delivered (on-node and inter-node).
    placements
        ``[(first_step, node_of), ...]``: the placement in force from each step on.
    tasks, messages
        Records of the timeline window, if one was asked for.
    cpu_seconds
        CPU seconds of this process the event loop took (for benchmarks; not part of the
        simulated result, and not compared by equality).
    """

    machine: str
    nodes: int
    cores: np.ndarray
    strategy: str
    seed: int | None
    n_parts: int
    phases: int
    step_end: np.ndarray
    makespan: np.ndarray
    node_busy: np.ndarray
    node_idle: np.ndarray
    node_work: np.ndarray
    bytes_sent: np.ndarray
    bytes_recv: np.ndarray
    lif: np.ndarray
    comm_time: float
    hidden_comm_time: float
    bytes_migrated: int
    partitions_migrated: int
    migration_time: float
    n_tasks: int
    n_messages: int
    placements: list[tuple[int, np.ndarray]]
    tasks: TaskRecords | None = None
    messages: MessageRecords | None = None
    rebalance_time: float = 0.0
    cpu_seconds: float = field(default=0.0, compare=False)

    @property
    def n_steps(self) -> int:
        """Steps simulated."""
        return len(self.makespan)

    @property
    def total_time(self) -> float:
        """Simulated seconds from the start to the end of the last step."""
        return float(self.step_end[-1]) if len(self.step_end) else 0.0

    @property
    def step_time_mean(self) -> float:
        """Mean step makespan, seconds."""
        return float(self.makespan.mean())

    @property
    def lif_mean(self) -> float:
        """Mean per-step LIF."""
        return float(self.lif.mean())

    @property
    def lif_max(self) -> float:
        """Largest per-step LIF."""
        return float(self.lif.max())

    @property
    def hidden_comm_fraction(self) -> float:
        """Fraction of the communication time hidden behind computation (1 if none)."""
        if self.comm_time <= 0:
            return 1.0
        return float(self.hidden_comm_time / self.comm_time)

    @property
    def bytes_sent_total(self) -> int:
        """Inter-node halo bytes sent over the run."""
        return round(float(self.bytes_sent.sum()))

    @property
    def n_events(self) -> int:
        """Task and message events the run processed."""
        return self.n_tasks + self.n_messages

    @property
    def busy_fraction(self) -> float:
        """Fraction of all core-seconds spent computing."""
        total = float(self.node_busy.sum() + self.node_idle.sum())
        return float(self.node_busy.sum()) / total if total > 0 else 0.0

    def summary(self) -> dict[str, Any]:
        """The run's headline numbers (the ``runs`` entries of ``grapeshot simulate --json``)."""
        return {
            "strategy": self.strategy,
            "seed": self.seed,
            "total_time": self.total_time,
            "step_time_mean": self.step_time_mean,
            "lif_mean": self.lif_mean,
            "lif_max": self.lif_max,
            "hidden_comm_fraction": self.hidden_comm_fraction,
            "bytes_sent": self.bytes_sent_total,
            "bytes_migrated": int(self.bytes_migrated),
        }


def step_lif(node_work: np.ndarray, cores: np.ndarray) -> np.ndarray:
    """Busy-time LIF of every step: :func:`load_imbalance` of ``(steps, nodes)`` task time.

    Parameters
    ----------
    node_work
        float64, ``(steps, nodes)``: seconds of task time per node in each step.
    cores
        ``(nodes,)``: cores per node.

    Returns
    -------
    numpy.ndarray
        float64, ``(steps,)``.
    """
    return load_imbalance(node_work, cores.astype(np.float64))
