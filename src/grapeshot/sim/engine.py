"""The event loop: a program on a placement on a machine, event by event, in numba.

Events live in one binary heap ordered by (time, sequence number): ties go to the event pushed
first, so the same inputs give the same schedule, bit for bit. Three kinds:

``TASK_END``
    A task finishes: its core goes back to its ready queue (which starts its head task), its
    partition's next task meets a dependency, and its halo messages leave — to a partition on
    the same node at once (a copy the task already paid for), to another node through
    :func:`grapeshot.sim.network._transmit`, which gives the delivery time at once. The
    receiving task takes the message there and then: its earliest start becomes
    ``max(earliest start, delivery)`` and it meets a dependency. No event per message.
``READY``
    A task whose dependencies are all met, with its earliest start in the future, joins its
    ready queue at that time.
``PART_START``
    After a rebalancing point, a partition is ready on its (new) node: it sends the halo of
    its last step and its next task meets a dependency.

With a global operation per step, the step's last task computes every node's release time
(:mod:`grapeshot.sim.collectives`), which is the earliest start of the node's first tasks of
the next step.

A task whose dependencies are all met joins its ready queue (first in, first out); an idle core
of the queue takes the head. With dynamic dispatch (Birdshot §4) a node's cores share one
queue; pinned, each core has its own.

The loop also integrates, per node, the time with inter-node messages in flight towards it (the
union of their send-to-delivery intervals, kept as one open span per node because sends are
processed in time order) and the part of that time its cores compute (weighted by the fraction
busy): the communication hidden behind computation.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import numpy as np
from numba import njit
from scipy import sparse

from grapeshot.model.errors import InputError
from grapeshot.model.machine import Machine
from grapeshot.model.placement import Placement
from grapeshot.place.dynamic import call_steps
from grapeshot.sim.collectives import collective_release
from grapeshot.sim.network import (
    F_BANDWIDTH,
    F_HOP,
    F_LATENCY,
    F_WX,
    F_WY,
    F_WZ,
    I_ARITY,
    I_CONTENTION,
    I_KIND,
    I_LEVELS,
    I_MAXROUTE,
    I_NODES,
    I_NPR,
    I_PARENTS,
    I_X,
    I_Y,
    I_Z,
    TORUS3D,
    NetworkModel,
    _hops_s,
    _link_bw_s,
    _link_s,
    _ring_step,
    _transmit,
    network_model,
)
from grapeshot.sim.program import (
    Layout,
    Program,
    SimOptions,
    build_layout,
    build_program,
    check_placement,
)
from grapeshot.sim.result import MessageRecords, SimResult, TaskRecords, step_lif

TASK_END, READY, PART_START = 0, 1, 2
_KIND_BITS = 2
_KIND_MASK = 3


@njit(cache=True, inline="always")
def _heap_push(ht, hs, hp, n, t, seq, payload):
    i = n
    while i > 0:
        parent = (i - 1) >> 1
        pt = ht[parent]
        if pt < t or (pt == t and hs[parent] < seq):
            break
        ht[i] = pt
        hs[i] = hs[parent]
        hp[i] = hp[parent]
        i = parent
    ht[i] = t
    hs[i] = seq
    hp[i] = payload
    return n + 1


@njit(cache=True, inline="always")
def _heap_pop(ht, hs, hp, n):
    """Remove the top of a heap of ``n`` entries; return its (time, payload)."""
    top_t = ht[0]
    top_p = hp[0]
    n -= 1
    if n > 0:
        t = ht[n]
        s = hs[n]
        p = hp[n]
        i = 0
        while True:
            c = 2 * i + 1
            if c >= n:
                break
            r = c + 1
            if r < n and (ht[r] < ht[c] or (ht[r] == ht[c] and hs[r] < hs[c])):
                c = r
            if t < ht[c] or (t == ht[c] and s < hs[c]):
                break
            ht[i] = ht[c]
            hs[i] = hs[c]
            hp[i] = hp[c]
            i = c
        ht[i] = t
        hs[i] = s
        hp[i] = p
    return top_t, top_p, n


# Columns of the per-node accounting array ``nst`` (one row per node).
N_LAST, N_BUSY, N_BINT, N_CON, N_C0, N_C1, N_CB0, N_COMM, N_HID, N_CORES = range(10)


@njit(cache=True, inline="always")
def _advance(nst, node, t):
    """Move node ``node``'s clock to ``t``: integrate its busy cores, close a finished span.

    ``N_BINT`` is the integral of busy cores over time; a communication span (the union of
    the node's in-flight message intervals) ``[N_C0, N_C1]`` adds its length to ``N_COMM``
    and the busy-core integral over it, per core, to ``N_HID`` when the clock passes its end.
    """
    lt = nst[node, N_LAST]
    if t < lt:
        return
    if nst[node, N_CON] != 0.0 and nst[node, N_C1] <= t:
        end = nst[node, N_C1]
        b_end = nst[node, N_BINT] + nst[node, N_BUSY] * (end - lt)
        nst[node, N_COMM] += end - nst[node, N_C0]
        nst[node, N_HID] += (b_end - nst[node, N_CB0]) / nst[node, N_CORES]
        nst[node, N_CON] = 0.0
    nst[node, N_BINT] += nst[node, N_BUSY] * (t - lt)
    nst[node, N_LAST] = t


@njit(cache=True)
def _run_segment(
    n_parts,
    n_sp,
    phases,
    step0,
    cost,
    inv_phases,
    out_ptr,
    out_idx,
    out_bytes,
    in_deg,
    node_of,
    queue_of,
    q_ptr,
    fc_ptr,
    fc_init,
    core_node,
    node_part_ptr,
    node_parts,
    node_cores,
    task_overhead,
    out_extra,
    in_extra,
    carry_in,
    ready_in,
    carry_out,
    t0,
    sync,
    coll_alg,
    coll_bytes,
    coll_overhead,
    net_i,
    net_f,
    send_free,
    recv_free,
    link_free,
    task_start,
    task_end,
    task_core,
    step_task_end,
    step_release,
    node_release,
    bytes_sent,
    bytes_recv,
    comm_time,
    hidden_time,
    rec_lo,
    rec_hi,
    rec_src,
    rec_dst,
    rec_step,
    rec_t0,
    rec_t1,
    rec_bytes,
    rec_n,
):
    """Run steps ``step0 .. step0 + n_sp / phases`` of a program; return messages delivered.

    Arguments, in order: the program (sizes, costs, halo CSR, in-degrees); its layout on the
    placement (nodes, queues, cores, partitions per node, cores per node); the per-task and
    per-message extra seconds; the segment's boundary (carry-in ready times, carry-out, start
    time); the global operation; the network (parameters and NIC/link state, updated in
    place); the outputs (task records, step ends and releases, bytes, communication
    integrals, filled in place); the recording window and its buffers.

    A message's delivery time is known when it is sent, so the receiving task takes it at
    once: its earliest start becomes ``max(ready, delivery)`` and it loses the dependency. A
    task whose last dependency is met with a start in the future gets one ``READY`` event; the
    heap thus holds at most one event per core and one per partition.
    """
    P = n_parts
    n = node_cores.shape[0]
    n_queues = q_ptr.shape[0] - 1
    n_tasks = n_sp * P
    steps_seg = n_sp // phases

    dep = np.empty(n_tasks, dtype=np.int32)
    for sp in range(n_sp):
        base = sp * P
        for p in range(P):
            if sp == 0:
                d = in_deg[p] + 1 if carry_in else 0
            else:
                d = in_deg[p] + 1
                if sync and sp % phases == 0:
                    d += 1
            dep[base + p] = d
    ready_t = np.full(n_tasks, t0)

    q_buf = np.empty(max(P, 1), dtype=np.int64)
    q_head = np.zeros(n_queues, dtype=np.int64)
    q_len = np.zeros(n_queues, dtype=np.int64)
    fc_buf = fc_init.copy()
    fc_len = np.empty(n_queues, dtype=np.int64)
    for q in range(n_queues):
        fc_len[q] = fc_ptr[q + 1] - fc_ptr[q]
    nst = np.zeros((n, 10))
    for k in range(n):
        nst[k, N_LAST] = t0
        nst[k, N_CORES] = node_cores[k]
    step_rem = np.full(steps_seg, P * phases, dtype=np.int64)
    node_step_last = np.full(n, t0)
    release = np.empty(n)
    topo = net_i[I_KIND]
    n_nodes = net_i[I_NODES]
    arity = net_i[I_ARITY]
    levels = net_i[I_LEVELS]
    parents = net_i[I_PARENTS]
    nx, ny, nz, npr = net_i[I_X], net_i[I_Y], net_i[I_Z], net_i[I_NPR]
    contention = net_i[I_CONTENTION] != 0
    bw = net_f[F_BANDWIDTH]
    lat0 = net_f[F_LATENCY]
    hop_lat = net_f[F_HOP]
    wx, wy, wz = net_f[F_WX], net_f[F_WY], net_f[F_WZ]
    route = np.empty(max(net_i[I_MAXROUTE], 1), dtype=np.int64)

    max_out = 0
    for p in range(P):
        k = out_ptr[p + 1] - out_ptr[p]
        if k > max_out:
            max_out = k
    touched = np.empty(max(n_queues, P + max_out + 8), dtype=np.int64)
    # At most one TASK_END per core and one READY or PART_START per partition (a partition
    # has one current task) are ever in the heap.
    cap = 2 * P + fc_init.shape[0] + 16
    ht = np.empty(cap)
    hs = np.empty(cap, dtype=np.int64)
    hp = np.empty(cap, dtype=np.int64)
    hn = 0
    seq = 0
    n_msgs = 0

    # Seed the loop: ready partitions in id order, or the rebalancing point's start events.
    n_touched = 0
    if carry_in:
        for p in range(P):
            hn = _heap_push(ht, hs, hp, hn, ready_in[p], seq, (p << _KIND_BITS) | PART_START)
            seq += 1
    else:
        for p in range(P):
            if dep[p] == 0:
                q = queue_of[p]
                cap_q = q_ptr[q + 1] - q_ptr[q]
                q_buf[q_ptr[q] + (q_head[q] + q_len[q]) % cap_q] = p
                q_len[q] += 1
        for q in range(n_queues):
            touched[q] = q
        n_touched = n_queues
    t = t0

    while True:
        # Dispatch: idle cores of every queue the last event touched take their queue's head.
        for i in range(n_touched):
            q = touched[i]
            while q_len[q] > 0 and fc_len[q] > 0:
                cap_q = q_ptr[q + 1] - q_ptr[q]
                task = q_buf[q_ptr[q] + q_head[q]]
                q_head[q] = (q_head[q] + 1) % cap_q
                q_len[q] -= 1
                fc_len[q] -= 1
                core = fc_buf[fc_ptr[q] + fc_len[q]]
                p = task % P
                sp = task // P
                dur = cost[step0 + sp // phases, p] * inv_phases + task_overhead
                if sp > 0 or carry_in:
                    dur += in_extra[p]
                if sp + 1 < n_sp or carry_out:
                    dur += out_extra[p]
                node = core_node[core]
                _advance(nst, node, t)
                nst[node, N_BUSY] += 1.0
                task_start[task] = t
                task_end[task] = t + dur
                task_core[task] = core
                hn = _heap_push(ht, hs, hp, hn, t + dur, seq, (task << _KIND_BITS) | TASK_END)
                seq += 1
        if hn == 0:
            break
        t, payload, hn = _heap_pop(ht, hs, hp, hn)
        kind = payload & _KIND_MASK
        val = payload >> _KIND_BITS
        n_touched = 0

        if kind == READY:
            task = val
            q2 = queue_of[task % P]
            cap_q = q_ptr[q2 + 1] - q_ptr[q2]
            q_buf[q_ptr[q2] + (q_head[q2] + q_len[q2]) % cap_q] = task
            q_len[q2] += 1
            touched[n_touched] = q2
            n_touched += 1
            continue

        # Both TASK_END and PART_START end with partition p sending its halo at time t and
        # meeting one dependency of its next task.
        if kind == TASK_END:
            task = val
            p = task % P
            sp = task // P
            core = task_core[task]
            node = core_node[core]
            _advance(nst, node, t)
            nst[node, N_BUSY] -= 1.0
            q = queue_of[p]
            fc_buf[fc_ptr[q] + fc_len[q]] = core
            fc_len[q] += 1
            touched[n_touched] = q
            n_touched += 1
            if t > node_step_last[node]:
                node_step_last[node] = t
            s_loc = sp // phases
            step_rem[s_loc] -= 1
            if step_rem[s_loc] == 0:
                step_task_end[s_loc] = t
                if sync:
                    collective_release(
                        node_step_last,
                        coll_alg,
                        0,
                        coll_bytes,
                        coll_overhead,
                        net_i,
                        net_f,
                        release,
                    )
                    latest = node_step_last.max()
                    for k in range(n):
                        if release[k] > latest:
                            comm_time[k] += release[k] - latest
                        node_step_last[k] = release[k]
                        node_release[k] = release[k]
                    step_release[s_loc] = release.max()
                    if s_loc + 1 < steps_seg:
                        base = (s_loc + 1) * phases * P
                        for k in range(n):
                            rk = release[k]
                            for i in range(node_part_ptr[k], node_part_ptr[k + 1]):
                                nt = base + node_parts[i]
                                if rk > ready_t[nt]:
                                    ready_t[nt] = rk
                                dep[nt] -= 1
                                if dep[nt] == 0:
                                    if ready_t[nt] > t:
                                        hn = _heap_push(
                                            ht,
                                            hs,
                                            hp,
                                            hn,
                                            ready_t[nt],
                                            seq,
                                            (nt << _KIND_BITS) | READY,
                                        )
                                        seq += 1
                                    else:
                                        q2 = queue_of[node_parts[i]]
                                        cap_q = q_ptr[q2 + 1] - q_ptr[q2]
                                        q_buf[q_ptr[q2] + (q_head[q2] + q_len[q2]) % cap_q] = nt
                                        q_len[q2] += 1
                                        touched[n_touched] = q2
                                        n_touched += 1
            if sp + 1 >= n_sp:
                continue
            nxt = task + P
            base = (sp + 1) * P
            step_g = step0 + s_loc
        else:  # PART_START
            p = val
            node = node_of[p]
            nxt = p
            base = 0
            step_g = step0 - 1

        # The partition's own next task.
        dep[nxt] -= 1
        if dep[nxt] == 0:
            if ready_t[nxt] > t:
                hn = _heap_push(ht, hs, hp, hn, ready_t[nxt], seq, (nxt << _KIND_BITS) | READY)
                seq += 1
            else:
                q2 = queue_of[p]
                cap_q = q_ptr[q2 + 1] - q_ptr[q2]
                q_buf[q_ptr[q2] + (q_head[q2] + q_len[q2]) % cap_q] = nxt
                q_len[q2] += 1
                touched[n_touched] = q2
                n_touched += 1
        # Its halo messages.
        for e in range(out_ptr[p], out_ptr[p + 1]):
            dp = out_idx[e]
            dst_task = base + dp
            dn = node_of[dp]
            n_msgs += 1
            if dn != node:
                b = out_bytes[e]
                # _transmit (grapeshot.sim.network) written out: same statements, scalar
                # helpers only, so no array is handed to a function on this path.
                ser = b / bw
                hops = _hops_s(topo, arity, levels, nx, ny, nz, npr, node, dn)
                lat = lat0 + hops * hop_lat
                start = t
                if send_free[node] > start:
                    start = send_free[node]
                if contention:
                    if recv_free[dn] > start:
                        start = recv_free[dn]
                    arrive = start + lat + ser
                    send_free[node] = arrive
                    recv_free[dn] = arrive
                else:
                    send_end = start + ser
                    send_free[node] = send_end
                    head = start
                    tail = send_end
                    if topo == TORUS3D:
                        # Walk the dimension-ordered route once (_link_s recomputes the
                        # coordinates for every hop; the link ids are the same).
                        k = 0
                        ra = node // npr
                        rb = dn // npr
                        x, y, z = ra // (ny * nz), (ra // nz) % ny, ra % nz
                        tx, ty, tz = rb // (ny * nz), (rb // nz) % ny, rb % nz
                        for axis in range(3):
                            if axis == 0:
                                d = _ring_step(tx - x, nx)
                            elif axis == 1:
                                d = _ring_step(ty - y, ny)
                            else:
                                d = _ring_step(tz - z, nz)
                            step = 1 if d > 0 else -1
                            for _ in range(abs(d)):
                                route[k] = 6 * ((x * ny + y) * nz + z) + 2 * axis + (step < 0)
                                k += 1
                                if axis == 0:
                                    x = (x + step) % nx
                                elif axis == 1:
                                    y = (y + step) % ny
                                else:
                                    z = (z + step) % nz
                    else:
                        for i in range(hops):
                            route[i] = _link_s(
                                topo, n_nodes, arity, levels, nx, ny, nz, npr, node, dn, i
                            )
                    for i in range(hops):
                        link = route[i]
                        if link_free[link] > head:
                            head = link_free[link]
                        tt = head + b / _link_bw_s(
                            topo, n_nodes, arity, levels, parents, bw, wx, wy, wz, link
                        )
                        if tt > tail:
                            tail = tt
                        link_free[link] = tail
                    arrive = head + lat
                    if recv_free[dn] > arrive:
                        arrive = recv_free[dn]
                    arrive += ser
                    if tail + lat > arrive:
                        arrive = tail + lat
                    recv_free[dn] = arrive
                bytes_sent[step_g, node] += b
                bytes_recv[step_g, dn] += b
                # _advance(nst, dn, t) written out (the hottest path), then the message's
                # interval joins the node's open communication span or opens one.
                lt = nst[dn, N_LAST]
                if t >= lt:
                    if nst[dn, N_CON] != 0.0 and nst[dn, N_C1] <= t:
                        end = nst[dn, N_C1]
                        b_end = nst[dn, N_BINT] + nst[dn, N_BUSY] * (end - lt)
                        nst[dn, N_COMM] += end - nst[dn, N_C0]
                        nst[dn, N_HID] += (b_end - nst[dn, N_CB0]) / nst[dn, N_CORES]
                        nst[dn, N_CON] = 0.0
                    nst[dn, N_BINT] += nst[dn, N_BUSY] * (t - lt)
                    nst[dn, N_LAST] = t
                if arrive > t:
                    if nst[dn, N_CON] != 0.0:
                        if arrive > nst[dn, N_C1]:
                            nst[dn, N_C1] = arrive
                    else:
                        nst[dn, N_CON] = 1.0
                        nst[dn, N_C0] = t
                        nst[dn, N_C1] = arrive
                        nst[dn, N_CB0] = nst[dn, N_BINT]
                if arrive > ready_t[dst_task]:
                    ready_t[dst_task] = arrive
                if rec_lo <= step_g < rec_hi:
                    r = rec_n[0]
                    if r < rec_src.shape[0]:
                        rec_src[r] = p
                        rec_dst[r] = dp
                        rec_step[r] = step_g
                        rec_t0[r] = t
                        rec_t1[r] = arrive
                        rec_bytes[r] = b
                        rec_n[0] = r + 1
            dep[dst_task] -= 1
            if dep[dst_task] == 0:
                if ready_t[dst_task] > t:
                    hn = _heap_push(
                        ht, hs, hp, hn, ready_t[dst_task], seq, (dst_task << _KIND_BITS) | READY
                    )
                    seq += 1
                else:
                    q2 = queue_of[dp]
                    cap_q = q_ptr[q2 + 1] - q_ptr[q2]
                    q_buf[q_ptr[q2] + (q_head[q2] + q_len[q2]) % cap_q] = dst_task
                    q_len[q2] += 1
                    touched[n_touched] = q2
                    n_touched += 1
    # Close the communication spans at the segment's last event.
    for k in range(n):
        _advance(nst, k, t)
        comm_time[k] += nst[k, N_COMM]
        hidden_time[k] += nst[k, N_HID]
    return n_msgs


@njit(cache=True)
def _window_busy(start, end, node, bounds, out):
    """Add each task's core-seconds to the step windows ``[bounds[w], bounds[w+1])`` it spans."""
    n_win = bounds.shape[0] - 1
    for i in range(start.shape[0]):
        a = start[i]
        b = end[i]
        if b <= a:
            continue
        w = np.searchsorted(bounds, a, side="right") - 1
        if w < 0:
            w = 0
        k = node[i]
        while w < n_win:
            lo = bounds[w] if bounds[w] > a else a
            hi = bounds[w + 1] if bounds[w + 1] < b else b
            if hi > lo:
                out[w, k] += hi - lo
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


