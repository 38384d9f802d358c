"""The program the simulator runs: tasks, their dependencies and their messages, planned once.

A workload of ``P`` partitions and ``S`` steps becomes ``S * phases * P`` tasks. Task
``(s, f, p)`` (step ``s``, phase ``f``, partition ``p``) has the flat id
``(s * phases + f) * P + p`` and

- costs ``cost[s, p] / phases`` seconds of computation, plus the overheads below;
- waits for partition ``p``'s previous task (its own previous phase);
- waits for one halo message from every partition ``q`` with an edge ``q -> p`` in the
  workload's halo graph, sent when task ``(s, f, q)``'s predecessor phase ends (the halo
  exchange before each phase); the very first phase of the run receives none;
- with a global operation per step (``sync``), the first phase of step ``s + 1`` also waits
  for its node's release from step ``s``'s allreduce or barrier.

Overheads (:class:`Overheads`) make a task longer on its core:

``task``
    per task (dispatch through the node's ready queue, dependency bookkeeping);
``message``
    per inter-node message, once at its sender and once at its receiver (software send and
    receive path: headers, system calls, matching);
``copy_bandwidth``
    bytes per second at which a core packs an outgoing and unpacks an incoming inter-node
    message, and copies a message to a partition on the same node (``None``: the machine's
    ``memcpy_bandwidth``; ``inf``: free). A message between two partitions of one node costs
    this copy only, at its sender, and is delivered when the sending task ends.

``rebalance``, ``replan``
    a dynamic strategy's call, as grapeshot's runtime makes it: after the loads' report every
    node waits ``rebalance`` seconds (the decision, broadcast to all); when the call moves
    partitions, each node then re-plans in place, ``replan`` seconds per partition it holds
    after the moves, and all nodes resume together (the runtime's re-plan agrees across
    ranks). Both 0 by default: a call costs only its report and the moved state.

So a task lasts ``cost / phases + task + sum over its outgoing messages (message [if remote] +
bytes / copy_bandwidth) + sum over its incoming inter-node messages (message + bytes /
copy_bandwidth)``. These per-partition costs grow with the number of partitions per core; they
are what turns Birdshot's figure 10 back up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from grapeshot.model.errors import InputError
from grapeshot.model.groups import group_order
from grapeshot.model.machine import Machine
from grapeshot.model.placement import Placement
from grapeshot.model.workload import Workload, partition_bounds
from grapeshot.sim.collectives import algorithm_code

#: Global operation per step: none, a barrier, or an allreduce of ``reduce_bytes``.
SYNC_MODES = ("none", "barrier", "allreduce")
#: What a dynamic strategy balances: simulated task seconds, or the workload's work counts.
BALANCE_ON = ("time", "work")

#: Seconds of dispatch and bookkeeping per task: a task runtime's ready-queue pop, dependency
#: counter updates and thread hand-off (Canary-like C++ runtimes spend tens of microseconds
#: per task; the issue's estimate is 20 µs).
DEFAULT_TASK_OVERHEAD = 20e-6
#: Seconds of software per inter-node message at each end (TCP send/receive system calls,
#: header marshalling, tag matching: a few microseconds on a cloud VM).
DEFAULT_MESSAGE_OVERHEAD = 5e-6
#: Bytes of state per cell a migrated partition carries: a particle-level-set fluid keeps
#: about 16 doubles per cell (velocity 3, pressure, level set, density, divergence, solver
#: vectors 4, face areas and masks 5).
DEFAULT_STATE_BYTES_PER_CELL = 128


def _check_nonneg(value: float, where: str, *, allow_inf: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(where, f"got {value!r}", "a number >= 0")
    x = float(value)
    if math.isnan(x) or x < 0 or (math.isinf(x) and not allow_inf):
        raise InputError(where, f"got {value!r}", "a finite number >= 0")
    return x


@dataclass(frozen=True)
class Overheads:
    """Per-task and per-message software costs, seconds (see the module docstring).

    Parameters
    ----------
    task
        Seconds per task on its core.
    message
        Seconds per inter-node message at its sender and again at its receiver.
    copy_bandwidth
        Bytes per second of packing, unpacking and on-node copies; ``None`` means the
        machine's ``memcpy_bandwidth``, ``math.inf`` makes them free.
    rebalance
        Seconds of every dynamic strategy's call on every node after the loads' report.
    replan
        Seconds per partition a node holds to re-plan it after a call that moved some.
    """

    task: float = DEFAULT_TASK_OVERHEAD
    message: float = DEFAULT_MESSAGE_OVERHEAD
    copy_bandwidth: float | None = None
    rebalance: float = 0.0
    replan: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "task", _check_nonneg(self.task, "task overhead"))
        object.__setattr__(self, "message", _check_nonneg(self.message, "message overhead"))
        for name in ("rebalance", "replan"):
            value = _check_nonneg(getattr(self, name), f"{name} overhead")
            object.__setattr__(self, name, value)
        if self.copy_bandwidth is not None:
            bw = _check_nonneg(self.copy_bandwidth, "copy bandwidth", allow_inf=True)
            if bw == 0:
                raise InputError("copy bandwidth", "got 0", "bytes per second > 0, or inf")
            object.__setattr__(self, "copy_bandwidth", bw)

    @classmethod
    def none(cls) -> Overheads:
        """No overheads at all: tasks cost their trace cost, messages only the network."""
        return cls(task=0.0, message=0.0, copy_bandwidth=math.inf)

    def copy_rate(self, machine: Machine) -> float:
        """Bytes per second of copies on ``machine``."""
        if self.copy_bandwidth is None:
            return machine.network.memcpy_bandwidth
        return self.copy_bandwidth


@dataclass(frozen=True)
class SimOptions:
    """How the program runs on the modelled machine.

    Parameters
    ----------
    phases
        Phases per step, each preceded by a halo exchange; the step's cost is split evenly.
    sync
        Global operation at the end of every step: ``"none"``, ``"barrier"`` or
        ``"allreduce"`` (of ``reduce_bytes``, e.g. a time step's global minimum).
    collective
        ``"linear"`` or ``"binomial"`` (:mod:`grapeshot.sim.collectives`).
    reduce_bytes
        Bytes of the reduced value.
    pin
        Pin every partition to one core (the placement's ``core_of``, else the partitions of
        a node dealt to its cores in id order) instead of Birdshot's per-node dynamic dispatch.
    overheads
        Per-task and per-message costs.
    hop_latency
        Seconds per network hop beyond the nearest pair (``None``: the topology's default).
    state_bytes_per_cell
        Bytes a migrated partition moves per cell.
    seconds_per_work
        Seconds per work unit for traces whose cost is in ``"work"`` units.
    balance_on
        What a dynamic strategy is shown as each partition's load: ``"time"``, its simulated
        task seconds, or ``"work"``, the workload's work counts, which is what grapeshot's
        runtime measures for its strategies (predicting a run of it).
    """

    phases: int = 1
    sync: str = "none"
    collective: str = "linear"
    reduce_bytes: int = 8
    pin: bool = False
    overheads: Overheads = field(default_factory=Overheads)
    hop_latency: float | None = None
    state_bytes_per_cell: int = DEFAULT_STATE_BYTES_PER_CELL
    seconds_per_work: float | None = None
    balance_on: str = "time"

    def __post_init__(self) -> None:
        if isinstance(self.phases, bool) or not isinstance(self.phases, int) or self.phases < 1:
            raise InputError("--phases", f"got {self.phases!r}", "an integer >= 1")
        if self.sync not in SYNC_MODES:
            raise InputError("--sync", f"got {self.sync!r}", f"one of {', '.join(SYNC_MODES)}")
        algorithm_code(self.collective)
        for name in ("reduce_bytes", "state_bytes_per_cell"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InputError(name.replace("_", "-"), f"got {value!r}", "an integer >= 0")
        if self.hop_latency is not None:
            _check_nonneg(self.hop_latency, "--hop-latency")
        if self.seconds_per_work is not None:
            if _check_nonneg(self.seconds_per_work, "--seconds-per-work") == 0:
                raise InputError("--seconds-per-work", "got 0", "a number > 0")
        if self.balance_on not in BALANCE_ON:
            raise InputError(
                "--balance-on", f"got {self.balance_on!r}", f"one of {', '.join(BALANCE_ON)}"
            )


@dataclass(frozen=True, eq=False)
class TaskGraph:
    """A workload's task graph as flat arrays (independent of the placement): what the
    simulator runs of a trace, not an app's :class:`grapeshot.model.program.Program`.

    Attributes
    ----------
    cost
        float64, ``(steps, P)``: seconds of computation per partition per step.
    out_ptr, out_idx, out_bytes
        CSR of the halo messages each partition sends per phase (int64, int64, float64).
    in_deg
        int64, ``(P,)``: messages each partition receives per phase.
    state_bytes
        int64, ``(P,)``: bytes a partition's state occupies (what a migration moves).
    phases
        Phases per step.
    """

    workload: Workload
    cost: np.ndarray
    out_ptr: np.ndarray
    out_idx: np.ndarray
    out_bytes: np.ndarray
    in_deg: np.ndarray
    state_bytes: np.ndarray
    phases: int

    @property
    def n_parts(self) -> int:
        """Partitions P."""
        return self.cost.shape[1]

    @property
    def n_steps(self) -> int:
        """Steps of the trace."""
        return self.cost.shape[0]

    @property
    def n_tasks(self) -> int:
        """Tasks of the whole run."""
        return self.n_steps * self.phases * self.n_parts


def build_program(workload: Workload, options: SimOptions) -> TaskGraph:
    """Plan ``workload``'s tasks and messages once (see the module docstring)."""
    cost = workload.cost
    if workload.units == "work":
        if options.seconds_per_work is None:
            raise InputError(
                "workload units",
                "are 'work', not seconds",
                "--seconds-per-work (a calibration) or a trace in seconds",
            )
        cost = cost * options.seconds_per_work
    cost = np.ascontiguousarray(cost, dtype=np.float64)
    halo = workload.halo
    n = workload.n_parts
    extents = [np.diff(b) for b in partition_bounds(workload.domain_shape, workload.parts_shape)]
    cells = np.ones(workload.parts_shape, dtype=np.int64)
    for axis, ext in enumerate(extents):
        shape = [1] * len(extents)
        shape[axis] = len(ext)
        cells = cells * ext.reshape(shape)
    return TaskGraph(
        workload=workload,
        cost=cost,
        out_ptr=np.ascontiguousarray(halo.indptr, dtype=np.int64),
        out_idx=np.ascontiguousarray(halo.indices, dtype=np.int64),
        out_bytes=np.ascontiguousarray(halo.nbytes, dtype=np.float64),
        in_deg=np.bincount(halo.indices, minlength=n).astype(np.int64),
        state_bytes=cells.reshape(-1) * options.state_bytes_per_cell,
        phases=options.phases,
    )


@dataclass(frozen=True, eq=False)
class Layout:
    """A program on a placement: queues, cores and per-partition message costs.

    Dynamic dispatch has one ready queue per node served by all its cores; pinned dispatch one
    queue per core. Global core ids number node ``k``'s cores ``core_start[k] ..
    core_start[k+1] - 1``.

    Attributes
    ----------
    node_of
        int64, ``(P,)``.
    queue_of
        int64, ``(P,)``: the ready queue of each partition.
    q_ptr
        int64, ``(queues + 1,)``: ring-buffer slots of each queue (one per partition in it).
    fc_ptr, fc_init
        int64: the cores serving each queue (CSR of global core ids).
    core_node, core_local
        int64, ``(cores,)``: node and index within the node of each global core.
    node_part_ptr, node_parts
        int64: the partitions of each node (CSR, ids ascending).
    out_extra, in_extra
        float64, ``(P,)``: seconds a task adds for packing its outgoing messages and for
        receiving and unpacking its incoming inter-node messages.
    """

    node_of: np.ndarray
    queue_of: np.ndarray
    q_ptr: np.ndarray
    fc_ptr: np.ndarray
    fc_init: np.ndarray
    core_node: np.ndarray
    core_local: np.ndarray
    node_part_ptr: np.ndarray
    node_parts: np.ndarray
    out_extra: np.ndarray
    in_extra: np.ndarray


@njit(cache=True)
def _message_extra(out_ptr, out_idx, out_bytes, node_of, rate, message, out_extra, in_extra):
    """Add each halo message's packing to its sender's ``out_extra`` (``bytes / rate``, plus
    ``message`` if it crosses nodes) and its receiving and unpacking to its receiver's
    ``in_extra`` (``message + bytes / rate`` if it crosses nodes).

    One pass over the CSR in message order: the same additions in the same order as
    ``np.bincount`` with these weights (bit for bit), without the five per-message arrays
    (8.4M messages at a million partitions) that computing the weights took.
    """
    for p in range(out_ptr.shape[0] - 1):
        for e in range(out_ptr[p], out_ptr[p + 1]):
            q = out_idx[e]
            copy = out_bytes[e] / rate
            # A message within a node adds nothing to its receiver: bincount added 0.0,
            # which leaves a sum of non-negative costs unchanged.
            if node_of[p] != node_of[q]:
                out_extra[p] += copy + message
                in_extra[q] += message + copy
            else:
                out_extra[p] += copy


def build_layout(
    program: TaskGraph,
    machine: Machine,
    node_of: np.ndarray,
    options: SimOptions,
    core_of: np.ndarray | None = None,
) -> Layout:
    """Lay ``program`` out on ``machine`` with partitions on nodes ``node_of``."""
    n_nodes = machine.nodes
    p_count = program.n_parts
    node_of = np.asarray(node_of)
    if node_of.shape != (p_count,) or not np.issubdtype(node_of.dtype, np.integer):
        raise InputError("placement", f"has node_of of shape {node_of.shape}", f"({p_count},)")
    if p_count and (node_of.min() < 0 or node_of.max() >= n_nodes):
        raise InputError("placement", "has nodes out of range", f"[0, {n_nodes})")
    node_of = node_of.astype(np.int64)
    cores = machine.cores()
    core_start = np.zeros(n_nodes + 1, dtype=np.int64)
    np.cumsum(cores, out=core_start[1:])
    total_cores = int(core_start[-1])
    core_node = np.repeat(np.arange(n_nodes, dtype=np.int64), cores)
    core_local = np.arange(total_cores, dtype=np.int64) - core_start[core_node]
    node_parts, node_part_ptr = group_order(node_of, n_nodes)
    if options.pin:
        if core_of is None:
            rank = np.empty(p_count, dtype=np.int64)
            rank[node_parts] = np.arange(p_count) - np.repeat(
                node_part_ptr[:-1], np.diff(node_part_ptr)
            )
            local = rank % cores[node_of]
        else:
            local = np.asarray(core_of, dtype=np.int64)
            if local.shape != (p_count,) or (
                p_count and (local.min() < 0 or np.any(local >= cores[node_of]))
            ):
                raise InputError("placement core_of", "has cores out of range", "[0, cores)")
        queue_of = core_start[node_of] + local
        n_queues = total_cores
        fc_ptr = np.arange(total_cores + 1, dtype=np.int64)
        fc_init = np.arange(total_cores, dtype=np.int64)
    else:
        queue_of = node_of.copy()
        n_queues = n_nodes
        fc_ptr = core_start
        # Stack order: the last entry is taken first, so list a node's cores in reverse and
        # an idle node starts on its core 0.
        fc_init = (core_start[core_node + 1] - 1 - core_local).astype(np.int64)
    q_ptr = np.zeros(n_queues + 1, dtype=np.int64)
    np.cumsum(np.bincount(queue_of, minlength=n_queues), out=q_ptr[1:])
    over = options.overheads
    out_extra = np.zeros(p_count)
    in_extra = np.zeros(p_count)
    _message_extra(
        program.out_ptr,
        program.out_idx,
        program.out_bytes,
        node_of,
        float(over.copy_rate(machine)),
        float(over.message),
        out_extra,
        in_extra,
    )
    return Layout(
        node_of=node_of,
        queue_of=queue_of.astype(np.int64),
        q_ptr=q_ptr,
        fc_ptr=fc_ptr.astype(np.int64),
        fc_init=fc_init,
        core_node=core_node,
        core_local=core_local,
        node_part_ptr=node_part_ptr,
        node_parts=node_parts,
        out_extra=out_extra,
        in_extra=in_extra,
    )


def check_placement(program: TaskGraph, placement: Placement, machine: Machine) -> None:
    """Raise unless ``placement`` places ``program``'s partitions on ``machine``'s nodes."""
    if placement.n_parts != program.n_parts:
        raise InputError(
            "placement",
            f"places {placement.n_parts} partitions",
            f"{program.n_parts}, the workload's",
        )
    if placement.nodes != machine.nodes:
        raise InputError(
            "placement", f"is for {placement.nodes} nodes", f"{machine.nodes}, the machine's"
        )
