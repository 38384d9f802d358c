"""The event kernel: one segment of a program (between two rebalancing points) in numba.

Events live in one (radix) heap ordered by time, then push order: ties go to the event pushed
first, so the same inputs give the same schedule, bit for bit (:mod:`grapeshot.sim.event_heap`).
Each event kind is one function of :mod:`grapeshot.sim.events`; a task whose dependencies are
all met joins its ready queue (:mod:`grapeshot.sim.ready_queues`), and after every event the
idle cores of the queues it touched take their heads.

The kernel's state is five records (:mod:`grapeshot.sim.kernel_state`): the network, the
plan (program, layout and segment boundary), the queues, the clocks (heap, dependencies,
per-node accounting) and the records out.
"""

from __future__ import annotations

from numba import njit

from grapeshot.sim.event_heap import (
    PART_START,
    READY,
    TASK_END,
    peek_event,
    pop_event,
    push_event,
)
from grapeshot.sim.events import dispatch, on_task_end, partition_done
from grapeshot.sim.kernel_state import (
    C_EVENTS,
    P_DEP,
    P_NODE,
    P_OUT_LO,
    P_QUEUE,
    PART_SLOTS,
    Clocks,
    Net,
    Out,
    Plan,
    Queues,
)
from grapeshot.sim.node_clock import close_spans
from grapeshot.sim.prefetch import prefetch
from grapeshot.sim.ready_queues import append, enqueue, touch


@njit(cache=True)
def seed_segment(plan: Plan, qs: Queues, clk: Clocks) -> None:
    """Seed the segment with its partitions' arrivals after a rebalancing point, or first tasks.

    At the run's start, its first tasks are queued in partition order and every queue is
    marked for dispatch (in queue order, which fixes the order of the first starts).
    """
    if plan.carry_in:
        for p in range(plan.n_parts):
            push_event(clk, plan.ready_in[p], p, PART_START, 0)
        return
    for p in range(plan.n_parts):
        if clk.part_i[p, P_DEP] == 0:
            append(qs, p, clk.part_i[p, P_QUEUE])
    for q in range(qs.q_len.shape[0]):
        touch(qs, q)


@njit(cache=True, inline="always")
def _prefetch_next(plan: Plan, clk: Clocks) -> None:
    """Ask for the lines the next event (the heap's top now) will read first, while this one
    runs: its partition's record and, for a task that becomes ready (and most often starts at
    once), its cost."""
    kind, item = peek_event(clk)
    if kind == PART_START:
        return
    p = item % plan.n_parts
    prefetch(clk.part, p * PART_SLOTS)
    if kind == READY:
        step = plan.step0 + item // plan.n_parts // plan.phases
        prefetch(plan.cost, step * plan.n_parts + p)


@njit(cache=True, _nrt=False)
def run_segment(net: Net, plan: Plan, qs: Queues, clk: Clocks, out: Out, pops: int) -> bool:
    """Run the segment ``plan`` (steps ``plan.step0 ..`` ``+ plan.n_sp / plan.phases``), at
    most ``pops`` events of it; True when the segment is over.

    The first call follows :func:`seed_segment`; a call that stops before the segment's end
    leaves all its state in the records, and the next call goes on with the same events in
    the same order as one call would run (the driver stops it now and then to report
    progress on a long run). At the end ``clk.ctr[C_MSGS]`` is the number of halo messages
    the segment sent (on-node and inter-node).

    Updates ``net``'s NIC and link state, ``qs`` and ``clk`` in place and fills ``out``
    (task records, step ends and releases, bytes, communication integrals, the message
    window).
    """
    # After a stop no queue is touched, so the dispatch at t0 starts nothing: the first pop
    # sets the time.
    t = plan.t0
    while True:
        dispatch(plan, qs, clk, out, t)
        if clk.ctr[C_EVENTS] == 0:
            break
        if pops == 0:
            return False
        pops -= 1
        t, kind, item, core = pop_event(clk)
        if kind == TASK_END:  # its halo list, whose row the last event's prefetch brought
            e = clk.part_i[item % plan.n_parts, P_OUT_LO]
            prefetch(plan.out_idx, e)
            prefetch(plan.out_bytes, e)
        if clk.ctr[C_EVENTS] > 0:
            _prefetch_next(plan, clk)
        if kind == READY:
            enqueue(qs, item, clk.part_i[item % plan.n_parts, P_QUEUE])
            continue
        # A task end or a partition's arrival: the partition is done with a phase, so its
        # next task meets a dependency and its halo leaves (one call site: numba inlines it).
        if kind == TASK_END:
            p, node, nxt, r, step_g = on_task_end(net, plan, qs, clk, out, item, core, t)
            if nxt < 0:
                continue
        else:  # PART_START of partition ``item``, after the previous segment's last step
            p, node, nxt, r, step_g = item, clk.part_i[item, P_NODE], item, 0, plan.step0 - 1
        partition_done(net, plan, qs, clk, out, p, node, nxt, r, step_g, t)
    close_spans(clk.nst, t, out.comm_time, out.hidden_time)
    return True
