"""Plan once, apply every step: the halo traffic of one rank as index arrays (Cabana's halo).

For a placement, every rank computes, for each partition it owns and each neighbour:

- where the halo buffer goes (a partition of this rank, or another rank), and in which order
  the buffers of one rank pair travel in their single message (sorted by receiving
  partition, then by the sender's slot in the receiver's :func:`neighbour_offsets` order; both
  ends enumerate the same pairs, so no per-buffer header is needed);
- for grid exchanges (no custom ``pack``/``unpack``), the flat cell indices of the slabs in a
  rank-wide *arena* holding every local partition's copy of the field: one gather per
  destination rank packs a whole message, one scatter per source rank unpacks it, one copy
  moves every halo between partitions of the same rank;
- per partition, how many other ranks it waits on (the readiness counters).

A *graph* exchange (:class:`~grapeshot.model.program.GraphExchange`: payloads to arbitrary
partitions) is planned by :func:`graph_plan`: which of the rank's buffers stay local, which go
in the one message to each other rank, and which ranks send to it.

Everything here is pure numpy over one process; the runner (:mod:`grapeshot.runtime.rank_plan`,
:mod:`grapeshot.runtime.halos`) only applies it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cache, cached_property, lru_cache
from typing import NamedTuple

import numpy as np
from numba import njit

from grapeshot.model.groups import counting_order
from grapeshot.model.program import Block, Box, Offset, halo_slab, neighbour_offsets


class Link(NamedTuple):
    """A halo buffer from partition ``src`` to partition ``dst``.

    ``offset`` is where ``dst`` lies seen from ``src``; ``slot`` is the index of ``-offset`` in
    ``dst``'s :func:`neighbour_offsets` order (where the buffer lands). A named tuple: a
    re-plan makes thousands (a frozen dataclass took 1.5 µs each).
    """

    src: int
    dst: int
    offset: Offset
    slot: int


class LinkArrays(NamedTuple):
    """Links as int64 arrays, one entry per link (a re-plan handles them without a Python
    object each): partitions ``src`` and ``dst``, and ``way``, the slot in
    :func:`neighbour_offsets` order of the offset where ``dst`` lies seen from ``src`` (the
    buffer lands in ``dst``'s slot of the opposite offset, ``len(offsets) - 1 - way``)."""

    src: np.ndarray
    dst: np.ndarray
    way: np.ndarray


@dataclass
class RankLinks:
    """Every link that touches the partitions of one rank, grouped as the runtime uses them.

    Attributes
    ----------
    local_links
        Links between two partitions of this rank, in ``(src, offset)`` order.
    send_links
        ``{rank: links}`` from this rank's partitions to that rank's, in message order,
        ranks ascending.
    recv_links
        ``{rank: links}`` from that rank's partitions to this rank's, in message order.
    waits_on
        bool, ``(len(recv), L)``: whether local partition ``i`` (position in ``local_parts``)
        gets a buffer from the ``j``-th rank of ``recv`` (sorted rank order).

    :attr:`local`, :attr:`send` and :attr:`recv` give the same links as :class:`Link` lists.
    """

    rank: int
    local_parts: np.ndarray
    local_links: LinkArrays
    send_links: dict[int, LinkArrays]
    recv_links: dict[int, LinkArrays]
    waits_on: np.ndarray = field(repr=False)
    #: :func:`neighbour_offsets` of the grid: what a ``way`` indexes.
    offsets: tuple[Offset, ...] = field(repr=False)

    @cached_property
    def local(self) -> list[Link]:
        """:attr:`local_links` as :class:`Link` objects."""
        return _links(self.local_links, self.offsets)

    @cached_property
    def send(self) -> dict[int, list[Link]]:
        """:attr:`send_links` as :class:`Link` lists."""
        return {r: _links(la, self.offsets) for r, la in self.send_links.items()}

    @cached_property
    def recv(self) -> dict[int, list[Link]]:
        """:attr:`recv_links` as :class:`Link` lists."""
        return {r: _links(la, self.offsets) for r, la in self.recv_links.items()}

    @property
    def peers(self) -> list[int]:
        """Ranks this rank exchanges with, ascending."""
        return sorted(set(self.send_links) | set(self.recv_links))

    @property
    def sources(self) -> list[int]:
        """Ranks this rank receives from, ascending (the rows of ``waits_on``)."""
        return sorted(self.recv_links)


def rank_links(
    boxes: list[Box], node_of: np.ndarray, rank: int, offsets: tuple[Offset, ...] | None = None
) -> RankLinks:
    """The links of ``rank`` under placement ``node_of`` (int array ``(P,)``: rank per part).

    ``offsets``: the neighbours that exchange (default every one; the faces alone when no
    exchange of the program needs its corners). A link's ``slot`` is always its place in
    the full :func:`neighbour_offsets` order. All links at once over the grid's neighbour
    table (a rebalance re-plans with this: a loop over partitions and offsets cost 3 ms at
    128 partitions a rank).
    """
    node_of = np.asarray(node_of)
    every = neighbour_offsets(len(boxes[0].parts_shape))
    slot_of = {o: i for i, o in enumerate(every)}
    cols = np.array([slot_of[tuple(o)] for o in (every if offsets is None else offsets)], np.int64)
    back = _back_slots(len(every))
    local_parts = np.flatnonzero(node_of == rank)
    q = neighbour_table(boxes[0].parts_shape, boxes[0].periodic)[local_parts][:, cols]
    row, col = np.nonzero(q >= 0)  # (partition, offset) order
    src, dst, way = local_parts[row], q[row, col], cols[col]
    there = node_of[dst]
    mine = there == rank
    local = LinkArrays(src[mine], dst[mine], way[mine])
    send: dict[int, LinkArrays] = {}
    recv: dict[int, LinkArrays] = {}
    far = np.flatnonzero(~mine)
    ranks, first = np.unique(there[far], return_index=True)
    waits: dict[int, np.ndarray] = {}  # the local partitions each source rank sends to
    for r in ranks[np.argsort(first, kind="stable")].tolist():  # as first met
        sel = far[there[far] == r]
        waits[r] = row[sel]
        # Message order: by receiving partition, then by the slot the buffer lands in.
        out = sel[np.lexsort((back[way[sel]], dst[sel]))]
        send[r] = LinkArrays(src[out], dst[out], way[out])
        # What the neighbours send back: the same pairs seen from the other side.
        inc = sel[np.lexsort((way[sel], src[sel]))]
        recv[r] = LinkArrays(dst[inc], src[inc], back[way[inc]])
    sources = sorted(recv)
    waits_on = np.zeros((len(sources), len(local_parts)), dtype=bool)
    for j, r in enumerate(sources):
        waits_on[j, waits[r]] = True
    return RankLinks(
        rank, local_parts, local, dict(sorted(send.items())), recv, waits_on, tuple(every)
    )


def _links(links: LinkArrays, every: tuple[Offset, ...]) -> list[Link]:
    """``Link(src, dst, offset of way, slot of the opposite offset)`` for each entry."""
    back = _back_slots(len(every))
    return [
        Link(s, d, every[k], b)
        for s, d, k, b in zip(
            links.src.tolist(),
            links.dst.tolist(),
            links.way.tolist(),
            back[links.way].tolist(),
            strict=True,
        )
    ]


@cache
def _back_slots(n: int) -> np.ndarray:
    """int64 ``(n,)``: the slot of the opposite of each :func:`neighbour_offsets` slot (the
    order is symmetric: slot ``k``'s opposite is ``n - 1 - k``)."""
    return np.arange(n - 1, -1, -1, dtype=np.int64)


@lru_cache(maxsize=8)
def neighbour_table(parts_shape: tuple[int, ...], periodic: tuple[bool, ...] = ()) -> np.ndarray:
    """int64 ``(P, 3**d - 1)``: the partition at each :func:`neighbour_offsets` offset of
    every partition of the grid ``parts_shape``, ``-1`` past the domain's edge (what
    :meth:`Box.neighbour` gives one at a time: a periodic axis wraps)."""
    ndim = len(parts_shape)
    shape = np.array(parts_shape, dtype=np.int64)[:, None, None]
    steps = np.array(neighbour_offsets(ndim), dtype=np.int64).T[:, None, :]  # (d, 1, K)
    at = np.indices(parts_shape).reshape(ndim, -1)[:, :, None] + steps  # (d, P, K)
    wraps = np.array([bool(periodic) and bool(periodic[a]) for a in range(ndim)])
    past = ((at < 0) | (at >= shape)) & ~wraps[:, None, None]
    table = np.ravel_multi_index(tuple(at % shape), parts_shape).astype(np.int64)
    table[past.any(axis=0)] = -1
    table.flags.writeable = False
    return table


class Arena:
    """One flat array per grid field holding the field of every local partition.

    From construction on, ``block[name]`` of each local partition is a view of its segment, so
    kernels that write the field in place keep the arena current and halos move by fancy
    indexing over the arena. A kernel that rebinds ``block[name]`` to a new array is caught by
    :meth:`refresh`, which copies the new array in and restores the view.

    The float64 fields lie one after the other in one array, ``shared`` (``flat[name]`` is
    ``shared[offset[name]:]`` up to its capacity), so that one index space reaches all of
    them: a task's halo copies (:mod:`grapeshot.model.task_halos`) move every field in one
    loop. Segments need not be in partition order nor leave no gap: everything reads a
    partition's segment at its ``base``.

    Given the ``previous`` arena of this rank (a rebalance), the partitions that stay keep
    their segments, untouched, and each arriving partition takes a free segment of its size
    (one that a partition left, in this rebalance or an earlier one) or room at the end of its
    field's region: only the arrivals are copied. Where they do not fit, the arena is built
    anew, with :data:`SLACK` room for the next arrivals. A partition stays where its block
    still holds ``previous``'s views; with ``held`` (no kernel rebinds an array: every phase
    batched) every partition both arenas hold stays, unchecked.
    """

    #: Room a rebuilt arena keeps beyond what its partitions fill, as a fraction of it.
    SLACK = 0.125

    def __init__(
        self,
        names: tuple[str, ...],
        parts: np.ndarray,
        blocks: dict[int, Block],
        previous: Arena | None = None,
        held: bool = False,
    ):
        self.names = names
        self.parts = [int(p) for p in parts]
        self._bases: dict[str, np.ndarray] = {}
        self._sorted: tuple[np.ndarray, np.ndarray] | None = None
        self._kinds: dict[str, tuple[np.ndarray, list[tuple[int, ...]]]] = {}
        placed = None
        if previous is not None and previous.names == names:
            placed = self._places(previous, blocks, held)
        if placed is None:
            columns = {name: [np.asarray(blocks[p][name]) for p in self.parts] for name in names}
            for name, arrays in columns.items():
                if len({a.dtype for a in arrays}) > 1:
                    raise ValueError(f"grid field {name!r} has several dtypes across partitions")
            self._build(columns, slack=0.0 if previous is None else self.SLACK)
            #: ``{name: {size: [base, ...]}}``: segments below ``end`` no partition holds.
            self.free: dict[str, dict[int, list[int]]] = {name: {} for name in names}
            kept: dict[str, set[int]] = {name: set() for name in names}
            arriving = {name: list(zip(self.parts, columns[name], strict=True)) for name in names}
            #: ``{name: ({partition: kind}, shapes)}``: the shapes of the segments checked
            #: against their boxes (:meth:`shape_kinds`) and each one's; a partition that
            #: stays keeps its entry.
            self._shapes: dict[str, tuple[dict[int, int], list[tuple[int, ...]]]] = {
                name: ({}, []) for name in names
            }
        else:
            self.base, kept, self.end, self.free, arriving = placed
            self.shared, self.offset = previous.shared, previous.offset  # type: ignore[union-attr]
            self.flat, self.capacity = previous.flat, previous.capacity  # type: ignore[union-attr]
            self._shapes = previous._shapes  # type: ignore[union-attr]
        self.views: dict[str, dict[int, np.ndarray]] = {}
        for name in names:
            flat, at, stay = self.flat[name], self.base[name], kept[name]
            kind_of = self._shapes[name][0]
            old = previous.views[name] if stay else {}  # type: ignore[union-attr]
            # The previous arena's own views of those that stay, where they were; the
            # arrivals' fields copied in (a new arena was filled by _build already).
            self.views[name] = views = {p: old[p] for p in stay}
            for p, array in arriving[name]:
                kind_of.pop(p, None)
                view = flat[at[p] : at[p] + array.size].reshape(array.shape)
                if placed is not None:
                    view[...] = array
                views[p] = blocks[p][name] = view

    def _build(self, columns: dict[str, list[np.ndarray]], slack: float) -> None:
        """Lay every partition's fields out one after the other in new arrays, with ``slack``
        of each field's size free at its end."""
        shared_names = [n for n, a in columns.items() if a and a[0].dtype == np.float64]
        used = {n: sum(a.size for a in arrays) for n, arrays in columns.items()}
        self.capacity = {n: used[n] + int(used[n] * slack) for n in columns}
        # numpy's own memory: its large arrays get huge pages, which the kernels run faster on
        # (4 KiB pages mapped at once, runtime/populated, cost them 20% on rank 0's arena).
        self.shared = np.empty(sum(self.capacity[n] for n in shared_names), dtype=np.float64)
        self.offset: dict[str, int] = {}
        at = 0
        for name in shared_names:
            self.offset[name] = at
            at += self.capacity[name]
        self.flat: dict[str, np.ndarray] = {}
        self.base: dict[str, dict[int, int]] = {}
        #: ``{name: where new segments may start}``: no segment ever used lies beyond it.
        self.end: dict[str, int] = {}
        for name, arrays in columns.items():
            if name in self.offset:
                off = self.offset[name]
                flat = self.shared[off : off + self.capacity[name]]
            else:
                flat = np.empty(self.capacity[name], dtype=arrays[0].dtype if arrays else float)
            self.flat[name] = flat
            starts = np.concatenate([[0], np.cumsum([a.size for a in arrays], dtype=np.int64)])
            if arrays:  # one copy of every partition's field
                np.concatenate([a.reshape(-1) for a in arrays], out=flat[: int(starts[-1])])
            self.base[name] = dict(zip(self.parts, starts.tolist(), strict=False))
            self.end[name] = int(starts[-1])

    def _places(
        self, previous: Arena, blocks: dict[int, Block], held: bool
    ) -> (
        tuple[
            dict[str, dict[int, int]],
            dict[str, set[int]],
            dict[str, int],
            dict[str, dict[int, list[int]]],
            dict[str, list[tuple[int, np.ndarray]]],
        ]
        | None
    ):
        """Where each partition's segment goes in ``previous``'s arrays, ``{name: {partition:
        base}}``, which partitions keep theirs, where each field's segments now end, the
        segments left free and the arrivals' ``(partition, array)``; ``None`` if the arrivals
        do not fit or have another dtype, or an array to copy in lies in ``previous``'s
        memory (a kernel that rebound one field to another's array: copying segment by
        segment could overwrite it before it is read). With ``held``, the partitions
        ``previous`` held still hold its views (no kernel rebinds an array: every phase
        batched), so they are not checked one by one."""
        places: dict[str, dict[int, int]] = {}
        kept: dict[str, set[int]] = {}
        ends: dict[str, int] = {}
        frees: dict[str, dict[int, list[int]]] = {}
        arriving: dict[str, list[tuple[int, np.ndarray]]] = {}
        ids = set(self.parts)
        for name in self.names:
            old, views = previous.base[name], previous.views[name]
            if held:
                stay = ids & old.keys()
            else:
                stay = {p for p in self.parts if blocks[p][name] is views.get(p)}
            dtype = previous.flat[name].dtype
            arrivals = [(p, np.asarray(blocks[p][name])) for p in self.parts if p not in stay]
            if any(a.dtype != dtype for _, a in arrivals):
                return None
            # The segments free already, and those of the partitions that left (or whose
            # array was replaced), by size: a rank that gave many partitions away takes
            # others back into their room.
            free = {size: list(bases) for size, bases in previous.free[name].items()}
            at = dict(old)
            for p in sorted(old.keys() - stay):
                free.setdefault(views[p].size, []).append(at.pop(p))
            end = previous.end[name]
            for p, a in arrivals:
                if any(np.may_share_memory(a, f) for f in previous.flat.values()):
                    return None
                if free.get(a.size):
                    at[p] = free[a.size].pop()
                elif end + a.size <= previous.capacity[name]:
                    at[p], end = end, end + a.size
                else:
                    return None
            places[name], kept[name], ends[name], frees[name] = at, stay, end, free
            arriving[name] = arrivals
        return places, kept, ends, frees, arriving

    def positions(self, parts: np.ndarray) -> np.ndarray:
        """Where each of ``parts`` (partition ids) is among the arena's partitions."""
        if self._sorted is None:
            ids = np.asarray(self.parts, dtype=np.int64)
            sort = np.argsort(ids, kind="stable")
            self._sorted = (ids[sort], sort)
        ids, sort = self._sorted
        return sort[np.searchsorted(ids, parts)]

    def bases(self, name: str) -> np.ndarray:
        """int64 ``(L,)``: where each partition's segment of field ``name`` starts."""
        cached = self._bases
        if name not in cached:
            base = self.base[name]
            cached[name] = np.fromiter(map(base.__getitem__, self.parts), np.int64, len(self.parts))
        return cached[name]

    def shape_kinds(self, name: str, boxes: list[Box]) -> tuple[np.ndarray, list[tuple]]:
        """``(kind of each partition, shapes)``: the distinct shapes of field ``name`` and
        which one each partition's array has; checks each starts with its box's padded
        shape (what halo slabs index). A partition that stayed from the arena before keeps
        its kind (a re-plan checks the arrivals alone)."""
        cached = self._kinds
        if name not in cached:
            kind_of, shapes = self._shapes[name]
            views = self.views[name]
            for p in self.parts:
                if p in kind_of:
                    continue
                shape, padded = views[p].shape, boxes[p].padded_shape
                if shape[: len(padded)] != padded:
                    raise ValueError(
                        f"partition {p}: grid field of shape {shape} does not start with "
                        f"the padded box shape {padded}"
                    )
                if shape not in shapes:
                    shapes.append(shape)
                kind_of[p] = shapes.index(shape)
            kinds = np.fromiter(map(kind_of.__getitem__, self.parts), np.int64, len(self.parts))
            cached[name] = (kinds, list(shapes))
        return cached[name]

    def same_layout(self, a: str, b: str, boxes: list[Box]) -> bool:
        """Whether fields ``a`` and ``b`` lie alike in their flat arrays: one dtype, every
        partition's segment at the same base and of the same shape (their halos' cells are
        then the same indices)."""
        return a == b or (
            self.flat[a].dtype == self.flat[b].dtype
            and np.array_equal(self.bases(a), self.bases(b))
            and self.shape_kinds(a, boxes)[1] == self.shape_kinds(b, boxes)[1]
            and np.array_equal(self.shape_kinds(a, boxes)[0], self.shape_kinds(b, boxes)[0])
        )

    def refresh(self, blocks: dict[int, Block], name: str) -> None:
        """Bring back into the arena any ``block[name]`` a kernel replaced by a new array."""
        views = self.views[name]
        for p in self.parts:
            current = blocks[p][name]
            view = views[p]
            if current is not view:
                if np.shape(current) != view.shape:
                    raise ValueError(
                        f"partition {p}: grid field {name!r} changed shape from {view.shape} "
                        f"to {np.shape(current)}; exchanged grid fields keep their shape"
                    )
                view[...] = current
                blocks[p][name] = view


@lru_cache(maxsize=4096)
def _slab_of_shape(shape, interior, g, offset, width, ghost) -> np.ndarray:
    # Partitions of one grid mostly share their shape: each slab is computed once per shape.
    probe = Box(0, (0,) * len(interior), (0,) * len(interior), interior, (1,), interior, g)
    sl = halo_slab(probe, offset, width, ghost_side=ghost)
    idx = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)[sl].ravel()
    idx.flags.writeable = False
    return idx


