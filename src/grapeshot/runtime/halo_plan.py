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

Everything here is pure numpy over one process; :mod:`grapeshot.runtime.executor` only
applies it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from grapeshot.model.program import Block, Box, Offset, halo_slab, neighbour_offsets


@dataclass(frozen=True)
class Link:
    """A halo buffer from partition ``src`` to partition ``dst``.

    ``offset`` is where ``dst`` lies seen from ``src``; ``slot`` is the index of ``-offset`` in
    ``dst``'s :func:`neighbour_offsets` order (where the buffer lands).
    """

    src: int
    dst: int
    offset: Offset
    slot: int


@dataclass
class RankLinks:
    """Every link that touches the partitions of one rank, grouped as the runtime uses them.

    Attributes
    ----------
    local
        Links between two partitions of this rank, in ``(src, offset)`` order.
    send
        ``{rank: links}`` from this rank's partitions to that rank's, in message order.
    recv
        ``{rank: links}`` from that rank's partitions to this rank's, in message order.
    waits_on
        bool, ``(len(recv), L)``: whether local partition ``i`` (position in ``local_parts``)
        gets a buffer from the ``j``-th rank of ``recv`` (sorted rank order).
    """

    rank: int
    local_parts: np.ndarray
    local: list[Link]
    send: dict[int, list[Link]]
    recv: dict[int, list[Link]]
    waits_on: np.ndarray = field(repr=False)

    @property
    def peers(self) -> list[int]:
        """Ranks this rank exchanges with, ascending."""
        return sorted(set(self.send) | set(self.recv))

    @property
    def sources(self) -> list[int]:
        """Ranks this rank receives from, ascending (the rows of ``waits_on``)."""
        return sorted(self.recv)


def _message_order(link: Link) -> tuple[int, int]:
    return (link.dst, link.slot)


def rank_links(boxes: list[Box], node_of: np.ndarray, rank: int) -> RankLinks:
    """The links of ``rank`` under placement ``node_of`` (int array ``(P,)``: rank per part)."""
    node_of = np.asarray(node_of)
    ndim = len(boxes[0].parts_shape)
    offsets = neighbour_offsets(ndim)
    slot_of = {o: i for i, o in enumerate(offsets)}
    local_parts = np.flatnonzero(node_of == rank)
    position = {int(p): i for i, p in enumerate(local_parts)}
    local: list[Link] = []
    send: dict[int, list[Link]] = {}
    recv: dict[int, list[Link]] = {}
    for p in local_parts:
        box = boxes[p]
        for o in offsets:
            q = box.neighbour(o)
            if q is None:
                continue
            link = Link(int(p), q, o, slot_of[tuple(-x for x in o)])
            if node_of[q] == rank:
                local.append(link)
            else:
                send.setdefault(int(node_of[q]), []).append(link)
                # What q sends back to p: the same pair seen from the other side.
                back = Link(q, int(p), tuple(-x for x in o), slot_of[o])
                recv.setdefault(int(node_of[q]), []).append(back)
    for table in (send, recv):
        for links in table.values():
            links.sort(key=_message_order)
    sources = sorted(recv)
    waits_on = np.zeros((len(sources), len(local_parts)), dtype=bool)
    for j, r in enumerate(sources):
        waits_on[j, [position[link.dst] for link in recv[r]]] = True
    return RankLinks(rank, local_parts, local, dict(sorted(send.items())), recv, waits_on)


