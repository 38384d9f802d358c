"""What each event does in the kernel: one function per event kind and per shared step.

``TASK_END`` (:func:`on_task_end`)
    A task finishes: its core is free again and its step may be complete (then, with a global
    operation, the collective releases the next step's first tasks: :func:`end_step`).
``READY``
    A task whose dependencies are all met, with its earliest start in the future, joins its
    ready queue then (:func:`grapeshot.sim.ready_queues.enqueue`).
``PART_START``
    After a rebalancing point a partition is ready on its (new) node.

After a task end or a partition's start the partition is done with a phase
(:func:`partition_done`): its next task meets a dependency and its halo leaves
(:func:`send_halo`) — to a partition on the same node at once (a copy the task already paid
for), to another node through :func:`grapeshot.sim.transfer.transmit`, which gives the
delivery time at once. The receiving task takes the message there and then: its earliest
start becomes ``max(earliest start, delivery)`` and it meets a dependency
(:func:`meet_dependency`). No event per message, so the heap holds at most one event per core
and one per partition. Idle cores take the head of the queues an event touched
(:func:`dispatch`, :func:`start_task`).

Every function takes the kernel's records (:mod:`grapeshot.sim.kernel_state`). Those on the
per-event path are inlined into the kernel by numba (``inline="always"``), each at one call
site or a few (inlining is most of the compile time); those that run once per step are plain
calls. The kernel is compiled without numba's memory manager, so nothing here allocates and
passing a record costs no reference counting.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from grapeshot.sim.collectives import collective_release_into
from grapeshot.sim.event_heap import READY, TASK_END, push_event
from grapeshot.sim.kernel_state import (
    C_MSGS,
    N_BUSY,
    P_DEP,
    P_IN_DEG,
    P_IN_EXTRA,
    P_NODE,
    P_OUT_EXTRA,
    P_OUT_HI,
    P_OUT_LO,
    P_QUEUE,
    P_READY,
    PART_SLOTS,
    Clocks,
    Net,
    Out,
    Plan,
    Queues,
)
from grapeshot.sim.node_clock import advance, join_span
from grapeshot.sim.prefetch import prefetch
from grapeshot.sim.ready_queues import enqueue, free_core, take
from grapeshot.sim.transfer import transmit


@njit(cache=True, inline="always")
def ring(sp: int) -> int:
    """The ring slot of the segment's phase ``sp``: ``sp % 2``.

    A partition's dependency count and earliest start are kept for two tasks only, its
    current one (the first it has not finished) and the next: no message or release can
    reach a task further on, since that needs a neighbour past the current task's phase,
    which needs this partition's halo from it. Ring slot ``sp % 2`` of partition ``p``'s
    record (``Clocks.part``, ``P_DEP`` and ``P_READY``) holds task ``(sp, p)``, set up when the
    same partition's task two phases earlier ends (:func:`reset_slot`): 12 bytes per
    partition for the run rather than per task, in the one cache line of its record.
    """
    return sp & 1


@njit(cache=True, inline="always")
def reset_slot(plan: Plan, clk: Clocks, sp: int, p: int) -> None:
    """Set up the ring slot of task ``(sp, p)``, ``sp >= 2``, as it waits at the start: for
    its partition's previous task, one message per halo edge and, on a step's first phase
    with a global operation, its node's release; earliest start the segment's start."""
    r = ring(sp)
    deps = clk.part_i[p, P_IN_DEG] + 1
    if plan.sync and sp % plan.phases == 0:
        deps += 1
    clk.part_i[p, P_DEP + r] = deps
    clk.part[p, P_READY + r] = plan.t0


@njit(cache=True, inline="always")
def meet_dependency(
    plan: Plan, qs: Queues, clk: Clocks, task: int, r: int, p: int, t: float
) -> None:
    """One dependency of ``task`` (of partition ``p``, ring slot ``r``) is met at ``t`` (s).

    With none left it joins its queue now, or gets a ``READY`` event at its earliest start.
    """
    clk.part_i[p, P_DEP + r] -= 1
    if clk.part_i[p, P_DEP + r] == 0:
        # What its start reads beyond the partition's record, wanted once it reaches its
        # queue's head.
        if plan.phases == 1:
            prefetch(plan.cost, plan.step0 * plan.n_parts + task)
        if clk.part[p, P_READY + r] > t:
            push_event(clk, clk.part[p, P_READY + r], task, READY, 0)
        else:
            enqueue(qs, task, clk.part_i[p, P_QUEUE])


@njit(cache=True, inline="always")
def start_task(plan: Plan, clk: Clocks, out: Out, task: int, core: int, t: float) -> None:
    """Start ``task`` on ``core`` at ``t`` (s): record it and schedule its ``TASK_END``.

    It lasts its compute time plus the task overhead, plus taking its incoming messages
    (unless it is the run's first phase) and packing its outgoing ones (unless the run's last).
    """
    p = task % plan.n_parts
    sp = task // plan.n_parts
    dur = plan.cost[plan.step0 + sp // plan.phases, p] * plan.inv_phases + plan.task_overhead
    if sp > 0 or plan.carry_in:
        dur += clk.part[p, P_IN_EXTRA]
    if sp + 1 < plan.n_sp or plan.carry_out:
        dur += clk.part[p, P_OUT_EXTRA]
    node = plan.core_node[core]
    advance(clk.nst, node, t)
    clk.nst[node, N_BUSY] += 1.0
    out.task_time[task, 0] = t
    out.task_time[task, 1] = t + dur
    k = task - out.core_lo
    if 0 <= k < out.task_core.shape[0]:
        out.task_core[k] = core
    push_event(clk, t + dur, task, TASK_END, core)


@njit(cache=True, inline="always")
def dispatch(plan: Plan, qs: Queues, clk: Clocks, out: Out, t: float) -> None:
    """At ``t`` (s), idle cores of every touched queue take their queue's head tasks."""
    for i in range(qs.n_touched[0]):
        q = qs.touched[i]
        while qs.q_len[q] > 0 and qs.fc_len[q] > 0:
            task, core = take(qs, q)
            start_task(plan, clk, out, task, core, t)
            if qs.q_len[q] > 0:
                _prefetch_start(plan, clk, out, qs.q_buf[qs.q_ptr[q] + qs.q_head[q]])
    qs.n_touched[0] = 0


