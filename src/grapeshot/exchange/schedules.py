"""Communication schedules: pure functions ``COM -> phases``, deterministic for a seed.

A :class:`Schedule` lists transfers ``(phase, src, dst, offset, nbytes)``: ``nbytes`` bytes of
the message ``src -> dst`` starting at byte ``offset`` of it. Every byte of every message
appears in exactly one transfer (:func:`check_schedule`).

``ac``   Asynchronous communication (figure 2): no phases, every sender sends its messages in
         a random order; ``phase`` is the position in that order (``synchronous=False``).
``lp``   Linear permutation (figure 3): in step ``k = 1 .. n-1`` rank ``i`` exchanges with
         ``i XOR k`` (``n`` a power of two) or sends to ``i + k`` and receives from ``i - k``
         (mod ``n``) otherwise; empty pairs are skipped but the step count stays ``n - 1``.
``rsn``  RS_N (figure 4): phases are partial permutations; in each phase the senders (those
         with the most messages left first, ties in a random order) take a random remaining
         destination whose receiver is still free.
``rsnh`` RS_NH: RS_N where each sender offers its *largest* remaining message first (a max
         priority list, the paper's heap) and a phase's messages are cut at a cutoff (the
         ``cutoff`` quantile of the sizes picked in the phase, times ``slack``): larger messages
         send only the cutoff and keep the rest for a later phase, so a phase's sizes are
         similar. The paper does not give its cutoff rule; this one is ours.

``drsn``, ``nbx``, ``alltoallv`` and ``neighbor`` have no table: they are protocols
(:mod:`grapeshot.exchange.mpi_exchange`) and simulations (:mod:`grapeshot.sim.exchange`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numba import njit

from grapeshot.exchange.pattern import Pattern
from grapeshot.model.seed import SeedLike, as_generator

#: Algorithms with a schedule table.
TABLE_ALGORITHMS = ("ac", "lp", "rsn", "rsnh")
#: Every algorithm grapeshot runs (on MPI) or simulates.
ALGORITHMS = ("ac", "lp", "rsn", "rsnh", "drsn", "nbx", "alltoallv", "neighbor")


@dataclass(frozen=True, eq=False)
class Schedule:
    """Transfers of one exchange, sorted by ``(phase, src)``.

    Attributes
    ----------
    algorithm
        ``"ac"``, ``"lp"``, ``"rsn"`` or ``"rsnh"``.
    n
        Ranks.
    phase, src, dst, offset, nbytes
        ``(t,)`` int64 each: the transfer's phase, sender, receiver, first byte within the
        message, and length in bytes.
    n_phases
        Number of phases (``n - 1`` for LP even where some are empty).
    synchronous
        Whether phases are loosely synchronous steps (False for AC, whose ``phase`` is only
        the order in which each sender sends).
    """

    algorithm: str
    n: int
    phase: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    offset: np.ndarray
    nbytes: np.ndarray
    n_phases: int
    synchronous: bool = True

    def sends_of(self, rank: int) -> np.ndarray:
        """Indices of ``rank``'s transfers as a sender, in phase order."""
        return np.flatnonzero(self.src == rank)

    def recvs_of(self, rank: int) -> np.ndarray:
        """Indices of ``rank``'s transfers as a receiver, in phase order."""
        return np.flatnonzero(self.dst == rank)

    def phase_pairs(self) -> list[list[tuple[int, int]]]:
        """The transfers as ``(src, dst)`` lists, one per phase (the plain references' form)."""
        return [
            list(
                zip(
                    self.src[self.phase == k].tolist(),
                    self.dst[self.phase == k].tolist(),
                    strict=True,
                )
            )
            for k in range(self.n_phases)
        ]


def _sorted(algorithm, n, phase, src, dst, offset, nbytes, n_phases, synchronous=True):
    order = np.lexsort((dst, src, phase))
    arr = [np.ascontiguousarray(a[order], dtype=np.int64) for a in (phase, src, dst, offset)]
    return Schedule(
        algorithm,
        n,
        *arr,
        np.ascontiguousarray(np.asarray(nbytes)[order], dtype=np.int64),
        int(n_phases),
        synchronous,
    )


