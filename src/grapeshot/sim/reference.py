"""A minimal pure-Python event loop over the same events: the slow reference of the engine.

It implements the model of :mod:`grapeshot.sim.engine` (tasks, FIFO ready queues per node or
per core, NIC serialisation on a flat network with or without node contention, per-step global
operations, the communication-hidden integral) with ``heapq`` and Python lists, written for
clarity rather than speed, and with the same event order, so the two must agree bit for bit.
Tests check that they do; ``benchmarks/bench_sim.py`` times both on the same program.

It covers one placement for the whole run (no dynamic strategies) on ``flat`` networks.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from grapeshot.model.errors import InputError
from grapeshot.model.machine import Machine
from grapeshot.model.placement import Placement
from grapeshot.model.workload import Workload
from grapeshot.sim.program import SimOptions, build_layout, build_program, check_placement

_TASK_END, _READY = 0, 1


@dataclass(frozen=True, eq=False)
class ReferenceRun:
    """What the reference loop computes (the engine's raw outputs for the same run)."""

    task_start: np.ndarray
    task_end: np.ndarray
    task_core: np.ndarray
    step_task_end: np.ndarray
    step_release: np.ndarray
    bytes_sent: np.ndarray
    bytes_recv: np.ndarray
    comm_time: np.ndarray
    hidden_time: np.ndarray
    n_messages: int
    cpu_seconds: float = 0.0


def _collective(
    arrive: list[float], linear: bool, nbytes: float, o: float, lat: float, bw: float
) -> list[float]:
    """Release times of an allreduce rooted at node 0 on a flat network (see collectives)."""
    n = len(arrive)
    if n == 1:
        return [arrive[0]]
    ser = nbytes / bw
    release = [0.0] * n
    if linear:
        avail = sorted(((arrive[i] + o + lat + ser, i) for i in range(1, n)), key=lambda x: x[0])
        t = arrive[0]
        for a, _ in avail:
            t = max(t, a) + o
        for node in range(1, n):
            t += o
            release[node] = t + lat + ser + o
        release[0] = t
        return release
    sent = [0.0] * n
    for r in range(n - 1, -1, -1):
        t = arrive[r]
        mask = 1
        while r + mask < n and (r == 0 or mask < (r & -r)):
            t = max(t, sent[r + mask] + lat + ser) + o
            mask <<= 1
        sent[r] = t + o
        if r == 0:
            release[0] = t
    have = [0.0] * n
    have[0] = release[0]
    for r in range(n):
        t = have[r]
        top = 1
        while r + top < n and (r == 0 or top < (r & -r)):
            top <<= 1
        mask = top >> 1
        while mask >= 1:
            if r + mask < n:
                t += o
                have[r + mask] = t + lat + ser + o
            mask >>= 1
        release[r] = t
    return release


def reference_run(
    workload: Workload, placement: Placement, machine: Machine, options: SimOptions | None = None
) -> ReferenceRun:
    """Run the program with the pure-Python loop; see the module docstring for the scope."""
    import time

    options = options or SimOptions()
    if machine.network.topology != "flat":
        raise InputError(
            "reference_run", f"machine {machine.name!r} is {machine.network.topology}", "flat"
        )
    program = build_program(workload, options)
    check_placement(program, placement, machine)
    lay = build_layout(program, machine, placement.node_of, options, placement.core_of)
    started = time.process_time()

    n_parts = program.n_parts
    phases = program.phases
    n_sp = program.n_steps * phases
    n_tasks = n_sp * n_parts
    n_nodes = machine.nodes
    cost = program.cost.tolist()
    inv = 1.0 / phases
    out_ptr = program.out_ptr.tolist()
    out_idx = program.out_idx.tolist()
    out_bytes = program.out_bytes.tolist()
    node_of = lay.node_of.tolist()
    queue_of = lay.queue_of.tolist()
    core_node = lay.core_node.tolist()
    cores = machine.cores().astype(float).tolist()
    node_parts = [
        lay.node_parts[lay.node_part_ptr[k] : lay.node_part_ptr[k + 1]].tolist()
        for k in range(n_nodes)
    ]
    out_extra = lay.out_extra.tolist()
    in_extra = lay.in_extra.tolist()
    task_over = options.overheads.task
    msg_over = options.overheads.message
    net = machine.network
    bw, lat, contention = net.bandwidth, net.latency, net.node_contention
    sync = options.sync != "none"
    linear = options.collective == "linear"
    coll_bytes = float(options.reduce_bytes if options.sync == "allreduce" else 0)

    dep = []
    for sp in range(n_sp):
        for p in range(n_parts):
            d = 0 if sp == 0 else program.in_deg[p] + 1 + (1 if sync and sp % phases == 0 else 0)
            dep.append(int(d))
    ready_t = [0.0] * n_tasks
    queues: list[list[int]] = [[] for _ in range(len(lay.q_ptr) - 1)]
    heads = [0] * len(queues)
    free = [lay.fc_init[lay.fc_ptr[q] : lay.fc_ptr[q + 1]].tolist() for q in range(len(queues))]
    start = [0.0] * n_tasks
    end = [0.0] * n_tasks
    core_of = [0] * n_tasks
    send_free = [0.0] * n_nodes
    recv_free = [0.0] * n_nodes
    steps = program.n_steps
    step_rem = [n_parts * phases] * steps
    step_task_end = [0.0] * steps
    step_release = [0.0] * steps
    node_last = [0.0] * n_nodes
    bytes_sent = [[0.0] * n_nodes for _ in range(steps)]
    bytes_recv = [[0.0] * n_nodes for _ in range(steps)]
    comm_coll = [0.0] * n_nodes
    # Per-node accounting: clock, busy cores, busy integral, open comm span, totals.
    clock = [0.0] * n_nodes
    busy = [0.0] * n_nodes
    bint = [0.0] * n_nodes
    span_on = [False] * n_nodes
    span0 = [0.0] * n_nodes
    span1 = [0.0] * n_nodes
    spanb = [0.0] * n_nodes
    comm = [0.0] * n_nodes
    hidden = [0.0] * n_nodes

    def advance(k: int, t: float) -> None:
        lt = clock[k]
        if t < lt:
            return
        if span_on[k] and span1[k] <= t:
            b_end = bint[k] + busy[k] * (span1[k] - lt)
            comm[k] += span1[k] - span0[k]
            hidden[k] += (b_end - spanb[k]) / cores[k]
            span_on[k] = False
        bint[k] += busy[k] * (t - lt)
        clock[k] = t

    heap: list[tuple[float, int, int, int]] = []
    seq = 0
    touched: list[int] = []

    def met(task: int, t: float) -> None:
        nonlocal seq
        if ready_t[task] > t:
            heapq.heappush(heap, (ready_t[task], seq, _READY, task))
            seq += 1
        else:
            q = queue_of[task % n_parts]
            queues[q].append(task)
            touched.append(q)

    for p in range(n_parts):
        queues[queue_of[p]].append(p)
    touched.extend(range(len(queues)))
    n_msgs = 0
    t = 0.0
    while True:
        for q in touched:
            queue = queues[q]
            while heads[q] < len(queue) and free[q]:
                task = queue[heads[q]]
                heads[q] += 1
                core = free[q].pop()
                p = task % n_parts
                sp = task // n_parts
                dur = cost[sp // phases][p] * inv + task_over
                if sp > 0:
                    dur += in_extra[p]
                if sp + 1 < n_sp:
                    dur += out_extra[p]
                k = core_node[core]
                advance(k, t)
                busy[k] += 1.0
                start[task] = t
                end[task] = t + dur
                core_of[task] = core
                heapq.heappush(heap, (t + dur, seq, _TASK_END, task))
                seq += 1
        touched.clear()
        if not heap:
            break
        t, _, kind, task = heapq.heappop(heap)
        p = task % n_parts
        if kind == _READY:
            q = queue_of[p]
            queues[q].append(task)
            touched.append(q)
            continue
        sp = task // n_parts
        core = core_of[task]
        node = core_node[core]
        advance(node, t)
        busy[node] -= 1.0
        free[queue_of[p]].append(core)
        touched.append(queue_of[p])
        node_last[node] = max(node_last[node], t)
        s = sp // phases
        step_rem[s] -= 1
        if step_rem[s] == 0:
            step_task_end[s] = t
            if sync:
                rel = _collective(node_last, linear, coll_bytes, msg_over, lat, bw)
                latest = max(node_last)
                for k in range(n_nodes):
                    if rel[k] > latest:
                        comm_coll[k] += rel[k] - latest
                node_last = list(rel)
                step_release[s] = max(rel)
                if s + 1 < steps:
                    base = (s + 1) * phases * n_parts
                    for k in range(n_nodes):
                        for q2 in node_parts[k]:
                            nt = base + q2
                            ready_t[nt] = max(ready_t[nt], rel[k])
                            dep[nt] -= 1
                            if dep[nt] == 0:
                                met(nt, t)
        if sp + 1 >= n_sp:
            continue
        nxt = task + n_parts
        dep[nxt] -= 1
        if dep[nxt] == 0:
            met(nxt, t)
        base = (sp + 1) * n_parts
        for e in range(out_ptr[p], out_ptr[p + 1]):
            dp = out_idx[e]
            dst = base + dp
            dn = node_of[dp]
            n_msgs += 1
            if dn != node:
                b = out_bytes[e]
                ser = b / bw
                go = max(t, send_free[node])
                if contention:
                    go = max(go, recv_free[dn])
                    arrive = go + lat + ser
                    send_free[node] = recv_free[dn] = arrive
                else:
                    send_free[node] = go + ser
                    arrive = max(max(go + lat, recv_free[dn]) + ser, go + ser + lat)
                    recv_free[dn] = arrive
                bytes_sent[s][node] += b
                bytes_recv[s][dn] += b
                advance(dn, t)
                if arrive > t:
                    if span_on[dn]:
                        span1[dn] = max(span1[dn], arrive)
                    else:
                        span_on[dn], span0[dn], span1[dn], spanb[dn] = True, t, arrive, bint[dn]
                ready_t[dst] = max(ready_t[dst], arrive)
            dep[dst] -= 1
            if dep[dst] == 0:
                met(dst, t)
    for k in range(n_nodes):
        advance(k, t)
    return ReferenceRun(
        task_start=np.asarray(start),
        task_end=np.asarray(end),
        task_core=np.asarray(core_of, dtype=np.int64),
        step_task_end=np.asarray(step_task_end),
        step_release=np.asarray(step_release),
        bytes_sent=np.asarray(bytes_sent).reshape(steps, n_nodes),
        bytes_recv=np.asarray(bytes_recv).reshape(steps, n_nodes),
        comm_time=np.asarray(comm_coll) + np.asarray(comm),
        hidden_time=np.asarray(hidden),
        n_messages=n_msgs,
        cpu_seconds=time.process_time() - started,
    )