@njit(cache=True, inline="always")
def _prefetch_start(plan: Plan, clk: Clocks, out: Out, task: int) -> None:
    """Ask for what :func:`start_task` of ``task`` (its queue's new head, next to start on
    one of the queue's cores) reads and writes."""
    prefetch(clk.part, (task % plan.n_parts) * PART_SLOTS)
    if plan.phases == 1:
        prefetch(plan.cost, plan.step0 * plan.n_parts + task)
    prefetch(out.task_time, 2 * task)


@njit(cache=True)
def record_message(out: Out, src: int, dst: int, step: int, t0: float, t1: float, nbytes: float):
    """Keep an inter-node message of the recorded window (while the buffers have room)."""
    r = out.rec_n[0]
    if r < out.rec_src.shape[0]:
        out.rec_src[r] = src
        out.rec_dst[r] = dst
        out.rec_step[r] = step
        out.rec_t0[r] = t0
        out.rec_t1[r] = t1
        out.rec_bytes[r] = nbytes
        out.rec_n[0] = r + 1


@njit(cache=True, inline="always")
def send_halo(
    net: Net, plan: Plan, qs: Queues, clk: Clocks, out: Out, p: int, node: int, e: int,
    base: int, r: int, step_g: int, t: float,
) -> None:  # fmt: skip
    """Partition ``p`` on ``node`` sends halo message ``e`` at ``t`` (s), in global step ``step_g``.

    It is for task ``base + receiver``, ring slot ``r`` of the receiver's record. A message to
    another node is transmitted now, counted in the step's bytes and in the receiving node's
    communication span, and its delivery becomes its task's earliest start if later; either
    way the task meets a dependency.
    """
    dp = plan.out_idx[e]
    dst_task = base + dp
    dn = clk.part_i[dp, P_NODE]
    if dn != node:
        # The receiver's clock row (two lines), bytes and NIC, wanted after the network walk.
        width = clk.nst.shape[1]
        prefetch(clk.nst, dn * width)
        prefetch(clk.nst, dn * width + width - 1)
        prefetch(out.bytes_recv, step_g * out.bytes_recv.shape[1] + dn)
        prefetch(net.recv_free, dn)
        b = plan.out_bytes[e]
        arrive = transmit(net, node, dn, b, t)
        out.bytes_sent[step_g, node] += b
        out.bytes_recv[step_g, dn] += b
        advance(clk.nst, dn, t)
        if arrive > t:
            join_span(clk.nst, dn, t, arrive)
        if arrive > clk.part[dp, P_READY + r]:
            clk.part[dp, P_READY + r] = arrive
        if out.rec_lo <= step_g < out.rec_hi:
            record_message(out, p, dp, step_g, t, arrive, b)
    meet_dependency(plan, qs, clk, dst_task, r, dp, t)


