"""The halo plan in one process: what two ranks' gathers, scatters and copies do equals the
serial exchange, bit for bit, whatever the placement."""

from __future__ import annotations

import copy
import threading
import time
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grapeshot.model.news import NEWS, SENT, news_of, publish
from grapeshot.model.program import Exchange, neighbour_offsets
from grapeshot.model.task_halos import (
    PIECE_PTR,
    STATE,
    batch_ends,
    make_halos,
    pack_all,
    state,
    task_begins,
)
from grapeshot.runtime.copies import copy_within, gather, scatter
from grapeshot.runtime.fusion import _hearing
from grapeshot.runtime.halo_plan import (
    Arena,
    Link,
    fused_halos,
    grid_plan,
    grid_plans,
    message_layout,
    pack_pieces,
    pair_sums,
    rank_links,
    strided_runs,
)
from grapeshot.runtime.serial import exchange_all
from grapeshot.runtime.wire import (
    HALO,
    HEADER,
    MIGRANTS,
    decode_items,
    encode_items,
    read_header,
    stamp,
    write_header,
)
from tests.runtime.toy_programs import Heat


def _numbered_blocks(program):
    boxes = program.boxes()
    blocks = {}
    for box in boxes:
        u = np.arange(int(np.prod(box.padded_shape)), dtype=np.float64).reshape(box.padded_shape)
        blocks[box.part] = {"u": u + 10_000.0 * box.part, "tmp": np.zeros(box.padded_shape)}
    return boxes, blocks


@pytest.mark.parametrize("ranks", [1, 2, 3])
@pytest.mark.parametrize("seed", [0, 1])
def test_planned_exchange_equals_the_serial_one(ranks, seed) -> None:
    program = Heat(domain=(24, 18), parts=(4, 3))
    boxes, blocks = _numbered_blocks(program)
    expected = copy.deepcopy(blocks)
    exchange_all(program.phases[1].exchange, boxes, [expected[b.part] for b in boxes])
    node_of = np.random.default_rng(seed).integers(0, ranks, size=len(boxes))
    node_of[:ranks] = np.arange(ranks)  # every rank owns a partition
    links = [rank_links(boxes, node_of, r) for r in range(ranks)]
    arenas = [Arena(("u",), links[r].local_parts, blocks) for r in range(ranks)]
    plans = [grid_plan(links[r], boxes, arenas[r], ("u",), 1) for r in range(ranks)]
    # Every rank packs first, then the messages are delivered and local halos copied.
    messages = {}
    for r in range(ranks):
        for dest, idx in plans[r].send.items():
            out = np.empty(idx["u"].size)
            gather(arenas[r].flat["u"], idx["u"], out)
            messages[(r, dest)] = out
    for r in range(ranks):
        flat = arenas[r].flat["u"]
        copy_within(flat, plans[r].local_src["u"], plans[r].local_dst["u"])
        for source, idx in plans[r].recv.items():
            scatter(messages[(source, r)], idx["u"], flat)
    boundary = program.phases[1].exchange.boundary  # the runtime's tasks fill the walls
    for box in boxes:
        boundary(blocks[box.part], box)
        assert np.array_equal(blocks[box.part]["u"], expected[box.part]["u"]), box.part


def test_links_of_a_rank_pair_agree_on_both_ends() -> None:
    program = Heat(domain=(30, 20), parts=(5, 4))
    boxes = program.boxes()
    node_of = np.random.default_rng(3).integers(0, 3, size=len(boxes))
    links = [rank_links(boxes, node_of, r) for r in range(3)]
    for a in range(3):
        for b, sent in links[a].send.items():
            assert sent == links[b].recv[a]
        total = len(links[a].local) + sum(len(x) for x in links[a].send.values())
        owned = np.flatnonzero(node_of == a)
        assert total == sum(
            boxes[p].neighbour(o) is not None for p in owned for o in neighbour_offsets(2)
        )
    # A partition waits on a rank iff one of its neighbours lives there.
    w = links[0]
    for j, r in enumerate(w.sources):
        for i, p in enumerate(w.local_parts):
            near = {node_of[q] for o in neighbour_offsets(2) if (q := boxes[p].neighbour(o))}
            assert w.waits_on[j, i] == (r in near)


