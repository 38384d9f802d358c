"""The event kernel's five records: the network, the plan, the queues, the clocks, the records out.

:func:`grapeshot.sim.kernel.run_segment` takes exactly these five named tuples. To numba a
named tuple of scalars and arrays is a value: its scalars are constants of the compiled loop
and its arrays are read or written in place. Why named tuples (measured on ``bench_sim``-sized
runs, ``docs/simulator.md``): a ``jitclass`` cannot be cached (``cache=True``), and with
numba's memory manager on, every record handed to an inlined function reference-counts each
of its arrays (16 times slower than the former 54-argument kernel). So the kernel is compiled
without it (``_nrt=False``) and allocates nothing: the builders below, run in Python once per
segment (the whole run, or the steps between two rebalancing points), allocate and initialise
everything it reads.

Times are seconds, sizes bytes; ``P`` is the number of partitions, ``n`` the number of nodes,
``Q`` the number of ready queues and ``T = n_sp * P`` the tasks of the segment (``n_sp`` steps
times phases).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from grapeshot.model.errors import InputError
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
    NetworkModel,
    NetworkState,
)
from grapeshot.sim.program import Layout, SimOptions, TaskGraph

# Columns of the per-node accounting array ``Clocks.nst`` (one row per node): the node's clock,
# busy cores now, their integral over time, whether a communication span is open, its start
# and end, the busy integral at its start, the closed spans' total length and the busy
# core-seconds per core within them, and the node's cores.
N_LAST, N_BUSY, N_BINT, N_CON, N_C0, N_C1, N_CB0, N_COMM, N_HID, N_CORES = range(10)
_N_COLUMNS = 10

# Entries of the counter vector ``Clocks.ctr``: events in the heap, messages sent so far, and
# the event heap's own (:mod:`grapeshot.sim.event_heap`): the key of the last time popped, the
# set of its non-empty buckets (bit ``b`` for bucket ``b``) and the first free block.
C_EVENTS, C_MSGS, C_LAST, C_MASK, C_FREE = range(5)

# The partition record ``Clocks.part`` (float64, ``(P, 8)``) and its int32 view ``Clocks.part_i``
# (``(P, 16)``): one 64-byte line per partition holding everything an event reads of it, so a
# halo message costs its receiver one cache line rather than four (node, queue, dependency
# count and earliest start were four arrays). Float64 slots: the earliest start of the two
# tasks of the partition's ring (``P_READY + ring``, :func:`grapeshot.sim.events.ring`) and
# the seconds a task adds to take and to pack its messages. Int32 slots: those two tasks'
# remaining dependencies (``P_DEP + ring``), the node, the ready queue, the partition's halo
# messages ``out_idx[P_OUT_LO : P_OUT_HI]`` and the messages it receives per phase.
P_READY, P_IN_EXTRA, P_OUT_EXTRA = 0, 2, 3
P_DEP, P_NODE, P_QUEUE, P_OUT_LO, P_OUT_HI, P_IN_DEG = 8, 10, 11, 12, 13, 14
PART_SLOTS = 8
_LINE = 64

# The event heap's layout (:mod:`grapeshot.sim.event_heap`): int64 slots per entry (the
# time's bits, the payload, a task end's core), entries per block of a bucket's list, and the
# buckets, one per bit length of ``key ^ last`` (0 to 63). Columns of the bucket table
# ``Clocks.buckets`` (a 64-byte row per bucket): its first and last block (-1: empty), the
# entries in its last block, those already popped from its first (bucket 0 only), its least
# key and the entry holding it (the first pushed of that key).
HEAP_SLOTS = 3
HEAP_BLOCK = 64
HEAP_BUCKETS = 64
B_HEAD, B_TAIL, B_FILL, B_POS, B_MIN, B_AT = range(6)
_B_COLUMNS = 8


class Net(NamedTuple):
    """The machine's network: its parameters as scalars and its NICs' and links' state.

    The scalars are :attr:`NetworkModel.net_i` and ``net_f`` unpacked once, so the message
    path reads constants; ``net_i`` and ``net_f`` themselves are kept for the collectives.
    """

    kind: int  #: FLAT, FAT_TREE or TORUS3D (:mod:`grapeshot.sim.network`)
    nodes: int
    arity: int  #: fat tree: ports per switch
    levels: int  #: fat tree: switch levels
    parents: int  #: fat tree: up-links per switch
    nx: int  #: torus: routers along x
    ny: int
    nz: int
    npr: int  #: torus: nodes per router
    contention: bool  #: a receiver takes one whole message at a time (CM-5)
    bandwidth: float  #: NIC bandwidth, bytes/s
    latency: float  #: seconds
    hop_latency: float  #: seconds per hop beyond the nearest pair
    wx: float  #: torus: link bandwidth over the NIC's, per axis
    wy: float
    wz: float
    net_i: np.ndarray  #: int64, (11,)
    net_f: np.ndarray  #: float64, (6,)
    send_free: np.ndarray  #: float64, (n,): when each NIC may send next, s (updated in place)
    recv_free: np.ndarray  #: float64, (n,): when each NIC may receive next, s (in place)
    link_free: np.ndarray  #: float64, (links,): when each link is free, s (in place)
    route: np.ndarray  #: int64, (max route,): scratch for one message's link ids


class Plan(NamedTuple):
    """What the segment runs and where: the program, its layout, the overheads, the boundary.

    Read only in the kernel.
    """

    n_parts: int  #: P
    n_sp: int  #: steps times phases in the segment
    phases: int
    step0: int  #: the segment's first step (global)
    inv_phases: float  #: 1 / phases
    cost: np.ndarray  #: float64, (steps, P): a step's compute seconds per partition
    out_idx: np.ndarray  #: int64, (E,): halo CSR: the receivers of each partition's messages
    #: (its row is in the partition record, ``P_OUT_LO``, ``P_OUT_HI``)
    out_bytes: np.ndarray  #: float64, (E,): their sizes, bytes
    core_node: np.ndarray  #: int64, (cores,): each core's node
    node_part_ptr: np.ndarray  #: int64, (n + 1,): partitions of each node (CSR)
    node_parts: np.ndarray  #: int64, (P,)
    task_overhead: float  #: seconds per task
    carry_in: bool  #: the segment starts at a rebalancing point
    ready_in: np.ndarray  #: float64, (P,) if carry_in: when each partition is ready there
    carry_out: bool  #: another segment follows (its first tasks take this one's messages)
    t0: float  #: the segment's start time, s
    sync: bool  #: a global operation ends every step
    coll_alg: int  #: its algorithm (:mod:`grapeshot.sim.collectives`)
    coll_bytes: float  #: its payload, bytes
    coll_overhead: float  #: seconds of software per collective message


class Queues(NamedTuple):
    """The ready queues (first in, first out ring buffers) and the free cores serving them."""

    q_ptr: np.ndarray  #: int64, (Q + 1,): each queue's slots in ``q_buf``
    q_buf: np.ndarray  #: int64, (P,): queued task ids
    q_head: np.ndarray  #: int64, (Q,)
    q_len: np.ndarray  #: int64, (Q,)
    fc_ptr: np.ndarray  #: int64, (Q + 1,): each queue's cores in ``fc_buf``
    fc_buf: np.ndarray  #: int64, (cores,): free cores, a stack per queue
    fc_len: np.ndarray  #: int64, (Q,)
    touched: np.ndarray  #: int64: queues the current event touched (dispatch looks at these)
    n_touched: np.ndarray  #: int64, (1,)


class Clocks(NamedTuple):
    """Time in the kernel: the event heap, what each task waits for, and each node's clock."""

    heap: np.ndarray  #: int64, (blocks * HEAP_BLOCK * HEAP_SLOTS,), 64-byte aligned: the
    #: event heap's entries, in blocks (:mod:`grapeshot.sim.event_heap`)
    buckets: np.ndarray  #: int64, (HEAP_BUCKETS, 8): its bucket table, columns ``B_*``
    links: np.ndarray  #: int64, (blocks,): the next block of each block's list (or free list)
    ctr: np.ndarray  #: int64, (5,): ``C_EVENTS``, ``C_MSGS``, ``C_LAST``, ``C_MASK``, ``C_FREE``
    part: np.ndarray  #: float64, (P, 8), 64-byte aligned: the partition records, ``P_*``
    part_i: np.ndarray  #: int32, (P, 16): the same memory, for the records' integer slots
    nst: np.ndarray  #: float64, (n, 10): per-node accounting, columns ``N_*``
    step_rem: np.ndarray  #: int64, (steps,): tasks each step still runs
    node_step_last: np.ndarray  #: float64, (n,): each node's last task end this step, s
    release: np.ndarray  #: float64, (n,): scratch for a collective's release times, s
    coll_f: np.ndarray  #: float64, (2, n): scratch for the collective
    coll_i: np.ndarray  #: int64, (2, n): scratch for the collective


