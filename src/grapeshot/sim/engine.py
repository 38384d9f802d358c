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
    n_steps, n_parts, phases = program.n_steps, program.n_parts, program.phases
    n_nodes = machine.nodes
    if timeline_steps is not None:
        lo, hi = timeline_steps
        if not 0 <= lo < hi:
            raise InputError("--timeline-steps", f"got {lo}:{hi}", "a:b with 0 <= a < b")
        lo, hi = min(lo, n_steps), min(hi, n_steps)
    else:
        lo = hi = 0
    interval = None
    if dynamic is not None:
        interval = int(dynamic.interval)
        if interval < 1:
            raise InputError("dynamic strategy interval", f"got {interval}", "an integer >= 1")
        if options.balance_on == "work" and program.workload.work is None:
            raise InputError(
                "--balance-on work", "the workload has no work counts", "a trace with 'work'"
            )
    cores = machine.cores()
    node_cores = cores.astype(np.float64)
    state = network.new_state()
    net = net_record(network, state)
    over = options.overheads
    sync = options.sync != "none"
    coll_alg = {"linear": 0, "binomial": 1}[options.collective]

    n_tasks = program.n_tasks
    rec = new_out(program, n_nodes, (lo, hi))
    task_start, task_end = rec.task_time[:, 0], rec.task_time[:, 1]
    comm_time, node_release = rec.comm_time, rec.node_release

    node_of = placement.node_of.astype(np.int64)
    core_of = placement.core_of
    placements: list[tuple[int, np.ndarray]] = [(0, node_of.copy())]
    seg_node: list[tuple[int, int, int, np.ndarray]] = []  # tasks lo, hi, first step, nodes
    n_msgs = 0
    t0 = 0.0
    carry = None
    bytes_migrated = 0
    moved_total = 0
    migration_time = 0.0
    rebalance_time = 0.0
    extra_step_end = np.zeros(n_steps)
    cpu = 0.0
    segments = _segment_bounds(n_steps, interval, dynamic)
    comm = halo_matrix(program) if dynamic is not None else None
    layout: Layout = build_layout(program, machine, node_of, options, core_of)
    for a, b in segments:
        task_lo, task_hi = a * phases * n_parts, b * phases * n_parts
        carry_out = b < n_steps
        # The records are built inside the timed span: the former kernel allocated its
        # queues and clocks itself, and cpu_seconds is the engine's whole cost.
        started = time.process_time()
        plan = segment_plan(program, layout, options, (a, b), carry, t0)
        out = segment_out(rec, program, (a, b))
        queues = new_queues(layout, program)
        clocks = new_clocks(plan, program, layout, layout.fc_init.shape[0], node_cores)
        seed_segment(plan, queues, clocks)
        while not run_segment(net, plan, queues, clocks, out, POPS_PER_CALL):
            if progress is not None:
                progress((task_hi - int(clocks.step_rem.sum())) / max(n_tasks, 1))
        n_msgs += int(clocks.ctr[C_MSGS])
        cpu += time.process_time() - started
        if progress is not None:
            progress(task_hi / max(n_tasks, 1))
        seg_node.append((task_lo, task_hi, a, layout.node_of))
        if not carry_out:
            break
        # Rebalancing point: every node reports its measured loads (an allreduce), the
        # strategy decides, moved partitions carry their state to their new node.
        seg_start = task_start[task_lo:task_hi]
        seg_end = task_end[task_lo:task_hi]
        arrive = np.full(n_nodes, t0)
        np.maximum.at(arrive, np.tile(layout.node_of, (b - a) * phases), seg_end)
        if sync:
            arrive = np.maximum(arrive, node_release)
        released = np.empty(n_nodes)
        collective_release(
            arrive,
            coll_alg,
            0,
            8.0 * n_parts,
            over.message,
            network.net_i,
            network.net_f,
            released,
        )
        latest = float(arrive.max())
        comm_time += np.maximum(released - latest, 0.0)
        if options.balance_on == "work":  # what the runtime measures for its strategies
            loads = program.workload.work[a:b].astype(np.float64)
        else:
            loads = (seg_end - seg_start).reshape(b - a, phases * n_parts)
            loads = loads.reshape(b - a, phases, n_parts).sum(axis=1)
        proposal = dynamic.rebalance(
            step=b,
            loads=loads,
            node_of=layout.node_of.copy(),
            cores=cores.copy(),
            state_bytes=program.state_bytes.copy(),
            comm=comm,
            machine=machine,
        )
        # The runtime's call after the report: the decision, broadcast to every node.
        decided = released + over.rebalance
        ready = decided[layout.node_of].copy()
        if proposal is not None:
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
            new = new.astype(np.int64)
            moved = np.flatnonzero(new != layout.node_of)
            if moved.size:
                src = layout.node_of[moved]
                dst = new[moved]
                nbytes = program.state_bytes[moved].astype(np.float64)
                arrival = np.empty(moved.size)
                started = time.process_time()
                _migrate(
                    network.net_i,
                    network.net_f,
                    state.send_free,
                    state.recv_free,
                    state.link_free,
                    src,
                    dst,
                    nbytes,
                    decided[src],
                    arrival,
                )
                cpu += time.process_time() - started
                ready[moved] = np.maximum(arrival, decided[dst])
                if over.replan > 0:
                    # Each node re-plans the partitions it now holds once their state is in;
                    # the runtime's re-plan agrees across ranks, so all nodes resume together.
                    start = decided.copy()
                    np.maximum.at(start, dst, arrival)
                    held = np.bincount(new, minlength=n_nodes)
                    ready[:] = (start + over.replan * held).max()
                bytes_migrated += int(program.state_bytes[moved].sum())
                moved_total += int(moved.size)
                migration_time += float(arrival.max() - released.min())
                layout = build_layout(program, machine, new, options, core_of)
                placements.append((b, new.copy()))
        if n_parts:
            rebalance_time += max(float(ready.max() - released.max()), 0.0)
        extra_step_end[b - 1] = float(released.max())
        carry = np.ascontiguousarray(ready)
        t0 = float(released.min())

    # Per-step ends, windows, busy and idle time, work and LIF.
    step_end = np.maximum(np.maximum(rec.step_task_end, rec.step_release), extra_step_end)
    step_end = np.maximum.accumulate(step_end) if n_steps else step_end
    bounds = np.concatenate(([0.0], step_end))
    makespan = np.diff(bounds)
    node_busy = np.zeros((n_steps, n_nodes))
    node_work = np.zeros((n_steps, n_nodes))
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
        nodes=n_nodes,
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
        comm_time=float(comm_time.sum()),
        hidden_comm_time=float(rec.hidden_time.sum()),
        bytes_migrated=bytes_migrated,
        partitions_migrated=moved_total,
        migration_time=migration_time,
        rebalance_time=rebalance_time,
        n_tasks=n_tasks,
        n_messages=n_msgs,
        placements=placements,
        tasks=tasks,
        messages=messages,
        cpu_seconds=cpu,
    )
