"""One inter-node message in the kernel: :func:`grapeshot.sim.network._transmit` on a record.

Same statements as ``_transmit`` (and so the same delivery times, which
``tests/sim/test_network_and_collectives.py`` checks by replaying recorded messages), but
reading the network's parameters from the :class:`~grapeshot.sim.kernel_state.Net` record's
scalars and walking a torus route once rather than recomputing its coordinates per hop.
"""

from __future__ import annotations

from numba import njit

from grapeshot.sim.kernel_state import Net
from grapeshot.sim.network import TORUS3D, _hops_s, _link_bw_s, _link_s, _ring_step


@njit(cache=True, inline="always")
def _torus_axis(
    link_free, head: float, tail: float, per_hop: float, hops: int, step: int, c: int, size: int,
    stride: int, fixed: int, axis: int,
):  # fmt: skip
    """Cross ``hops`` links along one axis of the torus; return the new ``(head, tail)``.

    The router the message is on has coordinate ``c`` on this axis (of ``size`` routers) and
    id ``c * stride + fixed``; each hop leaves it by link ``6 * router + 2 * axis + (0 going
    +, 1 going -)`` and takes ``per_hop`` seconds there (the bytes over the link's bandwidth).
    The coordinate wraps by comparison, not by a division per hop.
    """
    back = 1 if step < 0 else 0
    for _ in range(hops):
        link = 6 * (c * stride + fixed) + 2 * axis + back
        free = link_free[link]
        if free > head:
            head = free
        tt = head + per_hop
        if tt > tail:
            tail = tt
        link_free[link] = tail
        c += step
        if c == size:
            c = 0
        elif c < 0:
            c = size - 1
    return head, tail


@njit(cache=True, inline="always")
def _torus_links(
    net: Net, nbytes: float, head: float, tail: float, x: int, y: int, z: int, tx: int,
    ty: int, dx: int, dy: int, dz: int,
):  # fmt: skip
    """Walk the dimension-ordered route from router ``(x, y, z)`` by ``(dx, dy, dz)`` hops
    (x, then y, then z; ``(tx, ty)`` the target's x and y) through the links' FIFOs; return
    the new ``(head, tail)``.

    The same links in the same order as :func:`grapeshot.sim.network._link_s`, the same
    arithmetic as the general loop of :func:`transmit` (``nbytes / bw`` with ``bw`` the
    axis's link bandwidth, the same division), so the same times bit for bit; only the
    coordinates are computed once per message rather than per hop.
    """
    nx, ny, nz = net.nx, net.ny, net.nz
    if dx != 0:
        per = nbytes / (net.bandwidth * net.wx)
        head, tail = _torus_axis(
            net.link_free, head, tail, per, abs(dx), 1 if dx > 0 else -1, x, nx, ny * nz,
            y * nz + z, 0,
        )  # fmt: skip
    if dy != 0:
        per = nbytes / (net.bandwidth * net.wy)
        head, tail = _torus_axis(
            net.link_free, head, tail, per, abs(dy), 1 if dy > 0 else -1, y, ny, nz,
            tx * ny * nz + z, 1,
        )  # fmt: skip
    if dz != 0:
        per = nbytes / (net.bandwidth * net.wz)
        head, tail = _torus_axis(
            net.link_free, head, tail, per, abs(dz), 1 if dz > 0 else -1, z, nz, 1,
            (tx * ny + ty) * nz, 2,
        )  # fmt: skip
    return head, tail


@njit(cache=True, inline="always")
def transmit(net: Net, src: int, dst: int, nbytes: float, t: float) -> float:
    """Send ``nbytes`` from node ``src`` to node ``dst != src`` at ``t`` (s); return delivery (s).

    Advances the NICs' and the route's links' free times in place (``net.send_free``,
    ``recv_free``, ``link_free``); see :mod:`grapeshot.sim.network` for the model.
    """
    ser = nbytes / net.bandwidth
    # A torus route's coordinates, once (``_hops_s``'s hops are ``|dx| + |dy| + |dz|``).
    x = y = z = tx = ty = dx = dy = dz = 0
    if net.kind == TORUS3D:
        nx, ny, nz = net.nx, net.ny, net.nz
        ra = src // net.npr
        rb = dst // net.npr
        x, y, z = ra // (ny * nz), (ra // nz) % ny, ra % nz
        tx, ty, tz = rb // (ny * nz), (rb // nz) % ny, rb % nz
        dx = _ring_step(tx - x, nx)
        dy = _ring_step(ty - y, ny)
        dz = _ring_step(tz - z, nz)
        hops = abs(dx) + abs(dy) + abs(dz)
    else:
        hops = _hops_s(net.kind, net.arity, net.levels, net.nx, net.ny, net.nz, net.npr, src, dst)
    lat = net.latency + hops * net.hop_latency
    start = t
    if net.send_free[src] > start:
        start = net.send_free[src]
    if net.contention:
        if net.recv_free[dst] > start:
            start = net.recv_free[dst]
        arrive = start + lat + ser
        net.send_free[src] = arrive
        net.recv_free[dst] = arrive
        return arrive
    send_end = start + ser
    net.send_free[src] = send_end
    head = start
    tail = send_end
    if net.kind == TORUS3D:
        if hops > 0:
            head, tail = _torus_links(net, nbytes, head, tail, x, y, z, tx, ty, dx, dy, dz)
    else:
        for i in range(hops):
            net.route[i] = _link_s(
                net.kind, net.nodes, net.arity, net.levels, net.nx, net.ny, net.nz, net.npr,
                src, dst, i,
            )  # fmt: skip
        for i in range(hops):
            link = net.route[i]
            if net.link_free[link] > head:
                head = net.link_free[link]
            bw = _link_bw_s(
                net.kind, net.nodes, net.arity, net.levels, net.parents, net.bandwidth,
                net.wx, net.wy, net.wz, link,
            )  # fmt: skip
            tt = head + nbytes / bw
            if tt > tail:
                tail = tt
            net.link_free[link] = tail
    arrive = head + lat
    if net.recv_free[dst] > arrive:
        arrive = net.recv_free[dst]
    arrive += ser
    if tail + lat > arrive:
        arrive = tail + lat
    net.recv_free[dst] = arrive
    return arrive