class Out(NamedTuple):
    """What the kernel writes: task records, step ends, traffic, the message window."""

    task_time: np.ndarray  #: float64, (T, 2): each task's start and end, s (one write per
    #: task touches one cache line rather than two)
    #: int32: the global core of tasks ``core_lo ..`` (the timeline window's only: no other
    #: task's core is read after the run, and writing them cost a line per task)
    task_core: np.ndarray
    core_lo: int  #: the task (of the segment's numbering) of ``task_core[0]``
    step_task_end: np.ndarray  #: float64, (steps,): each step's last task end, s
    step_release: np.ndarray  #: float64, (steps,): each step's last release, s
    node_release: np.ndarray  #: float64, (n,): the last release of each node, s
    bytes_sent: np.ndarray  #: float64, (all steps, n), bytes (added to)
    bytes_recv: np.ndarray  #: float64, (all steps, n), bytes (added to)
    comm_time: np.ndarray  #: float64, (n,): time with messages in flight towards, s (added to)
    hidden_time: np.ndarray  #: float64, (n,): of which computing, core-weighted, s (added to)
    rec_lo: int  #: first step whose inter-node messages are recorded
    rec_hi: int  #: one past the last
    rec_src: np.ndarray  #: int64, (cap,): sending partition
    rec_dst: np.ndarray  #: int64, (cap,): receiving partition
    rec_step: np.ndarray  #: int64, (cap,)
    rec_t0: np.ndarray  #: float64, (cap,): sent, s
    rec_t1: np.ndarray  #: float64, (cap,): delivered, s
    rec_bytes: np.ndarray  #: float64, (cap,)
    rec_n: np.ndarray  #: int64, (1,): messages recorded