class _Slabs(NamedTuple):
    """Halo slabs as the few distinct ones a grid's partitions have, each shifted to its
    partition: slab ``e`` is ``_slab_of_shape(*keys[which[e]]) + base[e]`` (indices into
    ``arena.flat[name]``), of ``sizes[e]`` cells."""

    keys: list[tuple]
    which: np.ndarray
    base: np.ndarray
    sizes: np.ndarray

    def cells(self) -> np.ndarray:
        """The cells of every slab, one after the other."""
        if self.which.size == 0:
            return np.zeros(0, dtype=np.int64)
        pieces = [_slab_of_shape(*key) for key in self.keys]
        lengths = np.array([a.size for a in pieces], dtype=np.int64)
        table = np.concatenate(pieces)
        return _shifted_chunks(table, _starts(lengths)[self.which], self.sizes, self.base)


def _slabs(
    arena: Arena,
    boxes: list[Box],
    width: int,
    slabs: tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray],
    ghost: bool,
) -> _Slabs:
    """The slabs ``slabs`` of the rank's ``arena``.

    ``slabs`` is ``(names, name, part, way)``: per slab (int64 arrays, one entry each), the
    index of its field in ``names``, its partition and the slot of its side in
    :func:`neighbour_offsets` order (the interior next to that side, or with ``ghost`` the
    ghost cells beyond it).

    A grid's partitions have a few shapes, so the slabs are a few arrays: each is computed
    once and every slab is that array plus its partition's base, found with numpy gathers for
    all of them at once (a Python loop over the slabs cost a second for 4,096 partitions).
    """
    names, name_id, parts, offsets = slabs
    n = parts.size
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return _Slabs([], empty, empty, empty)
    ndim = boxes[0].ndim
    g = boxes[0].ghost
    every = neighbour_offsets(ndim)
    at = arena.positions(parts)
    kind = np.zeros(n, dtype=np.int64)
    base = np.zeros(n, dtype=np.int64)
    shapes: list[list[tuple[int, ...]]] = []
    for j, name in enumerate(names):
        mine = name_id == j
        kinds, table = arena.shape_kinds(name, boxes)
        kind[mine] = kinds[at[mine]]
        base[mine] = arena.bases(name)[at[mine]]
        shapes.append(table)
    n_kinds = max(len(t) for t in shapes)
    key = (name_id * n_kinds + kind) * len(every) + offsets
    # The distinct keys and each slab's among them (a few in a small range: no sort).
    seen = np.zeros(len(names) * n_kinds * len(every), dtype=np.int64)
    seen[key] = 1
    unique = np.flatnonzero(seen)
    which = (np.cumsum(seen) - 1)[key]
    keys = []
    for k in unique.tolist():
        name_k, rest = divmod(k, n_kinds * len(every))
        kind_k, off_k = divmod(rest, len(every))
        shape = shapes[name_k][kind_k]
        keys.append((shape, _interior(shape, ndim, g), g, every[off_k], width, ghost))
    lengths = np.array([_slab_of_shape(*key).size for key in keys], dtype=np.int64)
    return _Slabs(keys, which, base, lengths[which])