@pytest.mark.parametrize("periodic, faces", [((False, False), 1), ((True, False), 2)])
def test_pair_bytes_count_every_halo_between_two_partitions(periodic, faces) -> None:
    """Two partitions on an axis two wide that wraps are neighbours on both sides: one round
    moves both halos between them (the record's halo bytes and the comm-aware strategies'
    graph count both)."""
    from grapeshot.model.program import face_offsets, partition_boxes

    boxes = partition_boxes((8, 6), (2, 1), 1, periodic)
    blocks = {b.part: {"u": np.zeros(b.padded_shape)} for b in boxes}
    links = rank_links(boxes, np.zeros(2, dtype=np.int64), 0, face_offsets(2))
    plan = grid_plan(links, boxes, Arena(("u",), links.local_parts, blocks), ("u",), 1)
    pairs = pair_sums(plan.sent.src, plan.sent.dst, plan.sent_bytes)
    assert pairs == {(0, 1): faces * 6 * 8, (1, 0): faces * 6 * 8}


def test_arena_takes_back_a_rebound_field_and_refuses_a_new_shape() -> None:
    program = Heat(parts=(2, 2))
    _, blocks = _numbered_blocks(program)
    arena = Arena(("u",), np.array([0, 1]), blocks)
    assert np.shares_memory(blocks[0]["u"], arena.flat["u"])
    blocks[1]["u"] = blocks[1]["u"] * 2.0  # a kernel that rebinds instead of writing in place
    arena.refresh(blocks, "u")
    assert np.shares_memory(blocks[1]["u"], arena.flat["u"])
    assert arena.views["u"][1][0, 0] == 2.0 * (10_000.0 * 1)
    blocks[0]["u"] = np.zeros((3, 3))
    with pytest.raises(ValueError, match="partition 0: grid field 'u' changed shape"):
        arena.refresh(blocks, "u")


def _fields(p: int, shape=(4, 5)) -> dict:
    return {"u": np.full(shape, float(p)), "v": np.full(shape, -float(p)),
            "n": np.full(3, p, dtype=np.int64)}  # fmt: skip


def _arena_holds(arena: Arena, blocks: dict) -> None:
    """Every block's fields are the arena's views, at their bases, with their own values."""
    for name in arena.names:
        for p in arena.parts:
            view = blocks[p][name]
            assert view is arena.views[name][p]
            flat = arena.flat[name]
            base = arena.base[name][p]
            assert np.shares_memory(view, flat)
            assert np.array_equal(flat[base : base + view.size], view.ravel())
            assert (view == (-p if name == "v" else p)).all()