def net_record(network: NetworkModel, state: NetworkState) -> Net:
    """The :class:`Net` of ``network`` with NIC and link state ``state`` (shared, not copied)."""
    ni, nf = network.net_i, network.net_f
    return Net(
        kind=int(ni[I_KIND]),
        nodes=int(ni[I_NODES]),
        arity=int(ni[I_ARITY]),
        levels=int(ni[I_LEVELS]),
        parents=int(ni[I_PARENTS]),
        nx=int(ni[I_X]),
        ny=int(ni[I_Y]),
        nz=int(ni[I_Z]),
        npr=int(ni[I_NPR]),
        contention=bool(ni[I_CONTENTION] != 0),
        bandwidth=float(nf[F_BANDWIDTH]),
        latency=float(nf[F_LATENCY]),
        hop_latency=float(nf[F_HOP]),
        wx=float(nf[F_WX]),
        wy=float(nf[F_WY]),
        wz=float(nf[F_WZ]),
        net_i=ni,
        net_f=nf,
        send_free=state.send_free,
        recv_free=state.recv_free,
        link_free=state.link_free,
        route=np.empty(max(int(ni[I_MAXROUTE]), 1), dtype=np.int64),
    )


def segment_plan(
    program: TaskGraph,
    layout: Layout,
    options: SimOptions,
    steps: tuple[int, int],
    ready_in: np.ndarray | None,
    t0: float,
) -> Plan:
    """The :class:`Plan` of steps ``steps = (a, b)`` (``a`` included, ``b`` not) of ``program``.

    ``ready_in`` (float64, ``(P,)``, s) is when each partition is ready on its node after a
    rebalancing point at step ``a``, or ``None`` at the run's start; the segment starts at
    ``t0`` (s).
    """
    a, b = steps
    phases = program.phases
    return Plan(
        n_parts=program.n_parts,
        n_sp=(b - a) * phases,
        phases=phases,
        step0=a,
        inv_phases=1.0 / phases,
        cost=program.cost,
        out_idx=program.out_idx,
        out_bytes=program.out_bytes,
        core_node=layout.core_node,
        node_part_ptr=layout.node_part_ptr,
        node_parts=layout.node_parts,
        task_overhead=options.overheads.task,
        carry_in=ready_in is not None,
        ready_in=ready_in if ready_in is not None else np.zeros(1),
        carry_out=b < program.n_steps,
        t0=t0,
        sync=options.sync != "none",
        coll_alg={"linear": 0, "binomial": 1}[options.collective],
        coll_bytes=float(options.reduce_bytes if options.sync == "allreduce" else 0),
        coll_overhead=options.overheads.message,
    )