class Arena:
    """One flat array per grid field holding the field of every local partition.

    From construction on, ``block[name]`` of each local partition is a view of its segment, so
    kernels that write the field in place keep the arena current and halos move by fancy
    indexing over the arena. A kernel that rebinds ``block[name]`` to a new array is caught by
    :meth:`refresh`, which copies the new array in and restores the view.

    The float64 fields lie one after the other in one array, ``shared`` (``flat[name]`` is
    ``shared[offset[name]:]`` up to its size), so that one index space reaches all of them: a
    task's halo copies (:mod:`grapeshot.model.task_halos`) move every field in one loop.
    """

    def __init__(self, names: tuple[str, ...], parts: np.ndarray, blocks: dict[int, Block]):
        self.names = names
        self.parts = [int(p) for p in parts]
        self.flat: dict[str, np.ndarray] = {}
        self.base: dict[str, dict[int, int]] = {}
        self.views: dict[str, dict[int, np.ndarray]] = {}
        self.offset: dict[str, int] = {}
        columns = {name: [np.asarray(blocks[p][name]) for p in self.parts] for name in names}
        for name, arrays in columns.items():
            dtypes = {a.dtype for a in arrays}
            if len(dtypes) != 1:
                raise ValueError(f"grid field {name!r} has several dtypes across partitions")
        shared_names = [n for n in names if columns[n] and columns[n][0].dtype == np.float64]
        totals = {n: sum(a.size for a in columns[n]) for n in shared_names}
        self.shared = np.empty(sum(totals.values()), dtype=np.float64)
        at = 0
        for name in shared_names:
            self.offset[name] = at
            at += totals[name]
        for name, arrays in columns.items():
            sizes = np.array([a.size for a in arrays], dtype=np.int64)
            starts = np.concatenate([[0], np.cumsum(sizes)])
            if name in self.offset:
                off = self.offset[name]
                flat = self.shared[off : off + int(starts[-1])]
            else:
                flat = np.empty(int(starts[-1]), dtype=arrays[0].dtype if arrays else float)
            self.flat[name] = flat
            self.base[name] = {p: int(starts[i]) for i, p in enumerate(self.parts)}
            self.views[name] = {}
            for i, p in enumerate(self.parts):
                view = flat[starts[i] : starts[i + 1]].reshape(arrays[i].shape)
                view[...] = arrays[i]
                self.views[name][p] = view
                blocks[p][name] = view

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


def _slab_indices(shape: tuple[int, ...], box: Box, offset: Offset, width: int, ghost: bool):
    """Flat C-order indices, within a field of ``shape``, of a halo slab (trailing axes whole)."""
    if shape[: box.ndim] != box.padded_shape:
        raise ValueError(
            f"partition {box.part}: grid field of shape {shape} does not start with the padded "
            f"box shape {box.padded_shape}"
        )
    return _slab_of_shape(shape, box.shape, box.ghost, offset, width, ghost)


@lru_cache(maxsize=4096)
def _slab_of_shape(shape, interior, g, offset, width, ghost) -> np.ndarray:
    # Partitions of one grid mostly share their shape: each slab is computed once per shape.
    probe = Box(0, (0,) * len(interior), (0,) * len(interior), interior, (1,), interior, g)
    sl = halo_slab(probe, offset, width, ghost_side=ghost)
    idx = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)[sl].ravel()
    idx.flags.writeable = False
    return idx


@dataclass
class GridPlan:
    """Index arrays of one grid exchange on one rank, per field.

    ``local_src``/``local_dst`` copy every local halo inside the arena; ``send[r]`` gathers the
    message to rank ``r`` and ``recv[r]`` scatters the one from rank ``r``, fields one after
    the other in ``names`` order.
    """

    names: tuple[str, ...]
    local_src: dict[str, np.ndarray]
    local_dst: dict[str, np.ndarray]
    send: dict[int, dict[str, np.ndarray]]
    recv: dict[int, dict[str, np.ndarray]]
    #: ``{(src, dst): bytes}`` one round of this exchange moves between partitions.
    pair_bytes: dict[tuple[int, int], int]

    def message_bytes(self, table: dict[int, dict[str, np.ndarray]], arena: Arena, r: int) -> int:
        """Payload bytes of the message to or from rank ``r`` (each field padded to 8)."""
        total = 0
        for name in self.names:
            n = table[r][name].size * arena.flat[name].dtype.itemsize
            total += n + (-n) % 8
        return total