@pytest.mark.parametrize("held", [False, True])
def test_a_rebalanced_arena_keeps_who_stays_in_place_and_copies_only_arrivals(held) -> None:
    """``held`` (every phase batched: no kernel rebinds an array) takes the partitions that
    stay without checking each one's arrays: the same arena."""
    names = ("n", "u", "v")
    blocks = {p: _fields(p) for p in (0, 1, 2, 3)}
    first = Arena(names, np.array([0, 1, 2, 3]), blocks)
    _arena_holds(first, blocks)
    kept = {p: blocks[p]["u"] for p in (1, 3)}
    where = {p: first.base["u"][p] for p in (1, 3)}
    # 0 and 2 leave, 5 and 7 arrive (fresh arrays, as from another rank).
    moved = {1: blocks[1], 3: blocks[3], 5: _fields(5), 7: _fields(7)}
    second = Arena(names, np.array([1, 3, 5, 7]), moved, first, held=held)
    assert second.shared is first.shared  # no new memory
    for p in (1, 3):  # the same array objects at the same places
        assert moved[p]["u"] is kept[p] and second.base["u"][p] == where[p]
    assert {second.base["u"][p] for p in (5, 7)} == {first.base["u"][p] for p in (0, 2)}
    _arena_holds(second, moved)
    # One more than fits: built anew, with room for the next arrivals.
    more = {**moved, 9: _fields(9)}
    third = Arena(names, np.array([1, 3, 5, 7, 9]), more, second)
    assert third.shared is not second.shared
    assert third.capacity["u"] > 5 * 20 and third.flat["u"].size == third.capacity["u"]
    _arena_holds(third, more)
    # A partition of another shape takes room at the end, not a segment of the wrong size.
    odd = {1: more[1], 3: more[3], 5: more[5], 7: more[7], 11: _fields(11, (2, 2))}
    odd[11]["n"] = np.full(3, 11, dtype=np.int64)
    fourth = Arena(names, np.array([1, 3, 5, 7, 11]), odd, third)
    assert fourth.shared is third.shared
    assert fourth.base["u"][11] >= 5 * 20
    _arena_holds(fourth, odd)


def test_a_rebalanced_arena_checks_the_arrivals_shapes_and_keeps_the_others_kinds() -> None:
    """Each partition's kind names its own shape; a re-plan checks the arrivals against
    their boxes and keeps what it knew of the partitions that stay."""
    from types import SimpleNamespace

    shapes = {0: (4, 5), 1: (4, 5), 2: (4, 5), 3: (2, 2), 5: (4, 5), 7: (4, 5), 9: (3, 5)}
    boxes = {p: SimpleNamespace(padded_shape=shape) for p, shape in shapes.items()}
    blocks = {p: _fields(p, shapes[p]) for p in (0, 1, 2, 3)}
    first = Arena(("u",), np.array([0, 1, 2, 3]), blocks)
    kinds, table = first.shape_kinds("u", boxes)
    assert [table[k] for k in kinds] == [shapes[p] for p in (0, 1, 2, 3)]
    moved = {1: blocks[1], 3: blocks[3], 5: _fields(5), 7: _fields(7)}
    boxes[1] = SimpleNamespace(padded_shape=(9, 9))  # not looked at again: 1 stays
    second = Arena(("u",), np.array([1, 3, 5, 7]), moved, first)
    assert second.shared is first.shared
    kinds, table = second.shape_kinds("u", boxes)
    assert [table[k] for k in kinds] == [shapes[p] for p in (1, 3, 5, 7)]
    # An arrival whose field does not start with its padded box shape is refused.
    wrong = {1: blocks[1], 3: blocks[3], 7: moved[7], 9: _fields(9)}
    third = Arena(("u",), np.array([1, 3, 7, 9]), wrong, second)
    assert third.shared is first.shared
    with pytest.raises(ValueError, match="partition 9"):
        third.shape_kinds("u", boxes)


def test_a_rank_that_gave_partitions_away_takes_others_back_into_their_room() -> None:
    # The front's heavy rank: most of its partitions leave in one rebalance, others come back
    # a few at a time in later ones. The segments freed earlier are reused, not forgotten
    # (which rebuilt the arena, fresh memory and all, at nearly every later call).
    names = ("n", "u", "v")
    blocks = {p: _fields(p) for p in range(8)}
    first = Arena(names, np.arange(8), blocks)
    few = {p: blocks[p] for p in (0, 1)}
    second = Arena(names, np.array([0, 1]), few, first)
    arena, held = second, few
    for arrivals in ((20, 21), (22,), (23, 24, 25)):
        held = {**held, **{p: _fields(p) for p in arrivals}}
        arena = Arena(names, np.array(sorted(held)), held, arena)
        assert arena.shared is first.shared  # no new memory
        _arena_holds(arena, held)
    bases = [arena.base["u"][p] for p in sorted(held)]
    assert len(set(bases)) == len(bases) and max(bases) < first.end["u"]
    # Beyond what the rank ever held, the arena grows anew.
    grown = {**held, **{p: _fields(p) for p in range(30, 33)}}
    assert Arena(names, np.array(sorted(grown)), grown, arena).shared is not first.shared