def schedule_ac(com: np.ndarray, seed: SeedLike) -> Schedule:
    """AC: every sender's messages in a random order (no phases, no contention control)."""
    rng = as_generator(seed)
    n = com.shape[0]
    src, dst = np.nonzero(com)
    # A random key per message, ranked within its sender: the sending order.
    key = rng.random(src.size)
    order = np.lexsort((key, src))
    src, dst = src[order], dst[order]
    first = np.searchsorted(src, np.arange(n))
    pos = np.arange(src.size) - first[src]
    n_ph = int(pos.max()) + 1 if pos.size else 0
    return _sorted("ac", n, pos, src, dst, np.zeros_like(src), com[src, dst], n_ph, False)


def lp_partner(rank: np.ndarray | int, k: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """LP step ``k``: (destination, source) of ``rank``: ``rank XOR k`` both ways when ``n`` is
    a power of two, else ``rank + k`` and ``rank - k`` mod ``n``."""
    rank = np.asarray(rank)
    if n & (n - 1) == 0:
        return rank ^ k, rank ^ k
    return (rank + k) % n, (rank - k) % n


def schedule_lp(com: np.ndarray, seed: SeedLike = 0) -> Schedule:
    """LP: ``n - 1`` steps of a pairwise permutation; ``seed`` is unused (no randomness)."""
    n = com.shape[0]
    ranks = np.arange(n)
    ph, sr, ds = [], [], []
    for k in range(1, n):
        dst, _ = lp_partner(ranks, k, n)
        live = com[ranks, dst] > 0
        ph.append(np.full(int(live.sum()), k - 1))
        sr.append(ranks[live])
        ds.append(dst[live])
    if n <= 1:
        ph, sr, ds = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    src, dst = np.concatenate(sr), np.concatenate(ds)
    return _sorted(
        "lp", n, np.concatenate(ph), src, dst, np.zeros_like(src), com[src, dst], max(n - 1, 0)
    )


@njit(cache=True)
def _by_degree(order, deg, dmax):
    """``order`` stably sorted by decreasing remaining degree (a counting sort)."""
    n = order.shape[0]
    count = np.zeros(dmax + 2, np.int64)
    for i in range(n):
        count[dmax - deg[i] + 1] += 1
    for k in range(1, dmax + 2):
        count[k] += count[k - 1]
    out = np.empty(n, np.int64)
    for oi in range(n):
        i = order[oi]
        key = dmax - deg[i]
        out[count[key]] = i
        count[key] += 1
    return out


@njit(cache=True)
def _rsn_kernel(ccom, deg, orders, start_keys, sizes, heap, cutoff_q, slack, chunk_out, priority):
    """RS_N / RS_NH phases. ``ccom`` is ``(n, dmax)`` destinations (-1 padded), ``deg[i]``
    how many of row ``i`` remain (kept at the front), ``sizes`` remaining bytes per entry.

    ``orders`` is ``(P, n)``: one random sender order per phase (rows reused cyclically),
    ``start_keys`` ``(P, n)`` random ints (where a sender starts its scan).
    Writes transfers to ``chunk_out`` rows ``(phase, src, dst, nbytes)``; returns
    ``(transfers, phases)``.
    """
    n, dmax = ccom.shape
    remaining = 0
    for i in range(n):
        remaining += deg[i]
    recv_busy = np.full(n, -1, np.int64)
    pick = np.full(n, -1, np.int64)
    picked_size = np.zeros(n, np.int64)
    t = 0
    phase = 0
    P = orders.shape[0]
    while remaining > 0:
        row = phase % P
        order = orders[row]
        if priority:
            order = _by_degree(order, deg, dmax)
        npicked = 0
        for oi in range(n):
            i = order[oi]
            pick[i] = -1
            di = deg[i]
            if di == 0:
                continue
            if heap:
                # Largest remaining message whose receiver is free (ties: lowest slot).
                best = -1
                for s in range(di):
                    k = ccom[i, s]
                    if recv_busy[k] != phase and (best < 0 or sizes[i, s] > sizes[i, best]):
                        best = s
                if best >= 0:
                    pick[i] = best
            else:
                s0 = start_keys[row, i] % di
                for q in range(di):
                    s = (s0 + q) % di
                    k = ccom[i, s]
                    if recv_busy[k] != phase:
                        pick[i] = s
                        break
            if pick[i] >= 0:
                recv_busy[ccom[i, pick[i]]] = phase
                picked_size[npicked] = sizes[i, pick[i]]
                npicked += 1
        cut = np.int64(1) << 62
        if heap and npicked > 0:
            ps = np.sort(picked_size[:npicked])
            q = ps[min(npicked - 1, int(cutoff_q * (npicked - 1) + 0.5))]
            cut = max(np.int64(1), np.int64(q * slack))
        for i in range(n):
            s = pick[i]
            if s < 0:
                continue
            k = ccom[i, s]
            b = sizes[i, s]
            send = b if b <= cut else cut
            chunk_out[t, 0] = phase
            chunk_out[t, 1] = i
            chunk_out[t, 2] = k
            chunk_out[t, 3] = send
            t += 1
            if send == b:
                # Remove entry s: move the last live entry into its slot.
                last = deg[i] - 1
                ccom[i, s] = ccom[i, last]
                sizes[i, s] = sizes[i, last]
                ccom[i, last] = -1
                deg[i] = last
                remaining -= 1
            else:
                sizes[i, s] = b - send
        phase += 1
        if t >= chunk_out.shape[0]:
            break
    return t, phase


@njit(cache=True)
def _compact_kernel(com, ccom, sizes, deg):
    n = com.shape[0]
    for i in range(n):
        k = 0
        for j in range(n):
            b = com[i, j]
            if b != 0:
                ccom[i, k] = j
                sizes[i, k] = b
                k += 1
        deg[i] = k


def _compact(com: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CCOM (figure 4 step 1): ``(n, d)`` destinations per sender, -1 padded; degrees; sizes."""
    n = com.shape[0]
    com = np.ascontiguousarray(com, dtype=np.int64)
    dmax = max(int(np.count_nonzero(com, axis=1).max(initial=0)), 1)
    ccom = np.full((n, dmax), -1, dtype=np.int64)
    sizes = np.zeros((n, dmax), dtype=np.int64)
    deg = np.zeros(n, dtype=np.int64)
    _compact_kernel(com, ccom, sizes, deg)
    return ccom, deg, sizes


def random_orders(rng: np.random.Generator, rows: int, n: int) -> np.ndarray:
    """``(rows, n)`` int64: an independent random permutation of ``0 .. n-1`` per row."""
    return rng.permuted(np.broadcast_to(np.arange(n, dtype=np.int64), (rows, n)), axis=1)


def _random_phases(
    com: np.ndarray,
    seed: SeedLike,
    heap: bool,
    cutoff: float,
    slack: float,
    name: str,
    priority: bool = True,
) -> Schedule:
    rng = as_generator(seed)
    n = com.shape[0]
    ccom, deg, sizes = _compact(com)
    d = int(deg.max(initial=0))
    # Enough random rows for every phase one expects (d + log d w.h.p.); reused cyclically.
    rows = d + int(np.ceil(np.log2(max(d, 2)))) + 8
    orders = random_orders(rng, rows, n)
    start_keys = rng.integers(0, 2**62, size=(rows, n), dtype=np.int64)
    # RS_NH may split messages: the table holds 8 pieces per message on average (a budget over
    # all messages, not a cap on one) before giving up; RS_N sends each message whole.
    cap = int(deg.sum()) * (8 if heap else 1) + 1
    out = np.zeros((cap, 4), dtype=np.int64)
    t, phases = _rsn_kernel(
        ccom, deg.copy(), orders, start_keys, sizes, heap, cutoff, slack, out, priority
    )
    if deg.sum() and t >= cap:  # pragma: no cover - more pieces than the table holds
        raise RuntimeError(f"{name}: schedule table overflow ({cap} transfers)")
    out = out[:t]
    ph, src, dst, nb = (np.ascontiguousarray(c) for c in out.T)
    if not heap:
        # Whole messages only, written in (phase, src) order already: no sort, offsets 0.
        return Schedule(name, n, ph, src, dst, np.zeros_like(nb), nb, int(phases))
    # Offsets: the pieces of one message go in phase order, each after the previous.
    order = np.lexsort((ph, dst, src))
    nb_o = nb[order]
    key = src[order] * n + dst[order]
    csum = np.cumsum(nb_o) - nb_o
    first = np.r_[0, np.flatnonzero(np.diff(key)) + 1] if key.size else np.zeros(0, np.int64)
    start = np.repeat(csum[first], np.diff(np.r_[first, key.size]))
    offset = np.empty_like(nb)
    offset[order] = csum - start
    return _sorted(name, n, ph, src, dst, offset, nb, phases)


def schedule_rsn(com: np.ndarray, seed: SeedLike, *, priority: bool = True) -> Schedule:
    """RS_N: random partial permutations until every message is scheduled (figure 4).

    With ``priority`` (default) a phase visits the senders with the most messages left
    first (ties in the phase's random order): over 1,000 random d-regular patterns this keeps
    every schedule within ``d + log2 d + 1`` phases, which the purely random order (figure 4
    as printed, ``priority=False``) misses about once in 400 patterns at d = 24.
    """
    return _random_phases(com, seed, False, 1.0, 1.0, "rsn", priority)


def schedule_rsnh(
    com: np.ndarray, seed: SeedLike, *, cutoff: float = 0.75, slack: float = 2.0
) -> Schedule:
    """RS_NH: largest message first, cut at ``slack`` x the ``cutoff`` quantile of the phase."""
    return _random_phases(com, seed, True, cutoff, slack, "rsnh")


#: One registry: name -> schedule function ``(com, seed) -> Schedule``.
SCHEDULES: dict[str, Callable[[np.ndarray, SeedLike], Schedule]] = {
    "ac": schedule_ac,
    "lp": schedule_lp,
    "rsn": schedule_rsn,
    "rsnh": schedule_rsnh,
}


def make_schedule(pattern: Pattern | np.ndarray, algorithm: str, *, seed: SeedLike) -> Schedule:
    """The schedule of ``algorithm`` (one of :data:`TABLE_ALGORITHMS`) for a pattern."""
    com = pattern.com if isinstance(pattern, Pattern) else np.asarray(pattern, dtype=np.int64)
    try:
        fn = SCHEDULES[algorithm]
    except KeyError:
        raise ValueError(f"unknown schedule {algorithm!r}; one of {', '.join(SCHEDULES)}") from None
    return fn(com, seed)


def check_schedule(schedule: Schedule, com: np.ndarray) -> None:
    """Raise AssertionError unless the schedule moves every byte of ``com`` exactly once and
    (for synchronous schedules) no rank sends or receives twice in a phase."""
    n = com.shape[0]
    got = np.zeros((n, n), dtype=np.int64)
    np.add.at(got, (schedule.src, schedule.dst), schedule.nbytes)
    if not np.array_equal(got, com):
        raise AssertionError("schedule bytes differ from COM")
    if (schedule.nbytes <= 0).any():
        raise AssertionError("empty transfer in schedule")
    # Pieces of a message tile [0, size) without overlap.
    order = np.lexsort((schedule.offset, schedule.dst, schedule.src))
    s, d = schedule.src[order], schedule.dst[order]
    off, nb = schedule.offset[order], schedule.nbytes[order]
    same = (s[1:] == s[:-1]) & (d[1:] == d[:-1])
    if not np.array_equal(off[1:][same], (off + nb)[:-1][same]):
        raise AssertionError("message pieces overlap or leave gaps")
    if ((off == 0) != np.r_[True, ~same]).any():
        raise AssertionError("a message does not start at byte 0")
    if schedule.synchronous:
        for who in (schedule.src, schedule.dst):
            key = schedule.phase * n + who
            if np.unique(key).size != key.size:
                raise AssertionError("a rank is used twice in one phase (node contention)")
