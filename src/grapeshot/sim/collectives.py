"""Global operations: allreduce (reduce then broadcast) and barrier, linear or binomial tree.

Every message of a collective costs its sender ``o`` seconds of software overhead, then
``L(a, b) + s / B`` on the wire (latency between the two nodes and ``s`` bytes over the NIC
bandwidth), then ``o`` at its receiver; a node handles its own sends and receives one at a time.
Collective messages are a few bytes, so they do not queue behind halo traffic at the NICs
(a documented simplification). A barrier is an allreduce of 0 bytes.

``linear`` (Birdshot §6.2, "a single node exchanges integers with all other nodes")
    Every node sends its value to the root when it arrives; the root takes the messages in the
    order they become available, then sends the result to every other node in rank order. With
    all ``n`` nodes arriving together: ``2 (L + s/B) + 2 n o`` to the last node.
``binomial`` (MPI's tree for small messages)
    Reduce up a binomial tree (node ``r``, relative to the root, receives from ``r + 2^k`` for
    every ``2^k`` below its lowest set bit, in increasing ``k``), then broadcast down the same
    tree (farthest child first). With ``o = 0`` and simultaneous arrival:
    ``2 depth (L + s/B)``, the depth being the most 1-bits of any rank below ``n``
    (``log2 n`` for a power of two).

In a cloud (large ``L``, small ``o``) linear wins: ``ceil(log2 n)`` latencies each way against
one, at the price of ``2 n o`` at the root — Birdshot measured linear 2.3-3.3x faster than tree.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from grapeshot.model.errors import InputError
from grapeshot.sim.network import F_BANDWIDTH, NetworkModel, pair_latency

LINEAR, BINOMIAL = 0, 1
#: Collective algorithms by name.
ALGORITHMS = {"linear": LINEAR, "binomial": BINOMIAL}


def algorithm_code(name: str, where: str = "--collective") -> int:
    """The code of collective algorithm ``name``; an unknown name lists the valid ones."""
    try:
        return ALGORITHMS[name]
    except (KeyError, TypeError):
        raise InputError(where, f"got {name!r}", f"one of {', '.join(ALGORITHMS)}") from None


@njit(cache=True)
def collective_release(
    arrive: np.ndarray,
    algorithm: int,
    root: int,
    nbytes: float,
    overhead: float,
    net_i: np.ndarray,
    net_f: np.ndarray,
    release: np.ndarray,
) -> None:
    """Release times of an allreduce whose nodes arrive at ``arrive`` (seconds).

    Writes into ``release`` (shape ``(n,)``) the time each node holds the result and has done
    its part of the broadcast. See the module docstring for the cost model.
    """
    n = arrive.shape[0]
    collective_release_into(
        arrive,
        algorithm,
        root,
        nbytes,
        overhead,
        net_i,
        net_f,
        release,
        np.empty((2, n)),
        np.empty((2, n), dtype=np.int64),
    )


@njit(cache=True)
def _stable_argsort(keys: np.ndarray, n: int, order: np.ndarray, tmp: np.ndarray) -> None:
    """Write into ``order[:n]`` the stable ascending order of ``keys[:n]``; ``tmp`` is scratch.

    The same permutation as ``np.argsort(keys[:n], kind="mergesort")`` (a stable sort's order is
    unique), without allocating: the event kernel calls this with no memory manager.
    """
    for i in range(n):
        order[i] = i
    src, dst = order, tmp
    in_order = True  # whether ``src`` is ``order``
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j = lo, mid
            for k in range(lo, hi):
                # Equal keys take the left run first: stability.
                if i < mid and (j >= hi or keys[src[i]] <= keys[src[j]]):
                    dst[k] = src[i]
                    i += 1
                else:
                    dst[k] = src[j]
                    j += 1
        src, dst = dst, src
        in_order = not in_order
        width *= 2
    if not in_order:
        for i in range(n):
            order[i] = src[i]


@njit(cache=True)
def collective_release_into(
    arrive: np.ndarray,
    algorithm: int,
    root: int,
    nbytes: float,
    overhead: float,
    net_i: np.ndarray,
    net_f: np.ndarray,
    release: np.ndarray,
    work_f: np.ndarray,
    work_i: np.ndarray,
) -> None:
    """:func:`collective_release` with scratch space: float64 ``(2, n)``, int64 ``(2, n)``.

    Allocates nothing, so the event kernel (compiled without numba's memory manager) can call
    it once per step.
    """
    n = arrive.shape[0]
    if n == 1:
        release[0] = arrive[0]
        return
    ser = nbytes / net_f[F_BANDWIDTH]
    o = overhead
    if algorithm == LINEAR:
        avail = work_f[0]
        k = 0
        for i in range(n):
            if i != root:
                avail[k] = arrive[i] + o + pair_latency(net_i, net_f, i, root) + ser
                k += 1
        order = work_i[0]
        _stable_argsort(avail, n - 1, order, work_i[1])
        t = arrive[root]
        for j in range(n - 1):
            a = avail[order[j]]
            if a > t:
                t = a
            t += o
        for r in range(1, n):
            node = (root + r) % n
            t += o
            release[node] = t + pair_latency(net_i, net_f, root, node) + ser + o
        release[root] = t
        return
    # Binomial tree over relative ranks r = (node - root) mod n.
    sent = work_f[0]
    for r in range(n - 1, -1, -1):
        node = (root + r) % n
        t = arrive[node]
        mask = 1
        while r + mask < n and (r == 0 or mask < (r & -r)):
            child = (root + r + mask) % n
            a = sent[r + mask] + pair_latency(net_i, net_f, child, node) + ser
            if a > t:
                t = a
            t += o
            mask <<= 1
        sent[r] = t + o  # the send to the parent (unused for the root)
        if r == 0:
            release[node] = t
    # Broadcast: the result reaches relative rank r at have[r]; r forwards it to its children
    # farthest first, then is released.
    have = work_f[1]
    have[0] = release[root]
    for r in range(n):
        node = (root + r) % n
        t = have[r]
        top = 1
        while r + top < n and (r == 0 or top < (r & -r)):
            top <<= 1
        mask = top >> 1
        while mask >= 1:
            if r + mask < n:
                child = (root + r + mask) % n
                t += o
                have[r + mask] = t + pair_latency(net_i, net_f, node, child) + ser + o
            mask >>= 1
        release[node] = t


def allreduce(
    arrive: np.ndarray,
    network: NetworkModel,
    *,
    algorithm: str = "linear",
    nbytes: int = 8,
    overhead: float = 5e-6,
    root: int = 0,
) -> np.ndarray:
    """Release time of every node of an allreduce whose nodes arrive at ``arrive``.

    Parameters
    ----------
    arrive
        float64, shape ``(nodes,)``: when each node enters the collective, seconds.
    network
        The machine's network model (latency between nodes, NIC bandwidth).
    algorithm
        ``"linear"`` or ``"binomial"``.
    nbytes
        Bytes of the reduced value (0 for a barrier).
    overhead
        Software overhead per message at its sender and at its receiver, seconds.
    root
        The root node.

    Returns
    -------
    numpy.ndarray
        float64, shape ``(nodes,)``.
    """
    arrive = np.ascontiguousarray(arrive, dtype=np.float64)
    n = network.machine.nodes
    if arrive.shape != (n,):
        raise InputError("arrive", f"has shape {arrive.shape}", f"({n},), one time per node")
    if not 0 <= root < n:
        raise InputError("root", f"got {root}", f"a node in [0, {n})")
    release = np.empty(n)
    collective_release(
        arrive,
        algorithm_code(algorithm, "algorithm"),
        int(root),
        float(nbytes),
        float(overhead),
        network.net_i,
        network.net_f,
        release,
    )
    return release


def allreduce_time(
    network: NetworkModel, *, algorithm: str, nbytes: int = 8, overhead: float = 5e-6
) -> float:
    """Seconds from all nodes arriving together to the last node's release."""
    n = network.machine.nodes
    return float(
        allreduce(np.zeros(n), network, algorithm=algorithm, nbytes=nbytes, overhead=overhead).max()
    )