@lru_cache(maxsize=4096)
def _runs_of_shape(shape, interior, g, offset, width, ghost) -> np.ndarray:
    """:func:`strided_runs`' rows ``(first, step, count)`` of :func:`_slab_of_shape`."""
    cells = _slab_of_shape(shape, interior, g, offset, width, ghost)
    rows, _ = strided_runs(cells, np.array([0, cells.size], dtype=np.int64))
    rows = np.ascontiguousarray(rows[:, [0, 1, 4]])
    rows.flags.writeable = False
    return rows


@lru_cache(maxsize=4096)
def _pair_runs(src: tuple, dst: tuple) -> np.ndarray:
    """:func:`strided_runs`' rows ``(first, step, other first, other step, count)`` copying
    the slab of :func:`_slab_of_shape` arguments ``src`` into that of ``dst`` (as long)."""
    a, b = _slab_of_shape(*src), _slab_of_shape(*dst)
    rows, _ = strided_runs(a, np.array([0, a.size], dtype=np.int64), b)
    rows.flags.writeable = False
    return rows


def _sides(
    names: tuple[str, ...], links: LinkArrays, ndim: int, ghost: bool
) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray]:
    """The slabs of ``links`` (of a ``ndim``-D grid) for each of ``names``
    (:func:`_slabs`' ``slabs``): the sender's interior, or with ``ghost`` the
    receiver's ghosts; every link of one field after the other."""
    if ghost:
        parts, ways = links.dst, _back_slots(3**ndim - 1)[links.way]
    else:
        parts, ways = links.src, links.way
    k, m = len(names), parts.size
    return names, np.repeat(np.arange(k), m), np.tile(parts, k), np.tile(ways, k)