def test_a_rebalanced_arena_copies_nothing_out_of_its_own_memory() -> None:
    """A kernel that rebound one field to another's array (u, v = v, u): copying segment by
    segment could overwrite an array before it is read, so the arena is built anew."""
    names = ("u", "v")
    blocks = {p: _fields(p) for p in (0, 1)}
    first = Arena(names, np.array([0, 1]), blocks)
    blocks[0]["u"], blocks[0]["v"] = blocks[0]["v"], blocks[0]["u"]
    second = Arena(names, np.array([0, 1]), blocks, first)
    assert second.shared is not first.shared
    assert (blocks[0]["u"] == 0).all() and (blocks[0]["v"] == 0).all()  # -0.0 == 0.0
    blocks[1]["u"], blocks[1]["v"] = blocks[1]["v"], blocks[1]["u"]
    third = Arena(names, np.array([0, 1]), blocks, second)
    assert third.shared is not second.shared
    assert (blocks[1]["u"] == -1).all() and (blocks[1]["v"] == 1).all()


def test_item_messages_round_trip() -> None:
    items = [
        (5, 0, np.arange(7, dtype=np.float64)),
        (2, 7, np.zeros((0, 9))),
        (9, 3, np.arange(12, dtype=np.int32).reshape(3, 4)),
        (1, 1, np.array([True, False, True])),
    ]
    raw = encode_items(4, 2, MIGRANTS, items)
    stamp(raw)
    header = read_header(raw)
    assert header.round == (4, 2, MIGRANTS) and header.n_items == 4 and header.sent_ns > 0
    for (part, slot, arr), (p2, s2, a2) in zip(items, decode_items(raw), strict=True):
        assert (part, slot) == (p2, s2)
        assert a2.dtype == arr.dtype and a2.shape == arr.shape and np.array_equal(a2, arr)
    empty = encode_items(0, 1, HALO, [])
    assert read_header(empty).n_items == 0 and decode_items(empty) == []
    with pytest.raises(ValueError, match="at most 4 dimensions"):
        encode_items(0, 0, HALO, [(0, 0, np.zeros((1, 1, 1, 1, 1)))])


def _two_field_blocks(boxes, width):
    blocks = {}
    for box in boxes:
        shape = tuple(n + 2 * width for n in box.shape)
        size = int(np.prod(shape))
        u = np.arange(size, dtype=np.float64).reshape(shape) + 10_000.0 * box.part
        v = -np.arange(size, dtype=np.float64).reshape(shape) - 10_000.0 * box.part
        blocks[box.part] = {"u": u, "v": v, "n": np.zeros(1, dtype=np.int64)}
    return blocks


