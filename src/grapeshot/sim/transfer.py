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
def _torus_route(net: Net, a: int, b: int) -> None:
    """Write the dimension-ordered route from node ``a`` to node ``b`` into ``net.route``.

    The link ids are :func:`grapeshot.sim.network._link_s`'s: ``6 * router + 2 * axis + (0
    going +, 1 going -)`` of the router each hop leaves.
    """
    nx, ny, nz = net.nx, net.ny, net.nz
    ra = a // net.npr
    rb = b // net.npr
    x, y, z = ra // (ny * nz), (ra // nz) % ny, ra % nz
    tx, ty, tz = rb // (ny * nz), (rb // nz) % ny, rb % nz
    k = 0
    for axis in range(3):
        if axis == 0:
            d = _ring_step(tx - x, nx)
        elif axis == 1:
            d = _ring_step(ty - y, ny)
        else:
            d = _ring_step(tz - z, nz)
        step = 1 if d > 0 else -1
        for _ in range(abs(d)):
            net.route[k] = 6 * ((x * ny + y) * nz + z) + 2 * axis + (step < 0)
            k += 1
            if axis == 0:
                x = (x + step) % nx
            elif axis == 1:
                y = (y + step) % ny
            else:
                z = (z + step) % nz


@njit(cache=True, inline="always")
def transmit(net: Net, src: int, dst: int, nbytes: float, t: float) -> float:
    """Send ``nbytes`` from node ``src`` to node ``dst != src`` at ``t`` (s); return delivery (s).

    Advances the NICs' and the route's links' free times in place (``net.send_free``,
    ``recv_free``, ``link_free``); see :mod:`grapeshot.sim.network` for the model.
    """
    ser = nbytes / net.bandwidth
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
        _torus_route(net, src, dst)
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