@njit(cache=True)
def _shifted_chunks(
    table: np.ndarray, first: np.ndarray, sizes: np.ndarray, shift: np.ndarray
) -> np.ndarray:
    """``table[first[e]:first[e] + sizes[e]] + shift[e]`` for every ``e``, one after the
    other: one pass over the cells (numpy's repeat-and-gather took six, 4 ms of a re-plan's
    fused copies at 250 partitions a rank)."""
    out = np.empty(sizes.sum(), dtype=np.int64)
    k = 0
    for e in range(sizes.size):
        a, s = first[e], shift[e]
        for j in range(sizes[e]):
            out[k] = table[a + j] + s
            k += 1
    return out


def _interior(shape: tuple[int, ...], ndim: int, ghost: int) -> tuple[int, ...]:
    return tuple(n - 2 * ghost for n in shape[:ndim])


def _starts(sizes: np.ndarray) -> np.ndarray:
    """Where each of consecutive chunks of ``sizes`` starts."""
    return (np.cumsum(sizes) - sizes).astype(np.int64)


class _Side:
    """One side of a grid exchange's slabs on a rank: the senders' interiors of its local
    links and of each message it sends, or the receivers' ghosts of its local links and of
    each message it receives (``groups``: the links of each, in order), every group's slabs
    field after field. Their cells are made on first use: a rank whose tasks copy their own
    halos (:mod:`grapeshot.runtime.fusion`) needs their runs alone, which come from the few
    distinct slabs (making every slab's cells to cut them into runs again was 0.2-0.4 ms of
    a re-plan at 16×16 on 2 ranks)."""

    def __init__(self, names: tuple[str, ...], slabs: _Slabs, groups: list[int]) -> None:
        self.names, self.slabs, self.groups = names, slabs, groups
        self._tables: list[dict[str, np.ndarray]] | None = None
        self._field_cells: dict[int, list[int]] = {}
        self._sizes: list[np.ndarray] | None = None

    def field_cells(self, group: int) -> list[int]:
        """The cells of each field over all the slabs of group ``group``."""
        cells = self._field_cells.get(group)
        if cells is None:
            sizes = self.sizes()[group].reshape(len(self.names), self.groups[group])
            cells = self._field_cells[group] = sizes.sum(axis=1).tolist()
        return cells

    def sizes(self) -> list[np.ndarray]:
        """Per group, int64 ``(len(names) * links,)``: the cells of each slab, field after
        field."""
        if self._sizes is None:
            bounds = np.cumsum([len(self.names) * m for m in self.groups], dtype=np.int64)
            self._sizes = np.split(self.slabs.sizes, bounds[:-1])
        return self._sizes

    def tables(self) -> list[dict[str, np.ndarray]]:
        """Per group, ``{name: cells}``: its slabs' cells of each field, one after the other."""
        if self._tables is None:
            names, cells = self.names, self.slabs.cells()
            tables, cell_at = [], 0
            for group in range(len(self.groups)):
                ends = (cell_at + np.cumsum(self.field_cells(group))).tolist()
                tables.append(
                    {
                        name: cells[lo:hi]
                        for name, lo, hi in zip(names, [cell_at, *ends[:-1]], ends, strict=True)
                    }
                )
                cell_at = ends[-1]
            self._tables = tables
        return self._tables