def new_out(program: TaskGraph, n_nodes: int, window: tuple[int, int]) -> Out:
    """Zeroed records of a whole run; ``window = (lo, hi)``: the steps whose task cores and
    messages to keep."""
    n_tasks, n_steps = program.n_tasks, program.n_steps
    lo, hi = window
    cap = (hi - lo) * program.phases * len(program.out_idx) if hi > lo else 0
    per_step = program.phases * program.n_parts
    return Out(
        task_time=np.empty((n_tasks, 2)),
        task_core=np.empty(max(hi - lo, 0) * per_step, dtype=np.int32),
        core_lo=lo * per_step,
        step_task_end=np.zeros(n_steps),
        step_release=np.zeros(n_steps),
        node_release=np.zeros(n_nodes),
        bytes_sent=np.zeros((max(n_steps, 1), n_nodes)),
        bytes_recv=np.zeros((max(n_steps, 1), n_nodes)),
        comm_time=np.zeros(n_nodes),
        hidden_time=np.zeros(n_nodes),
        rec_lo=lo,
        rec_hi=hi,
        rec_src=np.empty(cap, dtype=np.int64),
        rec_dst=np.empty(cap, dtype=np.int64),
        rec_step=np.empty(cap, dtype=np.int64),
        rec_t0=np.empty(cap),
        rec_t1=np.empty(cap),
        rec_bytes=np.empty(cap),
        rec_n=np.zeros(1, dtype=np.int64),
    )


def segment_out(out: Out, program: TaskGraph, steps: tuple[int, int]) -> Out:
    """``out`` seen from the segment of steps ``steps = (a, b)``: its tasks and steps (views)."""
    a, b = steps
    per_step = program.phases * program.n_parts
    tasks = slice(a * per_step, b * per_step)
    return out._replace(
        task_time=out.task_time[tasks],
        core_lo=out.core_lo - tasks.start,
        step_task_end=out.step_task_end[a:b],
        step_release=out.step_release[a:b],
    )


def new_queues(layout: Layout, program: TaskGraph) -> Queues:
    """Empty ready queues, every core free."""
    n_parts = program.n_parts
    n_queues = layout.q_ptr.shape[0] - 1
    max_out = int(np.diff(program.out_ptr).max()) if n_parts else 0
    return Queues(
        q_ptr=layout.q_ptr,
        q_buf=np.empty(max(n_parts, 1), dtype=np.int64),
        q_head=np.zeros(n_queues, dtype=np.int64),
        q_len=np.zeros(n_queues, dtype=np.int64),
        fc_ptr=layout.fc_ptr,
        fc_buf=layout.fc_init.copy(),
        fc_len=np.diff(layout.fc_ptr).astype(np.int64),
        # One event touches its own queue and those of the tasks it releases: at most the
        # step's partitions (a collective) plus one message per halo edge.
        touched=np.empty(max(n_queues, n_parts + max_out + 8), dtype=np.int64),
        n_touched=np.zeros(1, dtype=np.int64),
    )