@njit(cache=True, inline="always")
def partition_done(
    net: Net, plan: Plan, qs: Queues, clk: Clocks, out: Out, p: int, node: int, nxt: int,
    r: int, step_g: int, t: float,
) -> None:  # fmt: skip
    """Partition ``p`` on ``node`` is done at ``t`` (s) with the phase before its task ``nxt``.

    Task ``nxt`` meets a dependency, then ``p``'s halo messages of that phase (of global step
    ``step_g``) leave for the tasks of ``nxt``'s phase, in ring slot ``r``.
    """
    lo, hi = clk.part_i[p, P_OUT_LO], clk.part_i[p, P_OUT_HI]
    base = nxt - p
    # Ask for every receiver's record first: the loop below walks them one message at a time.
    for e in range(lo, hi):
        prefetch(plan.out_bytes, e)
        prefetch(clk.part, plan.out_idx[e] * PART_SLOTS)
    meet_dependency(plan, qs, clk, nxt, r, p, t)
    clk.ctr[C_MSGS] += hi - lo
    for e in range(lo, hi):
        send_halo(net, plan, qs, clk, out, p, node, e, base, r, step_g, t)


@njit(cache=True)
def release_step(plan: Plan, qs: Queues, clk: Clocks, s_loc: int, t: float) -> None:
    """The collective after step ``s_loc - 1`` ended at ``t`` (s): release step ``s_loc``.

    Each node's release time (``clk.release``) is the earliest start of its partitions'
    first tasks of step ``s_loc``, and meets one of their dependencies.
    """
    base = s_loc * plan.phases * plan.n_parts
    r = ring(s_loc * plan.phases)
    for k in range(clk.release.shape[0]):
        rk = clk.release[k]
        for i in range(plan.node_part_ptr[k], plan.node_part_ptr[k + 1]):
            p = plan.node_parts[i]
            if rk > clk.part[p, P_READY + r]:
                clk.part[p, P_READY + r] = rk
            meet_dependency(plan, qs, clk, base + p, r, p, t)


@njit(cache=True)
def _max(a: np.ndarray) -> float:
    """``a.max()`` of a non-empty array, as a loop: numpy's allocates, the kernel may not."""
    m = a[0]
    for i in range(1, a.shape[0]):
        if a[i] > m:
            m = a[i]
    return m


@njit(cache=True)
def end_step(net: Net, plan: Plan, qs: Queues, clk: Clocks, out: Out, s_loc: int, t: float):
    """Step ``s_loc`` of the segment ran its last task at ``t`` (s).

    With a global operation, every node's release follows from the nodes' last task ends
    (:func:`grapeshot.sim.collectives.collective_release_into`); the time a node waits beyond the
    latest of them counts as its communication time.
    """
    out.step_task_end[s_loc] = t
    if not plan.sync:
        return
    last, release = clk.node_step_last, clk.release
    collective_release_into(
        last, plan.coll_alg, 0, plan.coll_bytes, plan.coll_overhead, net.net_i, net.net_f,
        release, clk.coll_f, clk.coll_i,
    )  # fmt: skip
    latest = _max(last)
    for k in range(release.shape[0]):
        if release[k] > latest:
            out.comm_time[k] += release[k] - latest
        last[k] = release[k]
        out.node_release[k] = release[k]
    out.step_release[s_loc] = _max(release)
    if s_loc + 1 < clk.step_rem.shape[0]:
        release_step(plan, qs, clk, s_loc + 1, t)


@njit(cache=True, inline="always")
def on_task_end(
    net: Net, plan: Plan, qs: Queues, clk: Clocks, out: Out, task: int, core: int, t: float
):
    """``TASK_END`` of ``task`` on ``core`` at ``t`` (s): free the core and count its step.

    Returns ``(p, node, nxt, r, step_g)`` for :func:`partition_done`: the task's partition
    and node, the partition's next task (-1 after the segment's last phase: the next segment's
    ``PART_START`` sends that halo), the ring slot of ``nxt``'s phase and the task's global
    step. The task's own ring slot is set up for the partition's task two phases on.
    """
    p = task % plan.n_parts
    sp = task // plan.n_parts
    if sp + 2 < plan.n_sp:
        reset_slot(plan, clk, sp + 2, p)
    node = plan.core_node[core]
    advance(clk.nst, node, t)
    clk.nst[node, N_BUSY] -= 1.0
    free_core(qs, clk.part_i[p, P_QUEUE], core)
    if t > clk.node_step_last[node]:
        clk.node_step_last[node] = t
    s_loc = sp // plan.phases
    clk.step_rem[s_loc] -= 1
    if clk.step_rem[s_loc] == 0:
        end_step(net, plan, qs, clk, out, s_loc, t)
    nxt = task + plan.n_parts if sp + 1 < plan.n_sp else -1
    return p, node, nxt, ring(sp + 1), plan.step0 + s_loc