@dataclass
class GridPlan:
    """Index arrays of one grid exchange on one rank, per field.

    ``local_src``/``local_dst`` copy every local halo inside the arena; ``send[r]`` gathers the
    message to rank ``r`` and ``recv[r]`` scatters the one from rank ``r``, fields one after
    the other in ``names`` order (made on first use). ``sent`` is every link this rank sends
    (local ones, then each rank's) with ``sent_bytes``, int64: its bytes in one round;
    ``local_sizes``, int64 ``(len(names), local links)``: the cells of each local link's slab
    of each field; ``send_sizes[r]``, ``recv_sizes[r]``, int64 ``(len(names) * links to or
    from r,)``: the cells of each slab of the message, field after field (their keys are the
    ranks this rank sends to and receives from).
    """

    names: tuple[str, ...]
    width: int
    local_sizes: np.ndarray
    sent: LinkArrays
    sent_bytes: np.ndarray
    send_sizes: dict[int, np.ndarray]
    recv_sizes: dict[int, np.ndarray]
    #: The senders' and the receivers' sides, their fields ``sides[0].names`` standing for
    #: :attr:`names` one for one (a plan :meth:`renamed` shares its original's).
    sides: tuple[_Side, _Side] = field(repr=False)

    def _renamed(self, table: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return dict(zip(self.names, table.values(), strict=True))

    @cached_property
    def local_src(self) -> dict[str, np.ndarray]:
        """``{name: cells}`` the local halos are copied from."""
        return self._renamed(self.sides[0].tables()[0])

    @cached_property
    def local_dst(self) -> dict[str, np.ndarray]:
        """``{name: cells}`` the local halos are copied to."""
        return self._renamed(self.sides[1].tables()[0])

    @cached_property
    def send(self) -> dict[int, dict[str, np.ndarray]]:
        """``{rank: {name: cells}}`` gathered into the message to each rank."""
        tables = self.sides[0].tables()[1:]
        return {r: self._renamed(t) for r, t in zip(self.send_sizes, tables, strict=True)}

    @cached_property
    def recv(self) -> dict[int, dict[str, np.ndarray]]:
        """``{rank: {name: cells}}`` the message from each rank is scattered into."""
        tables = self.sides[1].tables()[1:]
        return {r: self._renamed(t) for r, t in zip(self.recv_sizes, tables, strict=True)}

    def make_cells(self, copies: bool, gathers: bool) -> None:
        """Make now the cells the rank will index itself (else made on first use, in a
        step): with ``copies`` those of its local copies and scatters, with ``gathers`` those
        of its gathers."""
        if copies or gathers:
            self.sides[0].tables()
        if copies:
            self.sides[1].tables()

    def renamed(self, names: tuple[str, ...]) -> GridPlan:
        """This plan's tables (shared, not copied) for fields ``names`` in place of
        :attr:`names`, one for one: fields that lie in the arena as these do."""
        return replace(self, names=names)

    def message_bytes(self, sending: bool, arena: Arena, r: int) -> int:
        """Payload bytes of the message to (``sending``) or from rank ``r`` (each field
        padded to 8)."""
        ranks = self.send_sizes if sending else self.recv_sizes
        group = 1 + list(ranks).index(r)  # after the local links
        total = 0
        cells = self.sides[0 if sending else 1].field_cells(group)
        for name, n in zip(self.names, cells, strict=True):
            n *= arena.flat[name].dtype.itemsize
            total += n + (-n) % 8
        return total


def pair_sums(src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray) -> dict[tuple[int, int], int]:
    """``{(src, dst): bytes}``: the ``nbytes`` of every link (int arrays ``(n,)``) summed by
    pair of partitions, in one sort (a dict update per link cost 0.5 ms a re-plan at 16×16).
    Two partitions neighbours on both sides of a periodic axis two partitions wide have two
    links: both halos count."""
    if src.size == 0:
        return {}
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    width = int(dst.max()) + 1
    pairs, where = np.unique(src * width + dst, return_inverse=True)
    sums = np.zeros(pairs.size, dtype=np.int64)
    np.add.at(sums, where.ravel(), np.asarray(nbytes, dtype=np.int64))
    keys = zip((pairs // width).tolist(), (pairs % width).tolist(), strict=True)
    return dict(zip(keys, sums.tolist(), strict=True))


def grid_plan(
    links: RankLinks,
    boxes: list[Box],
    arena: Arena,
    names: tuple[str, ...],
    width: int,
) -> GridPlan:
    """The :class:`GridPlan` of an exchange of ``names`` (``width`` cells) under ``links``."""
    ndim = boxes[0].ndim

    # Only local partitions' slabs are ever indexed: the sender gathers its interiors, the
    # receiver scatters into its ghosts. Every group of links of one side in one table (a
    # table's numpy calls cost more than its cells at a few hundred partitions a rank).
    def side(groups: list[LinkArrays], ghost: bool) -> _Side:
        sides = [_sides(names, g, ndim, ghost) for g in groups]
        slabs = (names, *(np.concatenate([side[i] for side in sides]) for i in (1, 2, 3)))
        return _Side(names, _slabs(arena, boxes, width, slabs, ghost), [g.src.size for g in groups])

    out = side([links.local_links, *links.send_links.values()], False)
    into = side([links.local_links, *links.recv_links.values()], True)
    local_sizes, *send_sizes = out.sizes()
    _, *recv_sizes = into.sizes()
    # Every link this rank sends, local then by rank: its bytes are its slabs' sizes.
    groups = [links.local_links, *links.send_links.values()]
    sent = LinkArrays(*(np.concatenate([g[i] for g in groups]) for i in range(3)))
    sent_bytes = np.zeros(sent.src.size, dtype=np.int64)
    for j, name in enumerate(names):
        sizes = [g.reshape(len(names), -1)[j] for g in (local_sizes, *send_sizes)]
        sent_bytes += np.concatenate(sizes) * arena.flat[name].itemsize
    return GridPlan(
        names,
        width,
        local_sizes.reshape(len(names), -1),
        sent,
        sent_bytes,
        dict(zip(links.send_links, send_sizes, strict=True)),
        dict(zip(links.recv_links, recv_sizes, strict=True)),
        (out, into),
    )


def grid_plans(
    links: RankLinks,
    boxes: list[Box],
    arena: Arena,
    exchanges: dict[int, tuple[tuple[str, ...], int]],
) -> dict[int, GridPlan]:
    """``{phase: GridPlan}`` of the grid ``exchanges`` (``{phase: (names, width)}``).

    An exchange whose fields lie in the arena as an earlier one's do (same width, and field
    by field the same dtype, segment bases and shapes: a ping-pong's ``u`` then ``v``) shares
    that plan's index arrays under its own names instead of computing them again (half of a
    two-phase program's plans, 0.5 ms of a re-plan at 16×16).
    """

    def alike(plan: GridPlan, names: tuple[str, ...], width: int) -> bool:
        return (
            plan.width == width
            and len(plan.names) == len(names)
            and all(arena.same_layout(a, b, boxes) for a, b in zip(plan.names, names, strict=True))
        )

    plans: dict[int, GridPlan] = {}
    for k, (names, width) in exchanges.items():
        like = next((plan for plan in plans.values() if alike(plan, names, width)), None)
        plans[k] = (
            grid_plan(links, boxes, arena, names, width) if like is None else like.renamed(names)
        )
    return plans


def message_layout(
    plan: GridPlan,
    sending: bool,
    arena: Arena,
    ranks: list[int],
    header_bytes: int,
) -> tuple[dict[int, int], int]:
    """Where each message of ``plan`` to (``sending``) or from ``ranks`` lies in one buffer.

    Returns ``({rank: byte offset}, total
    bytes)``: the messages one after the other in ``ranks`` order, each ``header_bytes`` and
    then its payload (sizes multiples of 8).
    """
    starts: dict[int, int] = {}
    at = 0
    for r in ranks:
        starts[r] = at
        at += header_bytes + plan.message_bytes(sending, arena, r)
    return starts, at


@njit(cache=True)
def _runs(a: np.ndarray, b: np.ndarray, ptr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The runs of the chunks ``a[ptr[k]:ptr[k + 1]]`` (with ``b`` alongside, if not empty):
    ``(rows, run_ptr)``, rows ``(a first, a step, b first, b step, count)``."""
    n = a.size
    paired = b.size == n
    rows = np.empty((max(n, 1), 5), dtype=np.int64)
    run_ptr = np.empty(ptr.size, dtype=np.int64)
    m = 0
    for k in range(ptr.size - 1):
        run_ptr[k] = m
        c = ptr[k]
        end = ptr[k + 1]
        while c < end:
            step_a = a[c + 1] - a[c] if c + 1 < end else 1
            step_b = (b[c + 1] - b[c] if c + 1 < end else 1) if paired else 0
            count = 1
            while (
                c + count < end
                and a[c + count] - a[c + count - 1] == step_a
                and (not paired or b[c + count] - b[c + count - 1] == step_b)
            ):
                count += 1
            rows[m, 0] = a[c]
            rows[m, 1] = step_a
            rows[m, 2] = b[c] if paired else 0
            rows[m, 3] = step_b
            rows[m, 4] = count
            m += 1
            c += count
    run_ptr[ptr.size - 1] = m
    return rows[:m].copy(), run_ptr


def strided_runs(
    cells: np.ndarray, ptr: np.ndarray, other: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The chunks ``cells[ptr[k]:ptr[k + 1]]`` cut into runs of evenly stepping cells.

    A halo slab's cells (C order) are a few such runs: one per row of a face, or one for a
    whole column (step: the row's length), so copying them reads no index per cell.

    Parameters
    ----------
    cells
        int64 cell indices, the chunks one after the other.
    ptr
        int64 ``(m + 1,)``: where each chunk starts in ``cells`` (CSR).
    other
        Optional int64, as long as ``cells``: the cells each one is copied to (or from); a
        run then steps evenly in both.

    Returns
    -------
    rows, run_ptr
        int64 ``(runs, 5)`` rows ``(first, step, other first, other step, count)`` (other
        columns 0 without ``other``), and ``(m + 1,)``: each chunk's range of rows. Together
        they list the same cells (pairs) in the same order.
    """
    cells = np.ascontiguousarray(cells, dtype=np.int64)
    paired = np.zeros(0, np.int64) if other is None else np.ascontiguousarray(other, np.int64)
    return _runs(cells, paired, np.ascontiguousarray(ptr, dtype=np.int64))


@dataclass(frozen=True, eq=False)
class MessagePieces:
    """Messages cut into one piece per link and field, grouped by local partition, before
    knowing where the messages lie (:func:`_message_pieces`).

    ``ptr`` (``L + 1``), ``lo``, ``hi`` and ``runs`` are :mod:`grapeshot.model.task_halos`'
    (``runs``: ``(first cell in arena.shared, step, count)``); ``which`` and ``rel`` are each
    piece's message (an index into ``ranks``) and its place in that message's payload
    (float64 units).
    """

    ptr: np.ndarray
    which: np.ndarray
    rel: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    runs: np.ndarray
    ranks: tuple[int, ...]

    def placed(self, starts: dict[int, int], header_bytes: int) -> tuple[np.ndarray, ...]:
        """``(ptr, at, lo, hi, runs)`` with the messages at byte offsets ``starts`` (each a
        header, then its payload): ``at``, where each piece starts (float64 units)."""
        payload = np.array([(starts[r] + header_bytes) // 8 for r in self.ranks], np.int64)
        at = payload[self.which] + self.rel if self.ranks else self.rel
        return self.ptr, at, self.lo, self.hi, self.runs

    def shifted(self, delta: int) -> MessagePieces:
        """The same pieces of fields lying ``delta`` cells further in ``arena.shared``."""
        runs = self.runs.copy()
        runs[:, 0] += delta
        return replace(self, runs=runs)


def _message_pieces(plan: GridPlan, links: RankLinks, arena: Arena, ghost: bool) -> MessagePieces:
    """Every message of ``plan`` this rank receives (``ghost``) or sends cut into one piece
    per link and field, grouped by the local partition of the piece's slab (the receiver's
    ghosts, or the sender's interior), in message order within each partition: the plan's
    own slabs (those of ``recv``/``send``), in ``arena.shared``.
    """
    groups = links.recv_links if ghost else links.send_links
    slabs = plan.sides[1 if ghost else 0].slabs
    names, ranks = plan.names, sorted(groups)
    n, f = len(links.local_parts), len(names)
    if not ranks:
        empty = np.zeros(0, dtype=np.int64)
        return MessagePieces(
            np.zeros(n + 1, dtype=np.int64), empty, empty, empty, empty,
            np.zeros((0, 3), np.int64), (),
        )  # fmt: skip
    # The side's slabs: the local links', then each group's in ``groups``' order, every
    # group field after field; a message holds each field's slabs over its links in turn.
    local = f * links.local_links.src.size
    begins = _starts(np.array([f * g.src.size for g in groups.values()])) + local
    begin = dict(zip(groups, begins.tolist(), strict=True))
    entry = np.concatenate([np.arange(f * groups[r].src.size) + begin[r] for r in ranks])
    ends = [groups[r].dst if ghost else groups[r].src for r in ranks]
    parts = np.concatenate([np.tile(e, f) for e in ends])
    which = np.repeat(np.arange(len(ranks)), [f * e.size for e in ends])
    field_at = np.array([arena.offset[name] for name in names], dtype=np.int64)
    shift = np.concatenate([np.repeat(field_at, e.size) for e in ends]) + slabs.base[entry]
    table, first, count = _run_table([_runs_of_shape(*key) for key in slabs.keys])
    ptr, which, rel, lo, hi, rows = _sorted_pieces(
        arena.positions(parts), which, slabs.sizes[entry], slabs.which[entry], shift,
        table, first, count, n,
    )  # fmt: skip
    return MessagePieces(ptr, which, rel, lo, hi, rows, tuple(ranks))


def _run_table(pieces: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The run rows ``pieces`` one after the other, where each starts and how many it has."""
    count = np.array([len(a) for a in pieces], dtype=np.int64)
    table = np.concatenate(pieces) if pieces else np.zeros((0, 3), dtype=np.int64)
    return table, _starts(count), count


@njit(cache=True)
def _sorted_pieces(position, which, sizes, key, shift, table, first, count, n_local):
    """:class:`MessagePieces`' arrays of pieces given in message order (``which``, the
    message of each, ascending): each piece's place in its message's payload, then the
    pieces grouped by their partition's ``position`` (stable), each with the runs of its
    distinct slab ``key`` moved by its ``shift``. One pass each (a numpy call per step cost
    more than the few hundred pieces of a re-plan)."""
    n = position.size
    rel = np.empty(n, dtype=np.int64)
    at = 0
    for e in range(n):
        if e > 0 and which[e] != which[e - 1]:
            at = 0
        rel[e] = at
        at += sizes[e]
    order, ptr = counting_order(position, n_local)
    total = 0
    for e in range(n):
        total += count[key[e]]
    rows = np.empty((total, 3), dtype=np.int64)
    lo = np.empty(n, dtype=np.int64)
    hi = np.empty(n, dtype=np.int64)
    which_s = np.empty(n, dtype=np.int64)
    rel_s = np.empty(n, dtype=np.int64)
    r = 0
    for j in range(n):
        e = order[j]
        which_s[j], rel_s[j], lo[j] = which[e], rel[e], r
        k = key[e]
        for t in range(first[k], first[k] + count[k]):
            rows[r, 0] = table[t, 0] + shift[e]
            rows[r, 1] = table[t, 1]
            rows[r, 2] = table[t, 2]
            r += 1
        hi[j] = r
    return ptr, which_s, rel_s, lo, hi, rows


def fused_halos(
    links: RankLinks,
    arena: Arena,
    plan: GridPlan,
    inbox_starts: dict[int, int],
    header_bytes: int,
) -> tuple[np.ndarray, ...] | None:
    """The tables by which tasks copy their own halos of the grid exchange ``plan``.

    Entries ``PAIR_PTR`` to ``PIECE_RUNS`` of :mod:`grapeshot.model.task_halos`' tuple
    (:data:`~grapeshot.model.task_halos.OWN_COPIES`), every cell in ``arena.shared``;
    ``inbox_starts`` is :func:`message_layout`'s for ``plan.recv``. ``None`` if a field of the
    exchange is not float64 (not in ``arena.shared``).
    """
    names = plan.names
    if any(name not in arena.offset for name in names):
        return None
    n, f = len(links.local_parts), len(names)
    local = links.local_links
    m = local.src.size
    # Each local link's slabs (the sides hold every local link of one field after the other,
    # first): from the sender's interior into the receiver's ghosts, as the runs of the few
    # distinct pairs of slabs.
    out, into = (side.slabs for side in plan.sides)
    width = len(into.keys)
    pairs, pair = np.unique(out.which[: f * m] * width + into.which[: f * m], return_inverse=True)
    table, first, count = _run_table(
        [_pair_runs(out.keys[k // width], into.keys[k % width]) for k in pairs.tolist()]
    )
    link_src, link_dst = arena.positions(local.src), arena.positions(local.dst)
    touch_ptr, touching, link_ptr, copies = _own_copies(
        pair.ravel(), out.base[: f * m], into.base[: f * m],
        np.array([arena.offset[name] for name in names], np.int64),
        table, first, count, link_src, link_dst, n,
    )  # fmt: skip
    return (
        touch_ptr,
        touching,
        link_src,
        link_dst,
        link_ptr,
        copies,
        *_message_pieces(plan, links, arena, ghost=True).placed(inbox_starts, header_bytes),
    )


@njit(cache=True)
def _own_copies(pair, src_base, dst_base, field_at, table, first, count, link_src, link_dst, n):
    """Entries ``PAIR_PTR`` to ``COPY_RUNS`` of the own copies' tables: each local link's
    copies, field after field (``pair[j * m + e]``: the distinct pair of slabs of link ``e``,
    field ``j``; its runs moved by the slabs' bases and the field's place), and per local
    partition the links touching it, ascending (a link within one partition once)."""
    m, f = link_src.size, field_at.size
    total = 0
    for e in range(pair.size):
        total += count[pair[e]]
    copies = np.empty((total, 5), dtype=np.int64)
    link_ptr = np.empty(m + 1, dtype=np.int64)
    r = 0
    for e in range(m):
        link_ptr[e] = r
        for j in range(f):
            c = j * m + e
            a, b = src_base[c] + field_at[j], dst_base[c] + field_at[j]
            k = pair[c]
            for t in range(first[k], first[k] + count[k]):
                copies[r, 0] = table[t, 0] + a
                copies[r, 1] = table[t, 1]
                copies[r, 2] = table[t, 2] + b
                copies[r, 3] = table[t, 3]
                copies[r, 4] = table[t, 4]
                r += 1
    link_ptr[m] = r
    touch_ptr = np.zeros(n + 1, dtype=np.int64)
    for e in range(m):
        touch_ptr[link_src[e] + 1] += 1
        if link_dst[e] != link_src[e]:
            touch_ptr[link_dst[e] + 1] += 1
    for i in range(n):
        touch_ptr[i + 1] += touch_ptr[i]
    fill = touch_ptr[:-1].copy()
    touching = np.empty(touch_ptr[n], dtype=np.int64)
    for e in range(m):  # ascending: each partition's links in order
        touching[fill[link_src[e]]] = e
        fill[link_src[e]] += 1
        if link_dst[e] != link_src[e]:
            touching[fill[link_dst[e]]] = e
            fill[link_dst[e]] += 1
    return touch_ptr, touching, link_ptr, copies


def pack_pieces(links: RankLinks, arena: Arena, plan: GridPlan) -> MessagePieces | None:
    """The pieces by which tasks pack their part of grid exchange ``plan``'s messages,
    before knowing where the messages go (the same for both rounds' outboxes): placed
    (:meth:`MessagePieces.placed`, with :func:`message_layout`'s starts for ``plan.send``),
    entries ``OUT_PTR`` to ``OUT_RUNS`` of :mod:`grapeshot.model.task_halos`' tuple
    (:data:`~grapeshot.model.task_halos.PACKS`). ``None`` if a field of the exchange is not
    float64."""
    if any(name not in arena.offset for name in plan.names):
        return None
    return _message_pieces(plan, links, arena, ghost=False)


def shifted_halos(tables: tuple[np.ndarray, ...], delta: int) -> tuple[np.ndarray, ...]:
    """:func:`fused_halos`' tables of fields lying ``delta`` cells further in
    ``arena.shared`` (the same links and messages, laid out alike: :meth:`Arena.same_layout`).
    """
    *head, copies, ptr, at, lo, hi, runs = tables
    copies, runs = copies.copy(), runs.copy()
    copies[:, [0, 2]] += delta
    runs[:, 0] += delta
    return (*head, copies, ptr, at, lo, hi, runs)


@cache
def _back(offset: Offset) -> Offset:
    return tuple(-x for x in offset)


@dataclass
class GraphPlan:
    """One graph exchange on one rank: ``(src, j, dst)`` = ``src``'s ``j``-th buffer to ``dst``.

    Attributes
    ----------
    local
        Buffers between two partitions of this rank, in ``(src, j)`` order.
    send
        ``{rank: entries}``: buffers from this rank's partitions to that rank's, in
        ``(src, j)`` order (the order of the items in their one message).
    sources
        Ranks this rank receives a message from each round, ascending.
    """

    local: list[tuple[int, int, int]]
    send: dict[int, list[tuple[int, int, int]]]
    sources: list[int]


def graph_plan(targets: list[tuple[int, ...]], node_of: np.ndarray, rank: int) -> GraphPlan:
    """The :class:`GraphPlan` of ``rank`` for destinations ``targets[p]`` of every partition
    under placement ``node_of`` (int array ``(P,)``: rank per partition)."""
    node_of = np.asarray(node_of)
    local: list[tuple[int, int, int]] = []
    send: dict[int, list[tuple[int, int, int]]] = {}
    sources: set[int] = set()
    for src, dsts in enumerate(targets):
        home = int(node_of[src])
        for j, dst in enumerate(dsts):
            there = int(node_of[dst])
            if home == rank and there == rank:
                local.append((src, j, dst))
            elif home == rank:
                send.setdefault(there, []).append((src, j, dst))
            elif there == rank:
                sources.add(home)
    return GraphPlan(local, dict(sorted(send.items())), sorted(sources))
