"""Predict an exchange's time on a modelled machine, through :mod:`grapeshot.sim.network`.

Each message goes through :meth:`NetworkModel.transmit` (NIC serialisation, shared links on
fat trees and tori, one message at a time per receiver under ``node_contention``), called in
the order the messages become ready, so every resource is served first come, first served;
except that under ``node_contention`` the post-everything algorithms go through the packet
interleaving model below instead (a receiver shares itself among the messages reaching it).
What decides when a message becomes ready is the algorithm:

``ac``        Each sender sends its messages back to back in its random order, all at time 0
              onwards; a sender waits for its NIC. Under node contention (the CM-5) the
              messages that reach one receiver at once are not served one after the other:
              their packets interleave (:func:`_interleave`), each message progressing at its
              share of the receiver, and a sender is blocked until the last packet of its
              message is accepted (section 2.2 of Wang, Lin & Ranka: a message that cannot be
              injected blocks its sender; table 2: the senders to one receiver all finish
              near the end, not one message time apart).
``lp``, ``rsn``, ``rsnh``
              Loosely synchronous phases: a transfer of phase ``p`` starts once its sender and
              its receiver have both finished their phase ``p - 1`` transfers.
``drsn``      Each sender inquires (test-and-set) at its next pending receiver; the inquiry
              reaches it ``tas_latency`` later. A free receiver is reserved, the answer
              returns, the message follows and a reset reaches the receiver ``tas_latency``
              after delivery; a busy one answers "busy" (and its reception is delayed by
              ``am_cost``, the handler's time) and the sender tries its next pending
              receiver; after a full round of refusals it backs off (doubling, from one round
              trip). ``tries`` counts the inquiries.
``nbx``       The messages of AC, then the acknowledgement of the last synchronous send's
              match and one nonblocking barrier (a dissemination barrier): ``1 + ceil(log2
              n)`` small messages one after the other, each costing the latency and ``o`` at
              both ends.
``alltoallv`` MPICH's ``scattered`` algorithm (AC with every rank starting at a different peer,
              ``rank + 1, rank + 2, ...``), one round, between packing the messages into one
              send buffer and unpacking the receive buffer (``memcpy_bandwidth``; the call
              starts once the rank with the most bytes has packed).
``neighbor``  Post-everything over the graph neighbours (MPICH and Open MPI): AC in rank order,
              packed and unpacked as ``alltoallv``.

The post-everything algorithms (``ac``, ``nbx``, ``alltoallv``, ``neighbor``) go through the
interleaving model under node contention; the phased ones and ``drsn`` never have two messages
at one receiver at once, so for them the two models agree.

A rank's CPU time per message is LogP's ``o`` (``overhead``, default 0): posting a receive
or a send and completing a received message each take ``o`` of the rank's CPU, one after
the other: a rank posts its receives, then its sends (each send leaves once posted and its
NIC is free), and completes what arrives in arrival order. Under node contention ``o`` is
added to each message's time at its receiver instead. The schedule's own computation is
not modelled: the scheduling cost is reported separately by :mod:`grapeshot.exchange.plan`.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from grapeshot.exchange.pattern import Pattern
from grapeshot.exchange.schedules import ALGORITHMS, TABLE_ALGORITHMS, Schedule, make_schedule
from grapeshot.model.machine import Machine
from grapeshot.model.seed import SeedLike, as_generator
from grapeshot.model.topology import fat_tree_level
from grapeshot.sim.network import (
    F_BANDWIDTH,
    FAT_TREE,
    I_ARITY,
    I_CONTENTION,
    I_KIND,
    I_LEVELS,
    I_PARENTS,
    NetworkModel,
    network_model,
)


@njit(cache=True)
def _port_shares(
    r: int,
    snd: np.ndarray,
    m: int,
    tree: bool,
    arity: int,
    levels: int,
    parents: int,
    out: np.ndarray,
) -> None:
    """Shares of receiver ``r``'s capacity for its ``m`` active senders ``snd[:m]``.

    Without a tree (``tree`` False) every active message gets ``1 / m``. On a fat tree each
    switch serves its active input ports round-robin, one packet each: on the way down to
    ``r``, the switch of level ``lv`` splits what it passes on among the child subtrees whose
    senders meet ``r`` there and, if any sender is farther, its ``parents`` up-link ports
    (the farther senders' packets come down all of them: the route up picks one at random);
    on the way up from a sender, every switch below the meeting point splits its output
    among its active children. A sender's share is the product of its ports' fractions (the
    shares sum to 1), written to ``out[:m]``. This is why, in table 2 at ``d = 31``, the
    three senders in the receiver's own 4-node cluster finish first (the paper's footnote
    1): on the CM-5 (4 children, 2 parents) each is one of the five busy ports of the
    receiver's switch, while the 28 others share the two parent ports.
    """
    if m == 0:
        return
    if not tree:
        for k in range(m):
            out[k] = 1.0 / m
        return
    # The level of the switch where each sender meets r.
    lca = np.empty(m, np.int64)
    for k in range(m):
        lca[k] = fat_tree_level(arity, levels, snd[k], r)
    for k in range(m):
        s = snd[k]
        h = lca[k]
        share = 1.0
        # Down path: the switches of levels 1 .. h above r.
        sub = 1
        for lv in range(1, h + 1):
            # Ports: distinct level-(lv - 1) subtrees meeting r here, + the parents if needed.
            ports = 0
            beyond = 0
            for q in range(m):
                if lca[q] == lv:
                    g = snd[q] // sub
                    first = True
                    for p in range(q):
                        if lca[p] == lv and snd[p] // sub == g:
                            first = False
                            break
                    if first:
                        ports += 1
                elif lca[q] > lv:
                    beyond = parents
            # A farther sender comes down one of the switch's parent ports (the route up picks
            # one at random), so it is in every parent port's turn with the share of all of
            # them together.
            if lca[k] > lv:
                share *= beyond
            share /= ports + beyond
            sub *= arity
        # Up path: the switches of levels 1 .. h - 1 above s merge their active children.
        sub = 1
        for _ in range(1, h):
            span = sub * arity
            ports = 0
            for q in range(m):
                if snd[q] // span == s // span:
                    g = snd[q] // sub
                    first = True
                    for p in range(q):
                        if snd[p] // span == s // span and snd[p] // sub == g:
                            first = False
                            break
                    if first:
                        ports += 1
            share /= ports
            sub = span
        out[k] = share


@njit(cache=True)
def _interleave(
    n: int,
    ptr: np.ndarray,
    dst: np.ndarray,
    work: np.ndarray,
    tree: bool,
    arity: int,
    levels: int,
    parents: int,
) -> np.ndarray:
    """Fluid model of packet interleaving; returns each message's delivery time.

    Sender ``s`` sends messages ``ptr[s] .. ptr[s + 1] - 1`` (receivers ``dst``) one after
    the other, the next as soon as the last packet of the current one is accepted. Message
    ``k`` needs ``work[k]`` seconds of its receiver (its whole time alone on the network); a
    receiver's capacity is split among the messages arriving at it at once
    (:func:`_port_shares`), so each progresses at its share. Rates change only when a
    message starts or ends: between such events every rate is constant and time jumps to the
    next end.
    """
    ends = np.zeros(dst.shape[0])
    cur = ptr[:-1].copy()
    rem = np.zeros(n)
    rate = np.zeros(n)
    active = np.zeros(n, dtype=np.bool_)
    dirty = np.zeros(n, dtype=np.bool_)
    for s in range(n):
        if ptr[s] < ptr[s + 1]:
            active[s] = True
            rem[s] = work[ptr[s]]
            dirty[dst[ptr[s]]] = True
    snd = np.empty(n, dtype=np.int64)
    share = np.empty(n)
    t = 0.0
    while True:
        for r in range(n):
            if dirty[r]:
                m = 0
                for s in range(n):
                    if active[s] and dst[cur[s]] == r:
                        snd[m] = s
                        m += 1
                _port_shares(r, snd, m, tree, arity, levels, parents, share)
                for k in range(m):
                    rate[snd[k]] = share[k]
                dirty[r] = False
        step = np.inf
        first = -1
        for s in range(n):
            if active[s] and rem[s] / rate[s] < step:
                step = rem[s] / rate[s]
                first = s
        if first < 0:
            break
        t += step
        for s in range(n):
            if not active[s]:
                continue
            rem[s] -= rate[s] * step
            # Ends within rounding of the first one are simultaneous.
            if s == first or rem[s] <= 1e-12 * work[cur[s]]:
                ends[cur[s]] = t
                dirty[dst[cur[s]]] = True
                cur[s] += 1
                if cur[s] < ptr[s + 1]:
                    rem[s] = work[cur[s]]
                    dirty[dst[cur[s]]] = True
                else:
                    active[s] = False
    return ends


@dataclass(frozen=True)
class SimulatedExchange:
    """Predicted outcome of one exchange.

    Attributes
    ----------
    algorithm
        Its name.
    seconds
        Time until the last byte is delivered (and, for ``nbx``, the barrier is done).
    phases
        Phases of the schedule table (0 for the table-less algorithms).
    tries
        Test-and-set inquiries (``drsn``), else 0.
    finish
        ``(n,)`` seconds: when each rank is done sending and receiving.
    """

    algorithm: str
    seconds: float
    phases: int
    tries: int
    finish: np.ndarray


def _model(machine: Machine | NetworkModel, n: int) -> NetworkModel:
    if isinstance(machine, NetworkModel):
        net = machine
    else:
        net = network_model(machine if machine.nodes == n else machine.with_nodes(n))
    if net.machine.nodes != n:
        raise ValueError(f"the network has {net.machine.nodes} nodes, the pattern {n} ranks")
    return net


def _complete(deliveries: list[tuple[float, int]], o: float, out: np.ndarray) -> None:
    """Raise ``out[rank]`` to when each rank has completed its ``(delivery, rank)`` messages,
    ``o`` seconds of its CPU each, one after the other in arrival order."""
    cpu: dict[int, float] = {}
    for t, r in sorted(deliveries):
        done = max(t, cpu.get(r, 0.0)) + o
        cpu[r] = done
        out[r] = max(out[r], done)


def _phased(net: NetworkModel, schedule: Schedule, o: float = 0.0) -> tuple[float, np.ndarray]:
    state = net.new_state()
    ready = np.zeros(schedule.n)
    ph, src, dst, nb = schedule.phase, schedule.src, schedule.dst, schedule.nbytes
    bounds = np.searchsorted(ph, np.arange(schedule.n_phases + 1))
    for p in range(schedule.n_phases):
        lo, hi = bounds[p], bounds[p + 1]
        if lo == hi:
            continue
        s, d, b = src[lo:hi], dst[lo:hi], nb[lo:hi]
        # Each rank posts the phase's receives, then its sends, o each (a phase's transfers
        # are sorted by sender, so a send's place among its sender's is its offset from the
        # sender's first).
        posts = np.bincount(d, minlength=schedule.n) * o
        nth = np.arange(len(s)) - np.searchsorted(s, s) + 1
        start = np.maximum(ready[s] + posts[s] + nth * o, ready[d] + posts[d])
        new = ready.copy()
        arrivals = []
        for k in np.argsort(start, kind="stable"):
            end = net.transmit(state, int(s[k]), int(d[k]), float(b[k]), float(start[k]))
            # The sender is free when its NIC is; the receiver once the message is in.
            new[s[k]] = max(new[s[k]], state.send_free[s[k]])
            arrivals.append((end, int(d[k])))
        _complete(arrivals, o, new)
        ready = new
    return float(ready.max(initial=0.0)), ready


def _interleaved(net: NetworkModel, n: int, orders: list[list[tuple[int, int]]], o: float = 0.0):
    """:func:`_back_to_back` under node contention: packets of concurrent messages interleave
    at their receiver, and a sender is blocked until the last packet of its message is in.

    A message needs ``latency + bytes / bandwidth`` of its receiver, the latency included:
    table 2's receiver time grows by at least the whole ``d = 1`` time (0.52 ms for 4 KiB)
    per added sender, so on the CM-5 the per-message cost occupies the receiver rather than
    overlapping with other messages. Returns ``(last delivery, (n,) finish per rank,
    (m,) delivery of each message in the orders' sequence)``, seconds.
    """
    counts = np.fromiter((len(o) for o in orders), dtype=np.int64, count=n)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    src = np.repeat(np.arange(n, dtype=np.int64), counts)
    flat = [x for o in orders for x in o]
    dst = np.fromiter((x[0] for x in flat), dtype=np.int64, count=len(flat))
    nbytes = np.fromiter((x[1] for x in flat), dtype=np.float64, count=len(flat))
    # A message's time alone on the network (latency + bytes / bandwidth, as transmit()).
    work = net.latency(src, dst) + nbytes / float(net.net_f[F_BANDWIDTH]) + o
    ni = net.net_i
    tree = int(ni[I_KIND]) == FAT_TREE
    arity, levels, parents = (
        (int(ni[I_ARITY]), int(ni[I_LEVELS]), int(ni[I_PARENTS])) if tree else (n, 1, 1)
    )
    ends = _interleave(n, ptr, dst, work, tree, arity, levels, parents)
    finish = np.zeros(n)
    np.maximum.at(finish, dst, ends)
    np.maximum.at(finish, src, ends)
    return float(finish.max(initial=0.0)), finish, ends


def _back_to_back(net: NetworkModel, n: int, orders: list[list[tuple[int, int]]], o: float = 0.0):
    """Each sender sends its ``(dst, bytes)`` list in order, the next when its NIC frees (and,
    with a per-message CPU cost ``o``, once posted, after its receives are posted)."""
    if int(net.net_i[I_CONTENTION]):
        total, finish, _ = _interleaved(net, n, orders, o)
        return total, finish
    state = net.new_state()
    finish = np.zeros(n)
    receives = np.bincount([dst for sends in orders for dst, _b in sends], minlength=n)
    posted = receives * o  # when each rank's CPU has posted everything so far
    heap = [(0.0, i, 0) for i in range(n) if orders[i]]
    heapq.heapify(heap)
    arrivals = []
    while heap:
        t, i, k = heapq.heappop(heap)
        dst, b = orders[i][k]
        posted[i] += o
        end = net.transmit(state, i, dst, float(b), max(t, float(posted[i])))
        arrivals.append((end, dst))
        finish[i] = max(finish[i], float(state.send_free[i]))
        if k + 1 < len(orders[i]):
            heapq.heappush(heap, (float(state.send_free[i]), i, k + 1))
    _complete(arrivals, o, finish)
    return float(finish.max(initial=0.0)), finish


def _orders_from_schedule(schedule: Schedule) -> list[list[tuple[int, int]]]:
    orders: list[list[tuple[int, int]]] = [[] for _ in range(schedule.n)]
    for s, d, b in zip(
        schedule.src.tolist(), schedule.dst.tolist(), schedule.nbytes.tolist(), strict=True
    ):
        orders[s].append((d, b))
    return orders


def _drsn(
    net: NetworkModel,
    com: np.ndarray,
    rng: np.random.Generator,
    tas_latency: float,
    am_cost: float,
    o: float = 0.0,
):
    n = com.shape[0]
    state = net.new_state()
    busy_until = np.zeros(n)
    finish = np.zeros(n)
    pending = [list(rng.permutation(np.flatnonzero(com[i]))) for i in range(n)]
    backoff = np.zeros(n)
    # Events: (time the inquiry reaches its target, sender, index into the pending list).
    heap = [(tas_latency, i, 0) for i in range(n) if pending[i]]
    heapq.heapify(heap)
    tries = 0
    while heap:
        t, i, k = heapq.heappop(heap)
        tries += 1
        todo = pending[i]
        dst = int(todo[k])
        if busy_until[dst] > t:
            # The inquiry interrupts the receiver (its handler runs on the CPU that drains the
            # network on the CM-5): the message it is receiving ends ``am_cost`` later.
            busy_until[dst] += am_cost
            state.recv_free[dst] += am_cost
            finish[dst] = max(finish[dst], busy_until[dst] - tas_latency)
            nxt = (k + 1) % len(todo)
            again = t + 2 * tas_latency
            if nxt == 0:
                # Refused by every pending receiver: back off (doubling, from one round trip)
                # before the next round of inquiries - the paper's optional delay.
                backoff[i] = 2 * tas_latency if backoff[i] == 0 else 2 * backoff[i]
                again += backoff[i]
            heapq.heappush(heap, (again, i, nxt))
            continue
        backoff[i] = 0.0
        # Posting the send and completing the receive take o of each end's CPU.
        end = net.transmit(state, i, dst, float(com[i, dst]), t + tas_latency + o) + o
        busy_until[dst] = end + tas_latency
        finish[dst] = max(finish[dst], end)
        finish[i] = max(finish[i], end)
        todo.pop(k)
        if todo:
            heapq.heappush(heap, (end + tas_latency, i, k % len(todo)))
    return float(finish.max(initial=0.0)), finish, tries


def simulate_exchange(
    pattern: Pattern | np.ndarray,
    algorithm: str,
    machine: Machine | NetworkModel,
    *,
    seed: SeedLike = 0,
    schedule: Schedule | None = None,
    tas_latency: float | None = None,
    am_cost: float = 0.0,
    overhead: float = 0.0,
) -> SimulatedExchange:
    """Predict one exchange of ``pattern`` by ``algorithm`` on ``machine``.

    Parameters
    ----------
    pattern
        The exchange (``COM`` in bytes); its ``n`` ranks map to nodes ``0 .. n - 1`` (the
        machine is resized to ``n`` nodes if needed).
    algorithm
        One of :data:`grapeshot.exchange.schedules.ALGORITHMS`.
    seed
        Seed of the schedule's (or the protocol's) random choices.
    schedule
        A table built beforehand (plan once, run many); made here if None.
    tas_latency
        One-way time of a test-and-set inquiry or reset (``drsn``), seconds; default the
        machine's latency.
    am_cost
        Seconds an inquiry delays the message its busy target is receiving (``drsn``; the
        CM-5's Active Message handler, 1.7 us in the paper's section 2.3).
    overhead
        CPU seconds a rank spends per message posted or completed (LogP's ``o``; see the
        module docstring), >= 0.
    """
    if not overhead >= 0:
        raise ValueError(f"overhead must be >= 0 seconds, got {overhead!r}")
    o = float(overhead)
    com = pattern.com if isinstance(pattern, Pattern) else np.asarray(pattern, dtype=np.int64)
    n = com.shape[0]
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown exchange algorithm {algorithm!r}; one of {ALGORITHMS}")
    net = _model(machine, n)
    lat = float(net.net_f[0])
    rng = as_generator(seed)
    if algorithm in TABLE_ALGORITHMS:
        sched = schedule if schedule is not None else make_schedule(com, algorithm, seed=rng)
        if sched.synchronous:
            total, finish = _phased(net, sched, o)
        else:
            total, finish = _back_to_back(net, n, _orders_from_schedule(sched), o)
        return SimulatedExchange(
            algorithm, total, sched.n_phases if sched.synchronous else 0, 0, finish
        )
    if algorithm == "drsn":
        tl = lat if tas_latency is None else float(tas_latency)
        total, finish, tries = _drsn(net, com, rng, tl, float(am_cost), o)
        return SimulatedExchange(algorithm, total, 0, tries, finish)
    if algorithm == "nbx":
        sched = make_schedule(com, "ac", seed=rng)
        total, finish = _back_to_back(net, n, _orders_from_schedule(sched), o)
        # An Issend completes when the receiver's match is acknowledged (one small message
        # back); then the Ibarrier takes ceil(log2 n) rounds of small messages. Each of these
        # messages costs its latency and o at both ends, as any other.
        total += (1 + math.ceil(math.log2(max(n, 2)))) * (lat + 2 * o)
        return SimulatedExchange(algorithm, total, 0, 0, finish)
    if algorithm == "alltoallv":
        orders = [
            [((i + k) % n, int(com[i, (i + k) % n])) for k in range(1, n) if com[i, (i + k) % n]]
            for i in range(n)
        ]
    else:  # neighbor: post everything in neighbour (rank) order
        orders = [[(int(j), int(com[i, j])) for j in np.flatnonzero(com[i])] for i in range(n)]
    total, finish = _back_to_back(net, n, orders, o)
    # The collectives take one packed buffer each way: a rank copies its messages in before
    # the call and out after it, at the machine's memcpy bandwidth. The call starts once the
    # slowest rank has packed (its peers wait for its messages).
    copy_bw = float(net.machine.network.memcpy_bandwidth)
    pack = float(com.sum(axis=1).max(initial=0)) / copy_bw
    finish = np.where(finish > 0, finish + pack + com.sum(axis=0) / copy_bw, 0.0)
    return SimulatedExchange(algorithm, float(finish.max(initial=0.0)), 0, 0, finish)


def simulate_contention(
    machine: Machine | NetworkModel, d: int, nbytes: int, *, receiver: int | None = None
) -> dict[str, float]:
    """Table 2: ranks ``0 .. d-1`` each send ``nbytes`` to one receiver at time 0.

    Under node contention the packets of the ``d`` messages interleave at the receiver (see
    :func:`_interleave`); otherwise the messages go through :meth:`NetworkModel.transmit` in
    rank order. Returns seconds: ``recv`` (the receiver's last delivery) and the senders'
    ``max``, ``min`` and ``ave`` completion times.
    """
    net = machine if isinstance(machine, NetworkModel) else network_model(machine)
    n = net.machine.nodes
    r = n - 1 if receiver is None else receiver
    if int(net.net_i[I_CONTENTION]):
        orders = [[(r, int(nbytes))] if i < d else [] for i in range(n)]
        _, _, ends = _interleaved(net, n, orders)
        return {
            "recv": float(ends.max()),
            "max": float(ends.max()),
            "min": float(ends.min()),
            "ave": float(ends.mean()),
        }
    state = net.new_state()
    ends = []
    for i in range(d):
        net.transmit(state, i, r, float(nbytes), 0.0)
        ends.append(float(state.send_free[i]))
    ends_a = np.asarray(ends)
    return {
        "recv": float(state.recv_free[r]),
        "max": float(ends_a.max()),
        "min": float(ends_a.min()),
        "ave": float(ends_a.mean()),
    }