def grid_plan(
    links: RankLinks,
    boxes: list[Box],
    arena: Arena,
    names: tuple[str, ...],
    width: int,
) -> GridPlan:
    """The :class:`GridPlan` of an exchange of ``names`` (``width`` cells) under ``links``."""

    # Only local partitions' slabs are ever indexed: the sender gathers its interiors, the
    # receiver scatters into its ghosts.
    def shape_of(name: str, part: int) -> tuple[int, ...]:
        return arena.views[name][part].shape

    def gather(name: str, link_list: list[Link], ghost: bool, with_base: bool) -> np.ndarray:
        chunks = []
        for link in link_list:
            part = link.dst if ghost else link.src
            offset = tuple(-x for x in link.offset) if ghost else link.offset
            idx = _slab_indices(shape_of(name, part), boxes[part], offset, width, ghost)
            chunks.append(idx + arena.base[name][part] if with_base else idx)
        return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64)

    local_src = {n: gather(n, links.local, False, True) for n in names}
    local_dst = {n: gather(n, links.local, True, True) for n in names}
    send = {r: {n: gather(n, ls, False, True) for n in names} for r, ls in links.send.items()}
    recv = {r: {n: gather(n, ls, True, True) for n in names} for r, ls in links.recv.items()}
    pair_bytes: dict[tuple[int, int], int] = {}
    for link in [*links.local, *(x for ls in links.send.values() for x in ls)]:
        nbytes = 0
        for name in names:
            cells = _slab_indices(
                shape_of(name, link.src), boxes[link.src], link.offset, width, False
            ).size
            nbytes += cells * arena.flat[name].dtype.itemsize
        pair_bytes[(link.src, link.dst)] = nbytes
    return GridPlan(names, local_src, local_dst, send, recv, pair_bytes)


def message_layout(
    plan: GridPlan,
    table: dict[int, dict[str, np.ndarray]],
    arena: Arena,
    ranks: list[int],
    header_bytes: int,
) -> tuple[dict[int, int], int]:
    """Where each message of ``plan`` to or from ``ranks`` lies in one buffer.

    ``table`` is ``plan.send`` or ``plan.recv``. Returns ``({rank: byte offset}, total
    bytes)``: the messages one after the other in ``ranks`` order, each ``header_bytes`` and
    then its payload (sizes multiples of 8).
    """
    starts: dict[int, int] = {}
    at = 0
    for r in ranks:
        starts[r] = at
        at += header_bytes + plan.message_bytes(table, arena, r)
    return starts, at


def _csr(rows: list[list]) -> np.ndarray:
    return np.concatenate([[0], np.cumsum([len(row) for row in rows])]).astype(np.int64)