def _line_aligned(n: int) -> np.ndarray:
    """An uninitialised float64 array of ``n`` elements that starts on a cache line.

    numpy's large arrays start 16 bytes into a page (the allocator's header), so a record of
    a line would straddle two, and a block of the event heap (24 lines) a line more.
    """
    buf = np.empty(n + _LINE // 8)
    skip = (-buf.ctypes.data % _LINE) // 8
    return buf[skip : skip + n]


def _part_records(n_parts: int) -> tuple[np.ndarray, np.ndarray]:
    """Uninitialised partition records: float64 ``(P, 8)``, one cache line each, and its int32
    view ``(P, 16)``."""
    part = _line_aligned(PART_SLOTS * n_parts).reshape(n_parts, PART_SLOTS)
    return part, part.view(np.int32)


@njit(cache=True)
def _fill_parts(
    part, part_i, t0, in_extra, out_extra, carry_in, sync_dep, node_of, queue_of, out_ptr, in_deg
):
    """Write every partition's record (see :func:`new_clocks`) in one pass, a cache line
    each, rather than ten strided column writes over the whole ``(P, 8)`` array."""
    for p in range(part.shape[0]):
        part[p, P_READY] = t0
        part[p, P_READY + 1] = t0
        part[p, P_IN_EXTRA] = in_extra[p]
        part[p, P_OUT_EXTRA] = out_extra[p]
        part_i[p, P_DEP] = in_deg[p] + 1 if carry_in else 0
        part_i[p, P_DEP + 1] = in_deg[p] + 1 + sync_dep
        part_i[p, P_NODE] = node_of[p]
        part_i[p, P_QUEUE] = queue_of[p]
        part_i[p, P_OUT_LO] = out_ptr[p]
        part_i[p, P_OUT_HI] = out_ptr[p + 1]
        part_i[p, P_IN_DEG] = in_deg[p]


def new_heap(cap: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An empty event heap for up to ``cap`` events: ``(heap, buckets, links)`` of
    :class:`Clocks`, to go with a zeroed ``ctr`` (no events, last key 0, block 0 free first).

    Its blocks are allocated here, since the kernel cannot: every bucket holds at most one
    block that is not full, the bucket being emptied one more and bucket 0 a first block
    partly popped, so ``cap / HEAP_BLOCK`` blocks plus two per bucket always suffice. Free
    blocks are a stack, so the block freed last, still in cache, is the next one filled.
    """
    blocks = cap // HEAP_BLOCK + 2 * HEAP_BUCKETS + 2
    heap = _line_aligned(HEAP_SLOTS * HEAP_BLOCK * blocks).view(np.int64)
    buckets = np.full((HEAP_BUCKETS, _B_COLUMNS), -1, dtype=np.int64)
    links = np.arange(1, blocks + 1, dtype=np.int64)
    links[-1] = -1
    return heap, buckets, links


def new_clocks(
    plan: Plan, program: TaskGraph, layout: Layout, n_cores: int, node_cores: np.ndarray
) -> Clocks:
    """The clocks at the segment's start ``plan.t0``.

    Parameters
    ----------
    plan
        The segment.
    program, layout
        What it runs and where: the partition records are written from their halo CSR,
        message counts, nodes, queues and message costs.
    n_cores
        Cores of the machine (the heap holds at most one task end per core).
    node_cores
        float64, ``(n,)``: cores per node.
    """
    n_parts, phases = plan.n_parts, plan.phases
    if program.out_ptr[-1] >= 2**31:
        raise InputError("halo graph", f"has {program.out_ptr[-1]} messages", "fewer than 2**31")
    part, part_i = _part_records(n_parts)
    # A task waits for its partition's previous task and one message per halo edge; the
    # first phase of a step also for its node's release with a global operation. The first
    # tasks of the run wait for nothing; those after a rebalancing point for their
    # partition's arrival (a PART_START) and its neighbours' messages.
    # Only the first two phases' tasks: the kernel sets up each later one in its ring slot
    # when the partition's task two phases before it ends (events.reset_slot).
    _fill_parts(
        part,
        part_i,
        plan.t0,
        layout.in_extra,
        layout.out_extra,
        bool(plan.carry_in),
        1 if plan.sync and phases == 1 else 0,
        layout.node_of,
        layout.queue_of,
        program.out_ptr,
        program.in_deg,
    )
    n = node_cores.shape[0]
    nst = np.zeros((n, _N_COLUMNS))
    nst[:, N_LAST] = plan.t0
    nst[:, N_CORES] = node_cores
    # At most one TASK_END per core and one READY or PART_START per partition (a partition
    # has one current task) are ever in the heap.
    heap, buckets, links = new_heap(2 * n_parts + n_cores + 16)
    return Clocks(
        heap=heap,
        buckets=buckets,
        links=links,
        ctr=np.zeros(5, dtype=np.int64),
        part=part,
        part_i=part_i,
        nst=nst,
        step_rem=np.full(plan.n_sp // phases, n_parts * phases, dtype=np.int64),
        node_step_last=np.full(n, plan.t0),
        release=np.empty(n),
        coll_f=np.empty((2, n)),
        coll_i=np.empty((2, n), dtype=np.int64),
    )
