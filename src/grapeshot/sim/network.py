"""Network models: what one message between two nodes costs, and what it shares on the way.

A message of ``b`` bytes from node ``a`` to node ``c`` (``a != c``) that is ready at time ``t``:

1. waits for the sender's NIC, then occupies it for ``b / B`` seconds (``B`` is the NIC
   bandwidth, ``network.bandwidth``);
2. crosses the links of its route (topologies with links), each a FIFO resource occupied for
   ``b / B_link`` seconds: a message waits for a link another message holds (links are shared);
3. arrives ``L(a, c) = latency + hops_beyond_nearest(a, c) * hop_latency`` after it left;
4. waits for the receiver's NIC, which takes ``b / B`` seconds per message.

Alone on the network it is delivered ``L(a, c) + b / B`` after it was ready (cut-through: the
serialisation at the two NICs overlaps), so a two-node ping-pong costs ``2 (L + b / B)``.

With ``node_contention`` (the CM-5 preset) a receiver takes one message at a time and holds it
for the whole message, ``L + b / B``, before the next sender may start (Ranka & Wang's
assumption, section 2.1): ``d`` senders to one receiver take ``d (L + b / B)``. Link sharing is
not modelled in that mode, as in the paper (the CM-5 routes randomly).

Topologies (:data:`grapeshot.model.machine.TOPOLOGIES`):

``flat``
    Full bisection (a cloud placement group): every pair of nodes one hop apart, no shared links;
    only the NICs serialise.
``fat-tree``
    Nodes under leaf switches of ``arity`` ports, ``levels`` switch levels (default: the fewest
    with ``arity**levels >= nodes``; levels that hold fewer nodes are refused by the machine's
    own check, :class:`grapeshot.model.machine.Machine`). Two
    nodes meet at their lowest common switch, level ``h``; the route climbs the up-links of the
    sender's switches below ``h`` and descends the down-links of the receiver's. A switch has
    ``parents`` up-links (default ``arity``: full bisection) and its up-link (and down-link)
    carries ``B * (nodes below it) * (parents / arity) ** level``: with full bisection it only
    slows messages when more flows cross it than its nodes could feed; fewer parents taper the
    tree (the CM-5's routers have 4 children and 2 parents at the levels a 32-node machine
    has: 20 MB/s per node within 4 nodes, 10 within 16, 5 beyond). Hops beyond the nearest
    pair: ``2 (h - 1)``.
``torus3d``
    Routers on an ``X x Y x Z`` torus (``dims``; default the smallest near-cubic box holding
    ``ceil(nodes / nodes_per_router)`` routers), ``nodes_per_router`` consecutive nodes per
    router. Dimension-order routing (x, then y, then z), the shorter way round each ring (ties
    go the positive way); each router has one link per direction and axis, of bandwidth
    ``B * link_weights[axis] / min(link_weights)`` (the slowest link runs at the NIC's
    bandwidth: an assumption, Gemini's slowest links are close to its injection rate). Hops:
    the router-to-router distance.

``hop_latency`` (seconds per switch or router hop beyond the nearest pair) is not part of the
machine description; :data:`DEFAULT_HOP_LATENCY` gives the documented defaults.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
from numba import njit

from grapeshot.model.errors import InputError
from grapeshot.model.machine import Machine
from grapeshot.model.topology import fat_tree_level, fat_tree_shape, torus_box

FLAT, FAT_TREE, TORUS3D = 0, 1, 2
_KIND = {"flat": FLAT, "fat-tree": FAT_TREE, "torus3d": TORUS3D}

# Layout of the integer parameter vector ``net_i``.
(
    I_KIND,
    I_NODES,
    I_CONTENTION,
    I_ARITY,
    I_LEVELS,
    I_X,
    I_Y,
    I_Z,
    I_NPR,
    I_MAXROUTE,
    I_PARENTS,
) = range(11)
# Layout of the float parameter vector ``net_f``.
F_LATENCY, F_BANDWIDTH, F_HOP, F_WX, F_WY, F_WZ = range(6)

#: Seconds per hop beyond the nearest pair, by topology: a switch or router traversal
#: (~100 ns for InfiniBand switches and Cray Gemini routers; the flat cloud has none).
DEFAULT_HOP_LATENCY: Mapping[str, float] = MappingProxyType(
    {"flat": 0.0, "fat-tree": 100e-9, "torus3d": 100e-9}
)


@dataclass(frozen=True, eq=False)
class NetworkModel:
    """A machine's network as the flat arrays the event loop reads.

    Attributes
    ----------
    machine
        The machine it models.
    net_i, net_f
        int64 and float64 parameter vectors (layouts ``I_*`` and ``F_*`` in this module).
    n_links
        Number of shared link resources (0 for ``flat``).
    hop_latency
        Seconds per hop beyond the nearest pair.
    """

    machine: Machine
    net_i: np.ndarray
    net_f: np.ndarray
    n_links: int
    hop_latency: float

    @property
    def topology(self) -> str:
        """The topology's name."""
        return self.machine.network.topology

    @property
    def max_route(self) -> int:
        """The longest route, in links."""
        return int(self.net_i[I_MAXROUTE])

    def new_state(self) -> NetworkState:
        """Idle NICs and links at time 0."""
        n = self.machine.nodes
        return NetworkState(
            send_free=np.zeros(n), recv_free=np.zeros(n), link_free=np.zeros(max(self.n_links, 1))
        )

    def hops(self, a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
        """Hops beyond the nearest pair between nodes ``a`` and ``b`` (vectorised, int64)."""
        a_arr, b_arr = np.broadcast_arrays(np.asarray(a, np.int64), np.asarray(b, np.int64))
        out = np.empty(a_arr.shape, dtype=np.int64)
        _hops_many(self.net_i, a_arr.ravel(), b_arr.ravel(), out.reshape(-1))
        return out

    def latency(self, a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
        """One-way latency between nodes ``a`` and ``b``, seconds (vectorised)."""
        return self.net_f[F_LATENCY] + self.hops(a, b) * self.net_f[F_HOP]

    def route(self, a: int, b: int) -> np.ndarray:
        """Link ids of the route from node ``a`` to node ``b`` (int64)."""
        buf = np.empty(max(self.max_route, 1), dtype=np.int64)
        k = _route(self.net_i, int(a), int(b), buf)
        return buf[:k].copy()

    def transmit(
        self, state: NetworkState, src: int, dst: int, nbytes: float, ready: float
    ) -> float:
        """Send one message through ``state`` (updated in place); return its delivery time."""
        return float(
            _transmit(
                self.net_i,
                self.net_f,
                state.send_free,
                state.recv_free,
                state.link_free,
                int(src),
                int(dst),
                float(nbytes),
                float(ready),
            )
        )


@dataclass(frozen=True, eq=False)
class NetworkState:
    """When each NIC (send side, receive side) and each link is next free, seconds."""

    send_free: np.ndarray
    recv_free: np.ndarray
    link_free: np.ndarray


def network_model(machine: Machine, hop_latency: float | None = None) -> NetworkModel:
    """Build the :class:`NetworkModel` of ``machine``.

    Parameters
    ----------
    machine
        The machine; its ``network`` gives topology, latency, bandwidth and contention.
    hop_latency
        Seconds per hop beyond the nearest pair; ``None`` takes
        :data:`DEFAULT_HOP_LATENCY` for the topology.
    """
    net = machine.network
    n = machine.nodes
    if hop_latency is None:
        hop_latency = DEFAULT_HOP_LATENCY[net.topology]
    if not (isinstance(hop_latency, int | float) and math.isfinite(hop_latency)) or (
        hop_latency < 0
    ):
        raise InputError("hop_latency", f"got {hop_latency!r}", "a finite number >= 0 (seconds)")
    net_i = np.zeros(11, dtype=np.int64)
    net_f = np.zeros(6, dtype=np.float64)
    net_i[I_KIND] = _KIND[net.topology]
    net_i[I_NODES] = n
    net_i[I_CONTENTION] = int(net.node_contention)
    net_f[F_LATENCY] = net.latency
    net_f[F_BANDWIDTH] = net.bandwidth
    net_f[F_HOP] = float(hop_latency)
    n_links = 0
    if net.topology == "fat-tree":
        arity, levels = fat_tree_shape(n, net.params)
        net_i[I_ARITY] = arity
        net_i[I_LEVELS] = levels
        net_i[I_PARENTS] = int(net.params.get("parents", arity))
        net_i[I_MAXROUTE] = 2 * (levels - 1)
        n_links = 2 * sum(-(-n // arity**lv) for lv in range(1, levels))
    elif net.topology == "torus3d":
        npr = int(net.params.get("nodes_per_router", 1))
        routers = -(-n // npr)
        dims = tuple(int(d) for d in net.params.get("dims", torus_box(routers)))
        if math.prod(dims) < routers:
            raise InputError(
                f"network.torus3d.dims ({machine.name})",
                f"{dims} has {math.prod(dims)} routers for {n} nodes at {npr} per router",
                f"at least {routers} routers",
            )
        weights = np.asarray(net.params.get("link_weights", (1.0, 1.0, 1.0)), dtype=np.float64)
        net_i[I_X], net_i[I_Y], net_i[I_Z] = dims
        net_i[I_NPR] = npr
        net_i[I_MAXROUTE] = sum(d // 2 for d in dims)
        net_f[F_WX : F_WZ + 1] = weights / weights.min()
        n_links = 6 * math.prod(dims)
    return NetworkModel(machine, net_i, net_f, n_links, float(hop_latency))


# The helpers below take scalars only: an inlined numba function that takes arrays pays
# reference counting on every call, which would dominate the per-message cost. ``topo`` in
# their docstrings is ``(kind, nodes, arity, levels, nx, ny, nz, npr)`` from ``net_i``.


@njit(cache=True, inline="always")
def _ring_step(d: int, size: int) -> int:
    """Signed shortest displacement along a ring of ``size`` (ties go positive)."""
    d = d % size
    if 2 * d <= size:
        return d
    return d - size


@njit(cache=True, inline="always")
def _hops_s(kind, arity, levels, nx, ny, nz, npr, a, b):
    """Hops beyond the nearest pair from node ``a`` to node ``b`` (= links on the route)."""
    if a == b or kind == FLAT:
        return 0
    if kind == FAT_TREE:
        return 2 * (fat_tree_level(arity, levels, a, b) - 1)
    ra = a // npr
    rb = b // npr
    dx = _ring_step(rb // (ny * nz) - ra // (ny * nz), nx)
    dy = _ring_step((rb // nz) % ny - (ra // nz) % ny, ny)
    dz = _ring_step(rb % nz - ra % nz, nz)
    return abs(dx) + abs(dy) + abs(dz)


@njit(cache=True, inline="always")
def _link_s(kind, nodes, arity, levels, nx, ny, nz, npr, a, b, i):
    """Id of the ``i``-th link of the route from node ``a`` to node ``b``.

    Fat tree: level ``lv``'s links start at ``offset(lv)``, two per switch (up, down); the
    route climbs the sender's up-links from its leaf switch, then descends the receiver's
    down-links. Torus: link ``6 * router + 2 * axis + (0 going +, 1 going -)`` of the router
    the hop leaves, in x, y, z order.
    """
    if kind == FAT_TREE:
        h = fat_tree_level(arity, levels, a, b)
        up = i < h - 1
        lv = i + 1 if up else 2 * (h - 1) - i
        offset = 0
        span = arity
        for _ in range(1, lv):
            offset += 2 * ((nodes + span - 1) // span)
            span *= arity
        if up:
            return offset + 2 * (a // span)
        return offset + 2 * (b // span) + 1
    ra = a // npr
    rb = b // npr
    ax, ay, az = ra // (ny * nz), (ra // nz) % ny, ra % nz
    bx, by = rb // (ny * nz), (rb // nz) % ny
    dx = _ring_step(bx - ax, nx)
    dy = _ring_step(by - ay, ny)
    dz = _ring_step(rb % nz - az, nz)
    if i < abs(dx):
        axis, step = 0, (1 if dx > 0 else -1)
        x, y, z = (ax + step * i) % nx, ay, az
    elif i < abs(dx) + abs(dy):
        axis, step = 1, (1 if dy > 0 else -1)
        x, y, z = bx, (ay + step * (i - abs(dx))) % ny, az
    else:
        axis, step = 2, (1 if dz > 0 else -1)
        x, y, z = bx, by, (az + step * (i - abs(dx) - abs(dy))) % nz
    router = (x * ny + y) * nz + z
    return 6 * router + 2 * axis + (0 if step > 0 else 1)


@njit(cache=True, inline="always")
def _link_bw_s(kind, nodes, arity, levels, parents, bw, wx, wy, wz, link):
    """Bandwidth of link ``link``, bytes per second."""
    if kind == FAT_TREE:
        offset = 0
        span = arity
        taper = parents / arity
        for _ in range(1, levels):
            count = 2 * ((nodes + span - 1) // span)
            if link < offset + count:
                return bw * min(span, nodes) * taper
            offset += count
            span *= arity
            taper *= parents / arity
        return bw * nodes
    axis = (link % 6) // 2
    if axis == 0:
        return bw * wx
    if axis == 1:
        return bw * wy
    return bw * wz


@njit(cache=True)
def _hops(net_i: np.ndarray, a: int, b: int) -> int:
    return _hops_s(
        net_i[I_KIND],
        net_i[I_ARITY],
        net_i[I_LEVELS],
        net_i[I_X],
        net_i[I_Y],
        net_i[I_Z],
        net_i[I_NPR],
        a,
        b,
    )


@njit(cache=True)
def _hops_many(net_i: np.ndarray, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    for i in range(a.shape[0]):
        out[i] = _hops(net_i, a[i], b[i])


@njit(cache=True)
def pair_latency(net_i: np.ndarray, net_f: np.ndarray, a: int, b: int) -> float:
    """One-way latency from node ``a`` to node ``b``, seconds."""
    return net_f[F_LATENCY] + _hops(net_i, a, b) * net_f[F_HOP]


@njit(cache=True)
def _route(net_i: np.ndarray, a: int, b: int, out: np.ndarray) -> int:
    """Write the link ids from ``a`` to ``b`` into ``out``; return how many."""
    k = _hops(net_i, a, b)
    for i in range(k):
        out[i] = _link_s(
            net_i[I_KIND],
            net_i[I_NODES],
            net_i[I_ARITY],
            net_i[I_LEVELS],
            net_i[I_X],
            net_i[I_Y],
            net_i[I_Z],
            net_i[I_NPR],
            a,
            b,
            i,
        )
    return k


@njit(cache=True)
def _transmit(
    net_i: np.ndarray,
    net_f: np.ndarray,
    send_free: np.ndarray,
    recv_free: np.ndarray,
    link_free: np.ndarray,
    src: int,
    dst: int,
    nbytes: float,
    ready: float,
) -> float:
    """Move one message from node ``src`` to node ``dst``; return its delivery time.

    Updates the NIC and link free times in place (see the module docstring for the model).
    The event kernel's :func:`grapeshot.sim.transfer.transmit` carries a copy of these
    statements on its :class:`~grapeshot.sim.kernel_state.Net` record; tests check that the
    two agree.
    """
    kind = net_i[I_KIND]
    nodes = net_i[I_NODES]
    arity = net_i[I_ARITY]
    levels = net_i[I_LEVELS]
    nx, ny, nz, npr = net_i[I_X], net_i[I_Y], net_i[I_Z], net_i[I_NPR]
    bw = net_f[F_BANDWIDTH]
    ser = nbytes / bw
    hops = _hops_s(kind, arity, levels, nx, ny, nz, npr, src, dst)
    lat = net_f[F_LATENCY] + hops * net_f[F_HOP]
    start = ready
    if send_free[src] > start:
        start = send_free[src]
    if net_i[I_CONTENTION] != 0:
        if recv_free[dst] > start:
            start = recv_free[dst]
        end = start + lat + ser
        send_free[src] = end
        recv_free[dst] = end
        return end
    send_end = start + ser
    send_free[src] = send_end
    head = start
    tail = send_end
    for i in range(hops):
        link = _link_s(kind, nodes, arity, levels, nx, ny, nz, npr, src, dst, i)
        if link_free[link] > head:
            head = link_free[link]
        t = head + nbytes / _link_bw_s(
            kind,
            nodes,
            arity,
            levels,
            net_i[I_PARENTS],
            bw,
            net_f[F_WX],
            net_f[F_WY],
            net_f[F_WZ],
            link,
        )
        if t > tail:
            tail = t
        link_free[link] = tail
    rstart = head + lat
    if recv_free[dst] > rstart:
        rstart = recv_free[dst]
    rend = rstart + ser
    if tail + lat > rend:
        rend = tail + lat
    recv_free[dst] = rend
    return rend