@pytest.mark.parametrize("ranks", [1, 2, 3])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("grid", [((30, 24), (5, 4)), ((12, 10, 9), (3, 2, 2))], ids=["2d", "3d"])
def test_tasks_copying_their_own_halos_in_any_order_equal_the_serial_exchange(ranks, seed, grid):
    """Fused exchanges (grapeshot.model.task_halos): each task copies its halos right before
    its kernel, which then overwrites its interior; whatever order the tasks run in, every
    partition sees what the serial exchange delivers, and the messages the tasks pack after
    their kernels equal the plan's gathers. On a plane, and in a box (26 neighbours, slabs of
    several runs each, partitions of two shapes: 9 cells in 2)."""
    width, names = 2, ("u", "v")
    program = Heat(domain=grid[0], parts=grid[1])
    boxes = [replace(b, ghost=width) for b in program.boxes()]
    blocks = _two_field_blocks(boxes, width)
    expected = copy.deepcopy(blocks)
    exchange_all(Exchange(names, width), boxes, [expected[b.part] for b in boxes])
    rng = np.random.default_rng(seed)
    node_of = rng.integers(0, ranks, size=len(boxes))
    node_of[:ranks] = np.arange(ranks)
    links = [rank_links(boxes, node_of, r) for r in range(ranks)]
    arenas = [Arena((*names, "n"), links[r].local_parts, blocks) for r in range(ranks)]
    plans = [grid_plan(links[r], boxes, arenas[r], names, width) for r in range(ranks)]
    header = HEADER * 8
    # The next phase's messages, packed by tasks after their kernels, equal the gathers.
    outboxes = {}
    for r in range(ranks):
        starts, total = message_layout(plans[r], True, arenas[r], list(links[r].send), header)
        outbox = np.zeros(total // 8)
        packs = pack_pieces(links[r], arenas[r], plans[r]).placed(starts, header)
        halos = make_halos(
            len(links[r].local_parts), data=arenas[r].shared, packs=packs, outbox=outbox
        )
        stamps = np.zeros(len(links[r].local_parts) + 1, dtype=np.int64)
        for t, i in enumerate(rng.permutation(len(links[r].local_parts))):
            task_begins(halos, stamps, t, i)
        batch_ends(halos, stamps, len(links[r].local_parts))
        # The runtime packs a round no task did (the first after a re-plan) the same way.
        alone = np.zeros_like(outbox)
        pack_all(
            make_halos(len(links[r].local_parts), data=arenas[r].shared, packs=packs, outbox=alone)
        )
        assert np.array_equal(alone, outbox)
        for dest, at in starts.items():
            words = (at + header) // 8
            for name in names:
                idx = plans[r].send[dest][name]
                assert np.array_equal(outbox[words : words + idx.size], arenas[r].flat[name][idx])
                words += idx.size
            outboxes[(r, dest)] = outbox[(at + header) // 8 : words]
    # This phase: the messages arrive, then each task copies its halos and runs its kernel.
    original = copy.deepcopy(blocks)
    for r in range(ranks):
        starts, total = message_layout(plans[r], False, arenas[r], links[r].sources, header)
        inbox = np.zeros(total // 8)
        for source, at in starts.items():
            message = outboxes[(source, r)]
            inbox[(at + header) // 8 : (at + header) // 8 + message.size] = message
        tables = fused_halos(links[r], arenas[r], plans[r], starts, header)
        n = len(links[r].local_parts)
        halos = make_halos(n, data=arenas[r].shared, own=tables, inbox=inbox)
        ran = state(halos[STATE]).ran
        stamps = np.zeros(n + 1, dtype=np.int64)
        for t, i in enumerate(rng.permutation(n)):
            task_begins(halos, stamps, t, i)
            part = int(links[r].local_parts[i])
            inner = boxes[part].interior()
            for name in names:  # the kernel rewrites what its neighbours must not see
                blocks[part][name][inner] = np.nan
        assert ran.all()
    for box in boxes:
        inner = box.interior()
        for name in names:
            got = blocks[box.part][name].copy()
            got[inner] = original[box.part][name][inner]
            assert np.array_equal(got, expected[box.part][name]), (box.part, name)


def test_a_field_that_is_not_float64_is_not_fused() -> None:
    program = Heat(domain=(12, 12), parts=(2, 2))
    boxes = program.boxes()
    blocks = {b.part: {"k": np.zeros(b.padded_shape, dtype=np.int32)} for b in boxes}
    links = rank_links(boxes, np.zeros(len(boxes), dtype=np.int64), 0)
    arena = Arena(("k",), links.local_parts, blocks)
    plan = grid_plan(links, boxes, arena, ("k",), 1)
    assert fused_halos(links, arena, plan, {}, HEADER * 8) is None
    assert pack_pieces(links, arena, plan) is None


def _same_tables(a, b) -> bool:
    """Two grid plans index the same cells, field for field in their own names' order."""
    pairs = [
        (x, y)
        for ta, tb in ((a.local_src, b.local_src), (a.local_dst, b.local_dst))
        for x, y in zip(ta.values(), tb.values(), strict=True)
    ]
    for ta, tb in ((a.send, b.send), (a.recv, b.recv)):
        assert ta.keys() == tb.keys()
        pairs += [(x, y) for r in ta for x, y in zip(ta[r].values(), tb[r].values(), strict=True)]
    return all(np.array_equal(x, y) for x, y in pairs) and np.array_equal(
        a.sent_bytes, b.sent_bytes
    )


def test_fields_laid_out_alike_share_one_plan() -> None:
    """A ping-pong's u and v lie alike in the arena: the second exchange's plan is the
    first's arrays under its own names, equal to one built for it; a field laid out
    otherwise (another dtype) or another width gets its own."""
    program = Heat(domain=(24, 18), parts=(4, 3))
    boxes = program.boxes()
    blocks = {
        b.part: {
            "u": np.zeros(b.padded_shape),
            "v": np.ones(b.padded_shape),
            "k": np.zeros(b.padded_shape, dtype=np.int32),
        }
        for b in boxes
    }
    node_of = np.random.default_rng(2).integers(0, 2, size=len(boxes))
    links = rank_links(boxes, node_of, 0)
    arena = Arena(("k", "u", "v"), links.local_parts, blocks)
    plans = grid_plans(
        links, boxes, arena, {0: (("u",), 1), 1: (("v",), 1), 2: (("k",), 1), 3: (("v",), 2)}
    )
    assert plans[1].names == ("v",)
    assert plans[1].local_src["v"] is plans[0].local_src["u"]
    assert _same_tables(plans[1], grid_plan(links, boxes, arena, ("v",), 1))
    assert plans[2].local_src["k"] is not plans[0].local_src["u"]
    assert plans[3].local_src["v"] is not plans[1].local_src["v"]
    assert _same_tables(plans[3], grid_plan(links, boxes, arena, ("v",), 2))
    assert not arena.same_layout("u", "k", boxes) and arena.same_layout("u", "v", boxes)


@settings(max_examples=60, deadline=None)
@given(
    chunks=st.lists(
        st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), max_size=12), max_size=6
    )
)
def test_strided_runs_list_the_same_pairs_in_the_same_order(chunks) -> None:
    """Halo copies read runs instead of cell indices: every (source, destination) pair of
    every chunk, in order, whatever the cells."""
    pairs = [pair for chunk in chunks for pair in chunk]
    a = np.array([x for x, _ in pairs], dtype=np.int64)
    b = np.array([y for _, y in pairs], dtype=np.int64)
    ptr = np.concatenate([[0], np.cumsum([len(c) for c in chunks])]).astype(np.int64)
    rows, run_ptr = strided_runs(a, ptr, b)
    for k, chunk in enumerate(chunks):
        got = [
            (s0 + c * ss, d0 + c * ds)
            for s0, ss, d0, ds, n in rows[run_ptr[k] : run_ptr[k + 1]].tolist()
            for c in range(n)
        ]
        assert got == chunk
    single, single_ptr = strided_runs(a, ptr)
    assert [s0 + c * ss for s0, ss, _, _, n in single.tolist() for c in range(n)] == a.tolist()
    assert single_ptr[-1] == single.shape[0]


def test_a_face_is_one_run_per_row_and_a_column_one_run() -> None:
    padded = np.arange(6 * 10).reshape(6, 10)  # a 4 x 8 block with one ghost layer
    row = padded[1, 1:9].ravel()  # the north face: contiguous
    column = padded[1:5, 1].ravel()  # the west face: step 10
    rows, _ = strided_runs(
        np.concatenate([row, column]), np.array([0, row.size, row.size + column.size])
    )
    assert rows[:, [0, 1, 4]].tolist() == [[11, 1, 8], [11, 10, 4]]


def _rank_links_one_by_one(boxes, node_of, rank, offsets):
    """The links as :meth:`Box.neighbour` gives them, partition by partition (the loop
    rank_links replaced): the reference."""
    slot_of = {o: i for i, o in enumerate(neighbour_offsets(boxes[0].ndim))}
    local, send, recv = [], {}, {}
    for p in np.flatnonzero(node_of == rank).tolist():
        for o in offsets:
            q = boxes[p].neighbour(o)
            if q is None:
                continue
            back = tuple(-x for x in o)
            link = Link(p, q, o, slot_of[back])
            if node_of[q] == rank:
                local.append(link)
            else:
                send.setdefault(int(node_of[q]), []).append(link)
                recv.setdefault(int(node_of[q]), []).append(Link(q, p, back, slot_of[o]))
    order = lambda link: (link.dst, link.slot)  # noqa: E731
    return (
        local,
        {r: sorted(v, key=order) for r, v in send.items()},
        {r: sorted(v, key=order) for r, v in recv.items()},
    )


@settings(max_examples=60, deadline=None)
@given(
    shape=st.lists(st.integers(1, 5), min_size=2, max_size=3),
    wraps=st.lists(st.booleans(), min_size=3, max_size=3),
    ranks=st.integers(1, 4),
    faces=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_rank_links_are_the_links_box_by_box(shape, wraps, ranks, faces, seed) -> None:
    """All at once over the neighbour table, the same links in the same order as asking each
    box for each neighbour (periodic axes wrap; a one-partition periodic axis is its own
    neighbour)."""
    from grapeshot.model.program import face_offsets, partition_boxes

    parts = tuple(shape)
    periodic = tuple(wraps[: len(parts)])
    boxes = partition_boxes(tuple(4 * k for k in parts), parts, 1, periodic)
    node_of = np.random.default_rng(seed).integers(0, ranks, len(boxes))
    offsets = face_offsets(len(parts)) if faces else neighbour_offsets(len(parts))
    for rank in range(ranks):
        got = rank_links(boxes, node_of, rank, offsets)
        local, send, recv = _rank_links_one_by_one(boxes, node_of, rank, offsets)
        assert got.local == local
        assert got.send == send and list(got.send) == sorted(send)
        assert got.recv == recv and list(got.recv) == list(recv)  # ranks as first met
        for j, r in enumerate(got.sources):
            assert set(np.flatnonzero(got.waits_on[j])) == {
                int(np.searchsorted(got.local_parts, link.dst)) for link in recv[r]
            }


def _rank_zero_of_two():
    """Rank 0's links, arena and plan of a u/v exchange of 4 × 4 partitions, the first on
    rank 1 (two of rank 0's take pieces of its messages, the others none)."""
    program = Heat(domain=(16, 12), parts=(4, 4))
    boxes = [replace(b, ghost=1) for b in program.boxes()]
    blocks = _two_field_blocks(boxes, 1)
    node_of = (np.arange(len(boxes)) == 0).astype(np.int64)
    links = rank_links(boxes, node_of, 0)
    arena = Arena(("u", "v", "n"), links.local_parts, blocks)
    return boxes, blocks, links, arena, grid_plan(links, boxes, arena, ("u", "v"), 1)


def test_a_telling_batch_sends_its_packed_messages_once_its_last_task_packed() -> None:
    """``batch_ends`` writes the headers (grapeshot.model.news: round, send time, news) at
    ``NEWS_AT`` after the last packing, only where the runner set the news, once."""
    _, _, links, arena, plan = _rank_zero_of_two()
    header = HEADER * 8
    starts, total = message_layout(plan, True, arena, list(links.send), header)
    heads = np.array(list(starts.values()), dtype=np.int64)
    assert heads.size  # rank 0 sends to rank 1
    packs = pack_pieces(links, arena, plan).placed(starts, header)
    n = len(links.local_parts)
    outbox = np.zeros(total // 8)
    news_at = np.array([3, HALO, *heads], dtype=np.int64)  # phase 3's messages
    halos = make_halos(n, data=arena.shared, packs=packs, outbox=outbox, news_at=news_at)
    news = state(halos[STATE]).news
    words = outbox.view(np.int64)
    for told in (0, news_of(7)):
        news[0] = told
        stamps = np.zeros(n + 1, dtype=np.int64)
        before = time.time_ns()
        for t in range(n):
            task_begins(halos, stamps, t, t)
            if t < n - 1:  # nothing is told before the batch ends
                assert (words[heads // 8 + NEWS] == 0).all()
        batch_ends(halos, stamps, n)
        assert news[0] == 0
        sent, got = words[heads // 8 + SENT], words[heads // 8 + NEWS]
        if told:
            assert (got == told).all() and (sent >= before).all() and (sent <= time.time_ns()).all()
            for at in heads:  # the rest of each header, as the runner's write_header writes it
                assert read_header(outbox.view(np.uint8)[at:]).round == (7, 3, HALO)
        else:
            assert (got == 0).all() and (sent == 0).all()


@pytest.mark.parametrize("late", [False, True])
def test_hearing_tasks_wait_for_the_messages_they_take_pieces_of(late) -> None:
    """Where the tasks wait for their messages themselves (Fusion.hears), a task taking
    pieces of a message not in yet waits for its news before it is stamped (its wait is no
    task's time), copies what the message holds once in, and the message's time on the way
    is kept; a message of another round is flagged."""
    _, blocks, links, arena, plan = _rank_zero_of_two()
    header, step, k = HEADER * 8, 4, 1
    starts, total = message_layout(plan, False, arena, links.sources, header)
    tables = fused_halos(links, arena, plan, starts, header)
    hearing, sources = _hearing(k, tables, starts)
    assert sources == [1]
    inbox = np.zeros(total // 8)
    n = len(links.local_parts)
    halos = make_halos(n, data=arena.shared, own=tables, inbox=inbox, hearing=hearing)
    views = state(halos[STATE])
    views.expect[0] = news_of(step)
    raw = inbox.view(np.uint8)[starts[1] :]
    inbox[(starts[1] + header) // 8 :] = 7.5  # the message's cells

    def deliver() -> None:
        write_header(raw, step, k, HALO)
        publish(raw, NEWS * 8, news_of(step))

    writer = threading.Timer(0.05, deliver) if late else None
    if writer is None:
        deliver()
    else:
        writer.start()  # while the tasks run (they hold no GIL)
    ptr = tables[PIECE_PTR]
    fed = [i for i in range(n) if ptr[i + 1] > ptr[i]]
    order = [i for i in range(n) if i not in fed] + fed
    assert fed and len(fed) < n
    stamps = np.zeros(n + 1, dtype=np.int64)
    for t, i in enumerate(order):
        task_begins(halos, stamps, t, i)
    batch_ends(halos, stamps, n)
    if writer is not None:
        writer.join()
    first = n - len(fed)  # the first task taking pieces waits, and no other
    assert views.waits[0] == int(late) and np.count_nonzero(views.wait_ns) == int(late)
    if late:
        assert views.wait_ns[first] >= 0.03e9
        assert stamps[first] - stamps[first - 1] >= views.wait_ns[first]
    assert views.bad[0] == 0 and views.heard[0] == news_of(step)
    assert 0 <= views.latency_ns[0] < 10e9
    for i in fed:  # every partition fed by rank 1 got the message's cells in its ghosts
        part = int(links.local_parts[i])
        assert any((blocks[part][name] == 7.5).any() for name in ("u", "v")), part
    views.heard[0] = 0  # a message of another round: flagged
    write_header(raw, step, k + 1, HALO)
    task_begins(halos, stamps, 0, fed[0])
    assert views.bad[0] == 1