def _cat(chunks: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(chunks).astype(np.int64) if chunks else np.zeros(0, np.int64)


def _shared_cells(arena: Arena, boxes: list[Box], width: int):
    """``cells(name, part, offset, ghost)``: a slab's indices in ``arena.shared``."""

    def cells(name: str, part: int, offset: Offset, ghost: bool) -> np.ndarray:
        shape = arena.views[name][part].shape
        idx = _slab_indices(shape, boxes[part], offset, width, ghost)
        return idx + (arena.offset[name] + arena.base[name][part])

    return cells


def _message_pieces(
    groups: dict[int, list[Link]],
    starts: dict[int, int],
    header_bytes: int,
    names: tuple[str, ...],
    n: int,
    piece_of,
) -> tuple[np.ndarray, ...]:
    """Every message of ``groups`` (``{rank: links}``) cut into one piece per link and field,
    grouped by the local partition ``piece_of(link, name)`` names: ``(position, cells)``.

    Returns ``(ptr, at, lo, hi, idx)`` (:mod:`grapeshot.model.task_halos`' layout).
    """
    pieces: list[list[tuple[int, np.ndarray]]] = [[] for _ in range(n)]
    for r in sorted(groups):
        at = (starts[r] + header_bytes) // 8  # float64 units
        for name in names:  # a message holds each field's cells over all its links in turn
            for link in groups[r]:
                i, idx = piece_of(link, name)
                pieces[i].append((at, idx))
                at += idx.size
    flat = [piece for row in pieces for piece in row]
    sizes = np.array([idx.size for _, idx in flat], dtype=np.int64)
    lo = np.concatenate([[0], np.cumsum(sizes)])[:-1].astype(np.int64)
    at = np.array([a for a, _ in flat], dtype=np.int64)
    return _csr(pieces), at, lo, lo + sizes, _cat([idx for _, idx in flat])


def fused_halos(
    links: RankLinks,
    boxes: list[Box],
    arena: Arena,
    names: tuple[str, ...],
    width: int,
    inbox_starts: dict[int, int],
    header_bytes: int,
) -> tuple[np.ndarray, ...] | None:
    """The tables by which tasks copy their own halos of one grid exchange.

    Entries 2 to 13 of :mod:`grapeshot.model.task_halos`' tuple (``pair_ptr`` to ``ridx``),
    every index into ``arena.shared``; ``inbox_starts`` is :func:`message_layout`'s for
    ``plan.recv``. ``None`` if a field of the exchange is not float64 (not in
    ``arena.shared``).
    """
    if any(name not in arena.offset for name in names):
        return None
    n = len(links.local_parts)
    position = {int(p): i for i, p in enumerate(links.local_parts)}
    cells = _shared_cells(arena, boxes, width)

    src_chunks, dst_chunks, link_ptr = [], [], [0]
    for link in links.local:
        for name in names:
            src_chunks.append(cells(name, link.src, link.offset, False))
            dst_chunks.append(cells(name, link.dst, _back(link.offset), True))
        link_ptr.append(link_ptr[-1] + sum(c.size for c in src_chunks[-len(names) :]))
    link_src = np.array([position[link.src] for link in links.local], dtype=np.int64)
    link_dst = np.array([position[link.dst] for link in links.local], dtype=np.int64)
    touching: list[list[int]] = [[] for _ in range(n)]
    for j, (a, b) in enumerate(zip(link_src.tolist(), link_dst.tolist(), strict=True)):
        touching[a].append(j)
        if b != a:
            touching[b].append(j)

    def landing(link: Link, name: str) -> tuple[int, np.ndarray]:
        return position[link.dst], cells(name, link.dst, _back(link.offset), True)

    return (
        _csr(touching),
        _cat([np.asarray(row, dtype=np.int64) for row in touching]),
        link_src,
        link_dst,
        np.asarray(link_ptr, dtype=np.int64),
        _cat(src_chunks),
        _cat(dst_chunks),
        *_message_pieces(links.recv, inbox_starts, header_bytes, names, n, landing),
    )


def fused_packs(
    links: RankLinks,
    boxes: list[Box],
    arena: Arena,
    names: tuple[str, ...],
    width: int,
    outbox_starts: dict[int, int],
    header_bytes: int,
) -> tuple[np.ndarray, ...] | None:
    """The tables by which tasks pack their part of one grid exchange's messages.

    Entries 16 to 20 of :mod:`grapeshot.model.task_halos`' tuple (``out_ptr`` to
    ``out_idx``); ``outbox_starts`` is :func:`message_layout`'s for ``plan.send``. ``None`` if
    a field of the exchange is not float64.
    """
    if any(name not in arena.offset for name in names):
        return None
    position = {int(p): i for i, p in enumerate(links.local_parts)}
    cells = _shared_cells(arena, boxes, width)

    def leaving(link: Link, name: str) -> tuple[int, np.ndarray]:
        return position[link.src], cells(name, link.src, link.offset, False)

    n = len(links.local_parts)
    return _message_pieces(links.send, outbox_starts, header_bytes, names, n, leaving)


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