def _segment_bounds(
    n_steps: int, interval: int | None, dynamic: Any = None
) -> list[tuple[int, int]]:
    if interval is None:
        return [(0, n_steps)]
    return list(itertools.pairwise([0, *call_steps(dynamic, n_steps), n_steps]))


def halo_matrix(program: Program) -> sparse.csr_array:
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
    program: Program | None = None,
    network: NetworkModel | None = None,
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
        all nodes synchronise (an allreduce of the measured loads), the strategy may return a
        new ``node_of``, and moved partitions carry their state over the network.
    timeline_steps
        ``(a, b)``: keep every task and inter-node message of steps ``a .. b - 1`` for a
        timeline (:mod:`grapeshot.sim.timeline`).
    program, network
        A prebuilt program or network model, to save planning them again.

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
    cores = machine.cores()
    node_cores = cores.astype(np.float64)
    state = network.new_state()
    over = options.overheads
    sync = options.sync != "none"
    coll_alg = {"linear": 0, "binomial": 1}[options.collective]
    coll_bytes = float(options.reduce_bytes if options.sync == "allreduce" else 0)

    n_tasks = program.n_tasks
    task_start = np.empty(n_tasks)
    task_end = np.empty(n_tasks)
    task_core = np.empty(n_tasks, dtype=np.int64)
    step_task_end = np.zeros(n_steps)
    step_release = np.zeros(n_steps)
    bytes_sent = np.zeros((max(n_steps, 1), n_nodes))
    bytes_recv = np.zeros((max(n_steps, 1), n_nodes))
    comm_time = np.zeros(n_nodes)
    hidden_time = np.zeros(n_nodes)
    node_release = np.zeros(n_nodes)
    rec_cap = (hi - lo) * phases * len(program.out_idx) if hi > lo else 0
    rec_src = np.empty(rec_cap, dtype=np.int64)
    rec_dst = np.empty(rec_cap, dtype=np.int64)
    rec_step = np.empty(rec_cap, dtype=np.int64)
    rec_t0 = np.empty(rec_cap)
    rec_t1 = np.empty(rec_cap)
    rec_bytes = np.empty(rec_cap)
    rec_n = np.zeros(1, dtype=np.int64)

    node_of = placement.node_of.astype(np.int64)
    core_of = placement.core_of
    placements: list[tuple[int, np.ndarray]] = [(0, node_of.copy())]
    seg_node: list[np.ndarray] = []
    n_msgs = 0
    t0 = 0.0
    carry = None
    bytes_migrated = 0
    moved_total = 0
    migration_time = 0.0
    extra_step_end = np.zeros(n_steps)
    cpu = 0.0
    segments = _segment_bounds(n_steps, interval, dynamic)
    comm = halo_matrix(program) if dynamic is not None else None
    layout: Layout = build_layout(program, machine, node_of, options, core_of)
    for a, b in segments:
        task_lo, task_hi = a * phases * n_parts, b * phases * n_parts
        carry_out = b < n_steps
        started = time.process_time()
        n_msgs += _run_segment(
            n_parts,
            (b - a) * phases,
            phases,
            a,
            program.cost,
            1.0 / phases,
            program.out_ptr,
            program.out_idx,
            program.out_bytes,
            program.in_deg,
            layout.node_of,
            layout.queue_of,
            layout.q_ptr,
            layout.fc_ptr,
            layout.fc_init,
            layout.core_node,
            layout.node_part_ptr,
            layout.node_parts,
            node_cores,
            over.task,
            layout.out_extra,
            layout.in_extra,
            carry is not None,
            carry if carry is not None else np.zeros(1),
            carry_out,
            t0,
            sync,
            coll_alg,
            coll_bytes,
            over.message,
            network.net_i,
            network.net_f,
            state.send_free,
            state.recv_free,
            state.link_free,
            task_start[task_lo:task_hi],
            task_end[task_lo:task_hi],
            task_core[task_lo:task_hi],
            step_task_end[a:b],
            step_release[a:b],
            node_release,
            bytes_sent,
            bytes_recv,
            comm_time,
            hidden_time,
            lo,
            hi,
            rec_src,
            rec_dst,
            rec_step,
            rec_t0,
            rec_t1,
            rec_bytes,
            rec_n,
        )
        cpu += time.process_time() - started
        seg_node.append(np.tile(layout.node_of, (b - a) * phases))
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
        ready = released[layout.node_of].copy()
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
                    released[src],
                    arrival,
                )
                cpu += time.process_time() - started
                ready[moved] = np.maximum(arrival, released[dst])
                bytes_migrated += int(program.state_bytes[moved].sum())
                moved_total += int(moved.size)
                migration_time += float(arrival.max() - released.min())
                layout = build_layout(program, machine, new, options, core_of)
                placements.append((b, new.copy()))
        extra_step_end[b - 1] = float(released.max())
        carry = np.ascontiguousarray(ready)
        t0 = float(released.min())

    # Per-step ends, windows, busy and idle time, work and LIF.
    step_end = np.maximum(np.maximum(step_task_end, step_release), extra_step_end)
    step_end = np.maximum.accumulate(step_end) if n_steps else step_end
    bounds = np.concatenate(([0.0], step_end))
    makespan = np.diff(bounds)
    task_node = np.concatenate(seg_node) if seg_node else np.zeros(0, dtype=np.int64)
    node_busy = np.zeros((n_steps, n_nodes))
    if n_tasks:
        _window_busy(task_start, task_end, task_node, bounds, node_busy)
    node_idle = np.maximum(cores[None, :] * makespan[:, None] - node_busy, 0.0)
    durations = task_end - task_start
    step_of_task = np.repeat(np.arange(n_steps), phases * n_parts)
    node_work = np.bincount(
        step_of_task * n_nodes + task_node, weights=durations, minlength=n_steps * n_nodes
    ).reshape(n_steps, n_nodes)
    tasks = messages = None
    if hi > lo:
        sl = slice(lo * phases * n_parts, hi * phases * n_parts)
        tasks = TaskRecords(
            first_step=lo,
            n_parts=n_parts,
            phases=phases,
            start=task_start[sl].copy(),
            end=task_end[sl].copy(),
            core=(task_core[sl] - np.concatenate(([0], np.cumsum(cores)))[task_node[sl]]),
            node=task_node[sl].copy(),
        )
        k = int(rec_n[0])
        messages = MessageRecords(
            src=rec_src[:k].copy(),
            dst=rec_dst[:k].copy(),
            step=rec_step[:k].copy(),
            sent=rec_t0[:k].copy(),
            delivered=rec_t1[:k].copy(),
            nbytes=rec_bytes[:k].copy(),
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
        bytes_sent=bytes_sent[:n_steps],
        bytes_recv=bytes_recv[:n_steps],
        lif=step_lif(node_work, cores),
        comm_time=float(comm_time.sum()),
        hidden_comm_time=float(hidden_time.sum()),
        bytes_migrated=bytes_migrated,
        partitions_migrated=moved_total,
        migration_time=migration_time,
        n_tasks=n_tasks,
        n_messages=n_msgs,
        placements=placements,
        tasks=tasks,
        messages=messages,
        cpu_seconds=cpu,
    )
