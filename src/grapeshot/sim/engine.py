"""The simulator's driver: a program on a placement on a machine, segment by segment.

:func:`simulate` plans the program and its layout, then runs it as one segment, or with a
dynamic strategy as one segment per interval between rebalancing points: each segment is one
call of the numba event kernel (:func:`grapeshot.sim.kernel.run_segment`) on five records
(:mod:`grapeshot.sim.kernel_state`): the network, the segment's plan, its ready queues, its
clocks and the run's records out. Between segments every node reports its measured loads
(an allreduce), the strategy decides, and moved partitions carry their state over the network.
Afterwards the task records become per-step ends, busy and idle time, work and LIF.

How the kernel works: :mod:`grapeshot.sim.kernel` (the loop), :mod:`grapeshot.sim.events`
(what each event does), :mod:`grapeshot.sim.ready_queues`, :mod:`grapeshot.sim.event_heap`,
:mod:`grapeshot.sim.node_clock` (busy and hidden communication time per node) and
:mod:`grapeshot.sim.transfer` (one inter-node message).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit
from scipy import sparse

from grapeshot.model.errors import InputError
from grapeshot.model.machine import Machine
from grapeshot.model.placement import Placement
from grapeshot.place.dynamic import call_steps
from grapeshot.sim.collectives import collective_release
from grapeshot.sim.kernel import run_segment, seed_segment
from grapeshot.sim.kernel_state import (
    C_MSGS,
    net_record,
    new_clocks,
    new_out,
    new_queues,
    segment_out,
    segment_plan,
)
from grapeshot.sim.network import NetworkModel, _transmit, network_model
from grapeshot.sim.program import (
    Layout,
    SimOptions,
    TaskGraph,
    build_layout,
    build_program,
    check_placement,
)
from grapeshot.sim.result import MessageRecords, SimResult, TaskRecords, step_lif

#: Events the kernel runs between two reports of progress: about a second at a million
#: partitions on 8192 nodes, a fraction of a second on programs that fit in cache.
POPS_PER_CALL = 1 << 20


@njit(cache=True)
def _task_sums(start, end, seg_ptr, seg_node, seg_step0, n_parts, phases, bounds, busy, work):
    """Per step window and node: the core-seconds of every task inside each window
    (``busy[w, k]``, a task spanning windows ``[bounds[w], bounds[w+1])`` split between them)
    and the task time of each step (``work[s, k]``).

    Tasks are taken in id order, so every sum adds the same numbers in the same order as
    ``np.bincount`` of the tasks' durations and the former per-task window loop did (bit for
    bit), but without a per-task node or step array (3.4 GB each for 4M partitions × 100
    steps). Segment ``g`` holds tasks ``seg_ptr[g] .. seg_ptr[g+1] - 1`` from step
    ``seg_step0[g]`` on, its partitions on nodes ``seg_node[g]``.
    """
    n_win = bounds.shape[0] - 1
    for g in range(seg_ptr.shape[0] - 1):
        nodes = seg_node[g]
        i = seg_ptr[g]
        rows = (seg_ptr[g + 1] - seg_ptr[g]) // n_parts
        for row in range(rows):
            step = seg_step0[g] + row // phases
            for p in range(n_parts):
                a = start[i]
                b = end[i]
                k = nodes[p]
                work[step, k] += b - a
                i += 1
                if b <= a:
                    continue
                w = np.searchsorted(bounds, a, side="right") - 1
                if w < 0:
                    w = 0
                while w < n_win:
                    lo = bounds[w] if bounds[w] > a else a
                    hi = bounds[w + 1] if bounds[w + 1] < b else b
                    if hi > lo:
                        busy[w, k] += hi - lo
                    if b <= bounds[w + 1]:
                        break
                    w += 1


@njit(cache=True)
def _migrate(net_i, net_f, send_free, recv_free, link_free, src, dst, nbytes, ready, out):
    for i in range(src.shape[0]):
        out[i] = _transmit(
            net_i,
            net_f,
            send_free,
            recv_free,
            link_free,
            src[i],
            dst[i],
            nbytes[i],
            ready[i],
        )


def _task_nodes(
    seg_node: list[tuple[int, int, int, np.ndarray]], lo: int, hi: int, n_parts: int
) -> np.ndarray:
    """The node of every task ``lo .. hi - 1`` (int64), from the segments' placements."""
    parts = []
    for a, b, _, nodes in seg_node:
        x, y = max(a, lo), min(b, hi)
        if x < y:
            first = (x - a) % n_parts
            reps = np.tile(nodes, -(-(first + y - x) // n_parts))
            parts.append(reps[first : first + y - x])
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _segment_bounds(
    n_steps: int, interval: int | None, dynamic: Any = None
) -> list[tuple[int, int]]:
    if interval is None:
        return [(0, n_steps)]
    return list(itertools.pairwise([0, *call_steps(dynamic, n_steps), n_steps]))


def halo_matrix(program: TaskGraph) -> sparse.csr_array:
    """``(P, P)`` symmetric: halo bytes two partitions exchange per step (both directions)."""
    n = program.n_parts
    src = np.repeat(np.arange(n), np.diff(program.out_ptr))
    m = sparse.csr_array(
        (program.out_bytes.astype(np.float64), (src, program.out_idx)), shape=(n, n)
    )
    return (m + m.T).tocsr()


def simulate(
    workload: Any,
    placement: Placement,
    machine: Machine,
    options: SimOptions | None = None,
    *,
    dynamic: Any = None,
    timeline_steps: tuple[int, int] | None = None,
    program: TaskGraph | None = None,
    network: NetworkModel | None = None,
    progress: Callable[[float], None] | None = None,
) -> SimResult:
    """Simulate ``workload`` placed by ``placement`` on ``machine``.

    Parameters
    ----------
    workload
        A :class:`~grapeshot.model.workload.Workload` (costs in seconds, or in work units with
        ``options.seconds_per_work``).
    placement
        Partition → node (and ``core_of``, used when ``options.pin``).
    machine
        The modelled machine; ``placement.nodes`` must equal its node count.
    options
        How the program runs (:class:`~grapeshot.sim.program.SimOptions`).
    dynamic
        A :class:`~grapeshot.place.dynamic.DynamicStrategy`: every ``dynamic.interval`` steps
        all nodes synchronise (an allreduce of the measured loads: task seconds, or work
        counts with ``options.balance_on``), the strategy may return a new ``node_of``, moved
        partitions carry their state over the network, and the call costs the overheads'
        ``rebalance`` and ``replan`` (:class:`~grapeshot.sim.program.Overheads`).
    timeline_steps
        ``(a, b)``: keep every task and inter-node message of steps ``a .. b - 1`` for a
        timeline (:mod:`grapeshot.sim.timeline`).
    program, network
        A prebuilt program or network model, to save planning them again.
    progress
        Called now and then with the share of the run's tasks done so far (0 to 1).

    Returns
    -------
    SimResult
    """
    options = options or SimOptions()
    if program is None:
        program = build_program(workload, options)
    check_placement(program, placement, machine)
    if network is None:
        network = network_model(machine, options.hop_latency)
    window = _timeline_window(timeline_steps, program.n_steps)
    interval = _checked_interval(dynamic, options, program)
    run = _Run(program, machine, options, network, dynamic, placement)
    rec = new_out(program, machine.nodes, window)
    for a, b in _segment_bounds(program.n_steps, interval, dynamic):
        run.segment(rec, a, b, progress)
        if b >= program.n_steps:
            break
        run.rebalance(rec, a, b)
    return _result(run, rec, placement, window)


def _timeline_window(steps: tuple[int, int] | None, n_steps: int) -> tuple[int, int]:
    """The steps ``(lo, hi)`` whose tasks and messages are kept, within the run (``(0, 0)``:
    none)."""
    if steps is None:
        return 0, 0
    lo, hi = steps
    if not 0 <= lo < hi:
        raise InputError("--timeline-steps", f"got {lo}:{hi}", "a:b with 0 <= a < b")
    return min(lo, n_steps), min(hi, n_steps)


def _checked_interval(dynamic: Any, options: SimOptions, program: TaskGraph) -> int | None:
    """The dynamic strategy's steps between calls (``None`` without one), checked."""
    if dynamic is None:
        return None
    interval = int(dynamic.interval)
    if interval < 1:
        raise InputError("dynamic strategy interval", f"got {interval}", "an integer >= 1")
    if options.balance_on == "work" and program.workload.work is None:
        raise InputError(
            "--balance-on work", "the workload has no work counts", "a trace with 'work'"
        )
    return interval


class _Run:
    """One simulation's state across its segments: the layout of the current placement, the
    network's state, where the next segment starts, and the counters of its result."""

    def __init__(self, program, machine, options, network, dynamic, placement) -> None:
        self.program, self.machine, self.options = program, machine, options
        self.network, self.dynamic = network, dynamic
        self.cores = machine.cores()
        self.state = network.new_state()
        self.net = net_record(network, self.state)
        self.core_of = placement.core_of
        node_of = placement.node_of.astype(np.int64)
        self.layout: Layout = build_layout(program, machine, node_of, options, self.core_of)
        self.placements: list[tuple[int, np.ndarray]] = [(0, node_of.copy())]
        self.seg_node: list[tuple[int, int, int, np.ndarray]] = []  # tasks lo, hi, step, nodes
        self.comm = halo_matrix(program) if dynamic is not None else None
        self.carry = None
        self.t0 = 0.0
        self.n_msgs = 0
        self.cpu = 0.0
        self.bytes_migrated = 0
        self.moved_total = 0
        self.migration_time = 0.0
        self.rebalance_time = 0.0
        self.extra_step_end = np.zeros(program.n_steps)

    def segment(self, rec, a: int, b: int, progress) -> None:
        """Run steps ``a .. b - 1`` in the compiled kernel."""
        program, layout = self.program, self.layout
        stride = program.phases * program.n_parts
        task_hi = b * stride
        # The records are built inside the timed span: the former kernel allocated its
        # queues and clocks itself, and cpu_seconds is the engine's whole cost.
        started = time.process_time()
        plan = segment_plan(program, layout, self.options, (a, b), self.carry, self.t0)
        out = segment_out(rec, program, (a, b))
        queues = new_queues(layout, program)
        node_cores = self.cores.astype(np.float64)
        clocks = new_clocks(plan, program, layout, layout.fc_init.shape[0], node_cores)
        seed_segment(plan, queues, clocks)
        n_tasks = max(program.n_tasks, 1)
        while not run_segment(self.net, plan, queues, clocks, out, POPS_PER_CALL):
            if progress is not None:
                progress((task_hi - int(clocks.step_rem.sum())) / n_tasks)
        self.n_msgs += int(clocks.ctr[C_MSGS])
        self.cpu += time.process_time() - started
        if progress is not None:
            progress(task_hi / n_tasks)
        self.seg_node.append((a * stride, task_hi, a, layout.node_of))

    def rebalance(self, rec, a: int, b: int) -> None:
        """The rebalancing point after step ``b - 1``: every node reports its measured loads
        (an allreduce), the strategy decides, moved partitions carry their state to their
        new node, and the next segment starts when each node is ready."""
        program, layout, network = self.program, self.layout, self.network
        over = self.options.overheads
        phases, n_parts, n_nodes = program.phases, program.n_parts, self.machine.nodes
        task_lo, task_hi = a * phases * n_parts, b * phases * n_parts
        seg_start = rec.task_time[task_lo:task_hi, 0]
        seg_end = rec.task_time[task_lo:task_hi, 1]
        arrive = np.full(n_nodes, self.t0)
        np.maximum.at(arrive, np.tile(layout.node_of, (b - a) * phases), seg_end)
        if self.options.sync != "none":
            arrive = np.maximum(arrive, rec.node_release)
        released = np.empty(n_nodes)
        coll_alg = {"linear": 0, "binomial": 1}[self.options.collective]
        collective_release(
            arrive, coll_alg, 0, 8.0 * n_parts, over.message, network.net_i, network.net_f,
            released,
        )  # fmt: skip
        latest = float(arrive.max())
        rec.comm_time[:] += np.maximum(released - latest, 0.0)
        if self.options.balance_on == "work":  # what the runtime measures for its strategies
            loads = program.workload.work[a:b].astype(np.float64)
        else:
            loads = (seg_end - seg_start).reshape(b - a, phases * n_parts)
            loads = loads.reshape(b - a, phases, n_parts).sum(axis=1)
        proposal = self.dynamic.rebalance(
            step=b,
            loads=loads,
            node_of=layout.node_of.copy(),
            cores=self.cores.copy(),
            state_bytes=program.state_bytes.copy(),
            comm=self.comm,
            machine=self.machine,
        )
        # The runtime's call after the report: the decision, broadcast to every node.
        decided = released + over.rebalance
        ready = decided[layout.node_of].copy()
        if proposal is not None:
            ready = self._move(self._checked(proposal), b, decided, released, ready)
        if n_parts:
            self.rebalance_time += max(float(ready.max() - released.max()), 0.0)
        self.extra_step_end[b - 1] = float(released.max())
        self.carry = np.ascontiguousarray(ready)
        self.t0 = float(released.min())

    def _checked(self, proposal) -> np.ndarray:
        """The strategy's new ``node_of``, checked: ``(P,)`` integers in ``[0, nodes)``."""
        n_parts, n_nodes, dynamic = self.program.n_parts, self.machine.nodes, self.dynamic
        new = np.asarray(proposal)
        if new.shape != (n_parts,) or not np.issubdtype(new.dtype, np.integer):
            raise InputError(
                f"dynamic strategy {getattr(dynamic, 'name', dynamic)!r}",
                f"returned node_of of shape {new.shape}, dtype {new.dtype}",
                f"({n_parts},) integers",
            )
        if n_parts and (new.min() < 0 or new.max() >= n_nodes):
            raise InputError(
                f"dynamic strategy {getattr(dynamic, 'name', dynamic)!r}",
                "returned nodes out of range",
                f"[0, {n_nodes})",
            )
        return new.astype(np.int64)

    def _move(self, new, b, decided, released, ready) -> np.ndarray:
        """Move the partitions ``new`` puts elsewhere (their state over the network, then the
        re-plan); when each partition is ready again."""
        program, layout, state, network = self.program, self.layout, self.state, self.network
        moved = np.flatnonzero(new != layout.node_of)
        if not moved.size:
            return ready
        src = layout.node_of[moved]
        dst = new[moved]
        nbytes = program.state_bytes[moved].astype(np.float64)
        arrival = np.empty(moved.size)
        started = time.process_time()
        _migrate(
            network.net_i, network.net_f, state.send_free, state.recv_free, state.link_free,
            src, dst, nbytes, decided[src], arrival,
        )  # fmt: skip
        self.cpu += time.process_time() - started
        ready[moved] = np.maximum(arrival, decided[dst])
        replan = self.options.overheads.replan
        if replan > 0:
            # Each node re-plans the partitions it now holds once their state is in; the
            # runtime's re-plan agrees across ranks, so all nodes resume together.
            start = decided.copy()
            np.maximum.at(start, dst, arrival)
            held = np.bincount(new, minlength=self.machine.nodes)
            ready[:] = (start + replan * held).max()
        self.bytes_migrated += int(program.state_bytes[moved].sum())
        self.moved_total += int(moved.size)
        self.migration_time += float(arrival.max() - released.min())
        self.layout = build_layout(program, self.machine, new, self.options, self.core_of)
        self.placements.append((b, new.copy()))
        return ready


def _result(run: _Run, rec, placement: Placement, window: tuple[int, int]) -> SimResult:
    """Per-step ends, busy and idle time, work and LIF, the timeline's window: the result."""
    program, machine, cores, seg_node = run.program, run.machine, run.cores, run.seg_node
    n_steps, n_parts, phases, n_tasks = (
        program.n_steps, program.n_parts, program.phases, program.n_tasks,
    )  # fmt: skip
    task_start, task_end = rec.task_time[:, 0], rec.task_time[:, 1]
    step_end = np.maximum(np.maximum(rec.step_task_end, rec.step_release), run.extra_step_end)
    step_end = np.maximum.accumulate(step_end) if n_steps else step_end
    bounds = np.concatenate(([0.0], step_end))
    makespan = np.diff(bounds)
    node_busy = np.zeros((n_steps, machine.nodes))
    node_work = np.zeros((n_steps, machine.nodes))
    if n_tasks and seg_node:
        _task_sums(
            task_start,
            task_end,
            np.array([g[0] for g in seg_node] + [seg_node[-1][1]], dtype=np.int64),
            np.stack([g[3] for g in seg_node]),
            np.array([g[2] for g in seg_node], dtype=np.int64),
            n_parts,
            phases,
            bounds,
            node_busy,
            node_work,
        )
    node_idle = np.maximum(cores[None, :] * makespan[:, None] - node_busy, 0.0)
    tasks = messages = None
    lo, hi = window
    if hi > lo:
        sl = slice(lo * phases * n_parts, hi * phases * n_parts)
        task_node = _task_nodes(seg_node, sl.start, sl.stop, n_parts)
        tasks = TaskRecords(
            first_step=lo,
            n_parts=n_parts,
            phases=phases,
            start=task_start[sl].copy(),
            end=task_end[sl].copy(),
            core=(rec.task_core - np.concatenate(([0], np.cumsum(cores)))[task_node]),
            node=task_node,
        )
        k = int(rec.rec_n[0])
        messages = MessageRecords(
            src=rec.rec_src[:k].copy(),
            dst=rec.rec_dst[:k].copy(),
            step=rec.rec_step[:k].copy(),
            sent=rec.rec_t0[:k].copy(),
            delivered=rec.rec_t1[:k].copy(),
            nbytes=rec.rec_bytes[:k].copy(),
        )
    return SimResult(
        machine=machine.name,
        nodes=machine.nodes,
        cores=cores,
        strategy=placement.strategy,
        seed=placement.seed,
        n_parts=n_parts,
        phases=phases,
        step_end=step_end,
        makespan=makespan,
        node_busy=node_busy,
        node_idle=node_idle,
        node_work=node_work,
        bytes_sent=rec.bytes_sent[:n_steps],
        bytes_recv=rec.bytes_recv[:n_steps],
        lif=step_lif(node_work, cores),
        comm_time=float(rec.comm_time.sum()),
        hidden_comm_time=float(rec.hidden_time.sum()),
        bytes_migrated=run.bytes_migrated,
        partitions_migrated=run.moved_total,
        migration_time=run.migration_time,
        rebalance_time=run.rebalance_time,
        n_tasks=n_tasks,
        n_messages=run.n_msgs,
        placements=run.placements,
        tasks=tasks,
        messages=messages,
        cpu_seconds=run.cpu,
    )
