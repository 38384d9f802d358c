"""The task runtime's parts that run in one process, each on its own: the rank's plan, the
fused copies, the ready queue, the task functions, the records and the watch (the parts that
talk MPI, messages, reductions and migration, are run by the MPI tests)."""

from __future__ import annotations

import copy
import pickle
import threading
from pathlib import Path

import numpy as np
import pytest

from grapeshot.model.program import Context, neighbour_offsets
from grapeshot.model.task_halos import DATA, INBOX, STATE, make_halos, no_halos, state
from grapeshot.runtime.copies import copy_within
from grapeshot.runtime.dispatch import SPLIT_COPIES, Dispatch, chunks
from grapeshot.runtime.executor import RankRunner
from grapeshot.runtime.fusion import Fusion
from grapeshot.runtime.mailboxes import Mailboxes
from grapeshot.runtime.migration import neighbour_slots
from grapeshot.runtime.rank_plan import RankPlan
from grapeshot.runtime.results import RankResult, Tally, WorkColumns, WorkLog
from grapeshot.runtime.serial import exchange_all
from grapeshot.runtime.tasks import PartSlots, PhaseTasks
from grapeshot.runtime.timeline import RunClock, TaskRecord, TaskRows, ThreadClock
from grapeshot.runtime.watch import Watch
from grapeshot.runtime.wire import HEADER
from tests.runtime.toy_programs import BatchedHeat, Heat, Walkers


class _Rank:
    """What the parts ask of a communicator without sending anything: its rank and size."""

    def __init__(self, rank: int = 0, size: int = 1) -> None:
        self.rank, self.size = rank, size

    def Get_rank(self) -> int:
        return self.rank

    def Get_size(self) -> int:
        return self.size


def _placement(program, ranks: int, seed: int = 0) -> np.ndarray:
    node_of = np.random.default_rng(seed).integers(0, ranks, size=len(program.boxes()))
    node_of[:ranks] = np.arange(ranks)  # every rank owns a partition
    return node_of


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_rank_plans_cover_every_partition_once_and_count_what_each_waits_for(ranks) -> None:
    program = Heat(domain=(24, 18), parts=(4, 3))
    node_of = _placement(program, ranks)
    plans = [RankPlan.build(program, node_of, r) for r in range(ranks)]
    owned = sorted(p for plan in plans for p in plan.local)
    assert owned == list(range(len(node_of)))
    for r, plan in enumerate(plans):
        assert all(node_of[p] == r for p in plan.local)
        assert [plan.position[p] for p in plan.local] == list(range(len(plan.local)))
        # Only the diffuse phase exchanges, through the planned grid packers.
        assert set(plan.plans) == {1} and not plan.graph_plans and not plan.batched
        # A partition waits for one message from each other rank owning a neighbour of it.
        for i, p in enumerate(plan.local):
            box = plan.boxes[p]
            others = {
                int(node_of[q])
                for o in plan.offsets
                if (q := box.neighbour(o)) is not None and node_of[q] != r
            }
            assert plan.need_template[i] == len(others)
            assert {s for s in plan.sources if i in plan.feeds[s]} == others
        # The exchanged field of every block is a view of the rank's arena.
        for p in plan.local:
            assert np.shares_memory(plan.blocks[p]["u"], plan.arena.flat["u"])


def test_a_plan_resumes_from_given_blocks() -> None:
    program = Heat(domain=(12, 8), parts=(2, 2))
    node_of = np.zeros(4, dtype=np.int64)
    blocks = {p: program.init_block(box) for p, box in enumerate(program.boxes())}
    blocks[3]["u"][:] = 7.0
    plan = RankPlan.build(program, node_of, 0, blocks)
    assert plan.blocks is blocks and np.all(plan.blocks[3]["u"] == 7.0)
    assert plan.all_batched is False


def _mail(plan: RankPlan, size: int) -> Mailboxes:
    return Mailboxes(_Rank(plan.rank, size), plan.plans, plan.arena, plan.links, HEADER * 8, False)


def test_a_replan_takes_over_the_mailboxes_region_where_it_fits() -> None:
    program = BatchedHeat(domain=(24, 18), parts=(4, 3))
    node_of = _placement(program, 2)
    plan = RankPlan.build(program, node_of, 0)
    first = _mail(plan, 2)
    region = first.space.ctypes.data
    again = Mailboxes(
        _Rank(0, 2), plan.plans, plan.arena, plan.links, HEADER * 8, False, previous=first
    )
    assert again.space.ctypes.data == region and first.space.size == 0
    assert again.in_starts == _mail(plan, 2).in_starts
    # Every partition on the other rank but one: far more to receive, a region of its own.
    lone = np.ones_like(node_of)
    lone[0] = 0
    small = RankPlan.build(program, lone, 0)
    tiny = _mail(small, 2)
    grown = Mailboxes(
        _Rank(0, 2), plan.plans, plan.arena, plan.links, HEADER * 8, False, previous=tiny
    )
    assert grown.space.ctypes.data != tiny.space.ctypes.data
    assert grown.capacity >= grown.space.size >= max(grown.in_total.values())


def test_a_ping_pong_s_second_exchange_gets_the_first_one_s_tables_shifted() -> None:
    """The front exchanges u, then v, laid out alike: the v phase's own copies and the
    packing of each phase's next messages are those built for them directly."""
    from grapeshot.apps.user import load_user_app
    from grapeshot.runtime.halo_plan import fused_halos, pack_pieces

    root = Path(__file__).resolve().parents[2]
    front = load_user_app(f"{root}/examples/program/front.py:make_front")
    program = front.make_program((4, 4), (32, 24), 0)
    plan = RankPlan.build(program, _placement(program, 2, seed=3), 0)
    mail = _mail(plan, 2)
    fusion = Fusion.build(plan, mail, threads=1)
    assert fusion.fused == {0, 1} and fusion.prepacks == {0: 1, 1: 0}
    # Tasks that copy and pack every halo take the slabs' runs: no plan made its cells.
    assert all(side._tables is None for p in plan.plans.values() for side in p.sides)
    # A round the tasks did not pack is packed by the same tables: v's by u's phase's tasks
    # of the same step, u's by v's phase's of the step before (the other round's outbox).
    for parity in (0, 1):
        assert fusion.packing(1, parity) is fusion.halos[0][parity]
        assert fusion.packing(0, parity) is fusion.halos[1][1 - parity]
    where, header = (plan.links, plan.arena), HEADER * 8
    for k, names in ((0, ("u",)), (1, ("v",))):
        own = fused_halos(*where, plan.plans[k], mail.in_starts[k], header)
        nxt = 1 - k
        pieces = pack_pieces(plan.links, plan.arena, plan.plans[nxt])
        packs = [pieces.placed(mail.outgoing_starts(nxt, parity), header) for parity in (0, 1)]
        packs = packs if nxt > k else packs[::-1]
        for parity in (0, 1):
            expected = make_halos(
                len(plan.local), data=plan.arena.shared, own=own,
                inbox=mail.inbox(k, parity).view(np.float64), packs=packs[parity],
                outbox=mail.space.view(np.float64), state_array=fusion.halos[k][parity][STATE],
            )  # fmt: skip
            got = fusion.halos[k][parity]
            assert len(got) == len(expected)
            assert all(np.array_equal(a, b) for a, b in zip(got, expected, strict=True)), names


def test_one_thread_fuses_the_batched_exchange_and_threads_fuse_nothing() -> None:
    program = BatchedHeat(domain=(24, 18), parts=(4, 3))
    node_of = _placement(program, 2)
    plan = RankPlan.build(program, node_of, 0)
    assert plan.batched == {1}
    mail = _mail(plan, 2)
    fused = Fusion.build(plan, mail, threads=1)
    assert fused.fused == {1} and fused.prepacks == {}  # the phase after has no exchange
    even, odd = fused.halos[1]
    assert even[DATA] is plan.arena.shared
    # One state for both rounds, which the fusion's ran and halo_ns view.
    assert even[STATE] is odd[STATE]
    views = state(even[STATE])
    last, ran, halo_ns = views.last, views.ran, views.halo_ns
    assert last.ctypes.data == fused.last.ctypes.data and last[0] == -1
    assert ran.ctypes.data == fused.ran.ctypes.data and ran.size == len(plan.local)
    assert halo_ns.ctypes.data == fused.halo_ns.ctypes.data and halo_ns.size == len(plan.local)
    # The two rounds read alternate inboxes.
    assert even[INBOX].ctypes.data != odd[INBOX].ctypes.data
    pooled = Fusion.build(plan, mail, threads=2)
    assert pooled.fused == frozenset() and pooled.prepacks == {}
    for row in pooled.halos[1]:
        expected = no_halos(len(plan.local))
        assert len(row) == len(expected)
        assert all(np.array_equal(a, b) for a, b in zip(row, expected, strict=True))


def test_work_log_counts_every_partition_every_step() -> None:
    program = Heat(domain=(12, 8), parts=(3, 2))
    plan = RankPlan.build(program, np.zeros(6, dtype=np.int64), 0)
    log = WorkLog(plan)
    assert log.at is None and log.cells is None  # Heat counts warm cells: asked every step
    log.record()
    plan.blocks[0]["u"][:] = 1.0
    log.record()
    counts = log.take()
    box = plan.boxes[0]
    assert counts[0] == [program.work(program.init_block(box), box), int(np.prod(box.shape))]
    assert all(len(c) == 2 for c in counts.values())
    log.record()  # a next segment's counts start afresh
    assert all(len(c) == 1 for c in log.take().values())


def test_work_counts_read_at_once_are_the_columns_of_one_array() -> None:
    """Every phase batched, the counts in the batch's work field: one row a step, a column a
    partition, read as a mapping and as a rebalance's loads."""
    from grapeshot.apps.user import load_user_app

    root = Path(__file__).resolve().parents[2]
    front = load_user_app(f"{root}/examples/program/front.py:make_front")
    program = front.make_program((4, 4), (32, 24), 0)
    plan = RankPlan.build(program, _placement(program, 2, seed=3), 0)
    log = WorkLog(plan)
    assert log.at is not None
    for _ in range(3):
        log.record()
    counts = log.take()
    assert isinstance(counts, WorkColumns) and list(counts) == plan.local
    for p in counts:
        work = program.work(plan.blocks[p], plan.boxes[p])
        assert np.array_equal(counts[p], [work] * 3)
    result = RankResult(
        rank=0, blocks=plan.blocks, tasks=TaskRows(), work=counts, wall=0.0, threads=1,
        bytes_sent=0, messages=0, time=0.0, halo_bytes={},
    )  # fmt: skip
    parts, loads = result.loads("work")
    assert parts.tolist() == plan.local and np.array_equal(loads, counts.rows)
    assert pickle.loads(pickle.dumps(counts)).keys() == counts.keys()  # gathered on rank 0


def test_neighbour_slots_name_the_opposite_offset() -> None:
    program = Walkers(domain=(12, 8), parts=(3, 2))
    plan = RankPlan.build(program, np.zeros(6, dtype=np.int64), 0)
    offsets = neighbour_offsets(2)
    for p, neighbours in zip(plan.local, neighbour_slots(plan), strict=True):
        for offset, q, slot in neighbours:
            assert plan.boxes[p].neighbour(offset) == q
            assert offsets[slot] == tuple(-x for x in offset)
            assert plan.boxes[q].neighbour(offsets[slot]) == p


class _Arrivals:
    """Messages that arrive in a fixed order, each making some positions ready."""

    def __init__(self, batches: list[list[int]], grid: bool = True) -> None:
        self.k, self.step, self.grid = 1, 5, grid
        self.batches = [np.asarray(b, dtype=np.int64) for b in batches]
        self.pending = list(range(len(batches)))
        self.blocked = 0

    def next(self, block: bool = True):
        if not block:
            return None  # nothing is in before the rank asks
        self.blocked += 1
        self.pending.pop(0)
        return self.batches.pop(0), 0.5


def _recording_task(seen: list, lock: threading.Lock):
    def task(todo, step, ctx, waited, rows, thread):
        with lock:
            seen.extend(int(i) for i in todo)
        for i in todo:
            rows.append((int(i), step, 1, thread, 0.0, 1.0, waited))

    return task


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("batched", [False, True])
def test_the_ready_queue_runs_every_task_once_ready_ones_first(threads, batched) -> None:
    watch = Watch(Heat(), _Rank(), timeout=60.0)
    dispatch = Dispatch(threads, 10, Tally(), watch)
    seen: list[int] = []
    arrivals = _Arrivals([[4, 5, 6], [7, 8, 9]])
    with dispatch.workers():
        dispatch.run(
            _recording_task(seen, threading.Lock()),
            np.arange(4, dtype=np.int64),
            arrivals,
            Context(5, 0.0),
            batched,
        )
    assert sorted(seen) == list(range(10)) and arrivals.blocked == 2
    if threads == 1:  # first in, first out
        assert seen == list(range(10))
    rows = [row for clock in dispatch.clocks for row in clock.rows]
    assert sorted(row[0] for row in rows) == list(range(10))
    assert {row[6] for row in rows if row[0] >= 4} <= {0.5}  # arrivals' wait is kept
    assert {row[6] for row in rows if row[0] < 4} == {0.0}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("last", [[7, 8, 9], []])
@pytest.mark.parametrize("fails", [False, True])
def test_then_runs_once_when_the_last_task_ran_and_never_after_a_failure(
    threads, last, fails
) -> None:
    # What the phase's last call does before its bookkeeping: send the next phase's
    # messages (RankRunner._packed). A last message that makes no task ready still ends
    # the phase; a task that failed sends nothing.
    everyone = 7 + len(last)
    watch = Watch(Heat(), _Rank(), timeout=60.0)
    dispatch = Dispatch(threads, everyone, Tally(), watch)
    seen: list[int] = []
    called: list[int] = []
    lock = threading.Lock()

    def task(todo, step, ctx, waited, rows, thread, then=None):
        with lock:
            seen.extend(int(i) for i in todo)
        if fails and 0 in todo:
            watch.fail(0, step, "p", ValueError("bad cell"))
        if then is not None and watch.failure is None:  # as the runtime's tasks do
            then()

    with dispatch.workers():
        dispatch.run(
            task,
            np.arange(4, dtype=np.int64),
            _Arrivals([[4, 5, 6], last]),
            Context(5, 0.0),
            True,
            lambda: called.append(len(seen)),
        )
    assert sorted(seen) == list(range(everyone))
    assert called == ([] if fails else [everyone])


@pytest.mark.parametrize("last", [[7], []])
def test_the_news_goes_to_the_phases_last_call_even_on_no_task(last) -> None:
    # A telling phase's last call writes the news of the messages its tasks packed
    # (Fusion.tells): that call is made where the last message made no task ready, too.
    everyone = 7 + len(last)
    dispatch = Dispatch(1, everyone, Tally(), Watch(Heat(), _Rank(), timeout=60.0))
    calls: list[tuple[list[int], int]] = []

    def task(todo, step, ctx, waited, rows, thread, then=None, news=0):
        calls.append(([int(i) for i in todo], news))

    dispatch.run(
        task, np.arange(4, dtype=np.int64), _Arrivals([[4, 5, 6], last]), Context(5, 0.0),
        True, None, 42,
    )  # fmt: skip
    assert [news for _, news in calls] == [0, 0, 42]
    assert calls[-1][0] == last
    assert sorted(i for todo, _ in calls for i in todo) == list(range(everyone))


class _SentAhead:
    """What ``RankRunner._packed`` asks of the halos: the rounds it sends early."""

    def __init__(self) -> None:
        self.prepacked: set[int] = set()
        self.sent: list[tuple[int, int]] = []

    def send_ahead(self, step: int, k: int) -> None:
        self.sent.append((step, k))


def test_packed_messages_leave_early_only_where_their_phase_runs_on_this_plan() -> None:
    # Within a step they always do; across its end only where the segment goes on (no
    # checkpoint, stop, rebalance cut or end there), and then as the next step's round.
    asked: list[int] = []

    def runner(goes_on: bool):
        halos = _SentAhead()
        fake = type("Runner", (), {})()
        fake.halos = halos
        fake.goes_on = lambda step: asked.append(step) or goes_on
        return fake, halos

    fake, halos = runner(goes_on=False)
    RankRunner._packed(fake, 7, 0, 1)  # phase 0 packed phase 1's messages: this step's
    RankRunner._packed(fake, 7, 2, 0)  # the last phase packed the next step's first
    assert halos.sent == [(7, 1)] and halos.prepacked == {0, 1} and asked == [8]
    fake, halos = runner(goes_on=True)
    RankRunner._packed(fake, 7, 2, 0)
    assert halos.sent == [(8, 0)] and halos.prepacked == {0}


def test_chunks_deal_round_robin_in_order() -> None:
    assert chunks(list(range(7)), 3) == [[0, 3, 6], [1, 4], [2, 5]]
    assert chunks([1, 2], 5) == [[1, 2]]
    assert chunks([], 2) == []


class _Ready:
    """Grid messages that are in already when the phase starts (``block=False`` finds
    them), each making some positions ready; what the main thread did, in order."""

    def __init__(self, batches: list[list[int]], log: list) -> None:
        self.k, self.step, self.grid = 1, 5, True
        self.batches = [np.asarray(b, dtype=np.int64) for b in batches]
        self.pending = list(range(len(batches)))
        self.log = log

    def next(self, block: bool = True):
        self.pending.pop(0)
        self.log.append("message")
        return self.batches.pop(0), 0.25


def test_the_main_thread_takes_messages_in_before_its_next_run() -> None:
    # A message in behind a run of the main thread would keep the workers idle for the
    # run's length: every message already there is taken in before the main thread runs.
    log: list = []
    dispatch = Dispatch(2, 12, Tally(), Watch(Heat(), _Rank(), 60.0))

    def task(todo, step, ctx, waited, rows, thread):
        log.append(("run", thread))

    # No workers started: this thread runs every run itself, so the order is its own.
    dispatch.run(task, np.arange(4, dtype=np.int64), _Ready([[4, 5, 6, 7], [8, 9, 10, 11]], log),
                 Context(5, 0.0), True)  # fmt: skip
    assert log[:2] == ["message", "message"] and log.count("message") == 2
    assert {entry for entry in log[2:]} == {("run", 0)}


@pytest.mark.parametrize("threads", [1, 3])
def test_local_copies_shared_out_among_threads_equal_one_copy(threads) -> None:
    rng = np.random.default_rng(0)
    n = 3 * SPLIT_COPIES
    flat = rng.random(4 * n)
    src = rng.permutation(2 * n)[:n].astype(np.int64)
    dst = (2 * n + rng.permutation(2 * n)[:n]).astype(np.int64)
    expected = flat.copy()
    copy_within(expected, src, dst)
    dispatch = Dispatch(threads, 1, Tally(), Watch(Heat(), _Rank(), 60.0))
    with dispatch.workers():
        dispatch.copy_local(flat, src, dst)
    assert np.array_equal(flat, expected)


def _heat_tasks(program, threads: int) -> tuple[RankPlan, PhaseTasks, PartSlots, Watch]:
    plan = RankPlan.build(program, np.zeros(len(program.boxes()), dtype=np.int64), 0)
    fusion = Fusion.build(plan, _mail(plan, 1), threads)
    slots = PartSlots(len(plan.local))
    watch = Watch(program, _Rank(), 60.0)
    clock = RunClock()
    clock.start()
    return plan, PhaseTasks(plan, fusion, slots, clock, watch, lambda step: step % 2), slots, watch


@pytest.mark.parametrize("program", [Heat(parts=(3, 2)), BatchedHeat(parts=(3, 2))])
def test_phase_tasks_compute_what_the_kernels_do(program) -> None:
    """Task by task or batched (threads: the rank copies the halos before), a step of tasks
    leaves the blocks and values a direct call of every kernel does."""
    plan, tasks, slots, watch = _heat_tasks(program, threads=2)
    boxes = plan.boxes
    expected = [copy.deepcopy(plan.blocks[p]) for p in plan.local]
    ctx = Context(0, 0.0)
    everyone = np.arange(len(plan.local), dtype=np.int64)
    for k, phase in enumerate(program.phases):
        values = []
        if phase.exchange is not None:
            exchange_all(phase.exchange, boxes, expected)
            exchange_all(phase.exchange, boxes, [plan.blocks[p] for p in plan.local])
        for block, box in zip(expected, boxes, strict=True):
            if phase.exchange is not None and phase.exchange.boundary is not None:
                phase.exchange.boundary(block, box)
            values.append(phase.kernel(block, box, ctx))
        if k in plan.batched:
            for name in plan.batches[k].fields:
                plan.arena.refresh(plan.blocks, name)
        rows: list = []
        tasks.of(k)(everyone, 0, ctx, 0.0, rows, 0)
        assert watch.failure is None
        got = slots.batch_values.tolist() if k in plan.batched else slots.values
        if phase.reduce is not None:
            assert got == values
        assert tasks.of(k) is tasks.of(k)  # built once
        parts = np.concatenate([np.atleast_1d(row[0]) for row in rows])
        assert parts.tolist() == plan.local
    for p, block in zip(plan.local, expected, strict=True):
        assert np.array_equal(plan.blocks[p]["u"], block["u"])


def test_a_threads_strided_run_needs_no_compile_inside_the_run() -> None:
    """Threads take runs dealt round-robin (strided views): the batch runs them with what
    warm() compiled, rather than compiling (seconds, the other threads waiting) for another
    array layout inside the timed run; and the GIL wait after it is counted."""
    program = BatchedHeat(domain=(24, 24), parts=(4, 4))
    plan, tasks, _slots, watch = _heat_tasks(program, threads=2)
    (k,) = plan.batched
    task = tasks.of(k)
    task.warm()
    signatures = len(plan.batches[k].run.signatures)
    everyone = np.arange(len(plan.local), dtype=np.int64)
    runs = chunks(everyone, 4)
    assert not runs[0].flags.c_contiguous  # what the threads are handed
    rows: list = []
    for run in runs:
        task(run, 0, Context(0, 0.0), 0.0, rows, 1)
    assert watch.failure is None
    assert len(plan.batches[k].run.signatures) == signatures
    assert sorted(np.concatenate([row[0] for row in rows]).tolist()) == plan.local
    seconds, returns = tasks.gil[1]
    assert returns == len(runs) and seconds >= 0.0


def test_a_failing_task_is_kept_for_the_main_thread() -> None:
    program = Heat(parts=(2, 1))
    plan, tasks, _slots, watch = _heat_tasks(program, threads=1)
    plan.blocks[plan.local[1]]["u"] = None  # the next kernel that reads it raises
    rows: list = []
    tasks.of(0)(np.arange(2), 3, Context(3, 0.0), 0.0, rows, 0)
    assert watch.failure is not None and "partition 1, step 3, phase 'speed'" in watch.failure
    first = watch.failure
    watch.fail(0, 4, "diffuse", RuntimeError("later"))
    assert watch.failure == first  # the first failure is the one reported
    assert len(rows) == 2  # the task that failed is still on the timeline


def test_thread_clock_shares_a_burst_among_its_tasks() -> None:
    clock = ThreadClock()
    clock.start()
    sum(range(200_000))  # a burst that takes some CPU time
    clock.rows.append((0, 0, 0, 0, 0.0, 1.0, 0.0))
    # A batch row: stamps in ns (tasks at 1 s and 2 s, the batch ending at 4 s), offset 0.
    clock.rows.append(
        (np.array([1, 2]), 0, 1, 0, np.array([1, 2, 4]) * 10**9, 0.0, 0.5,
         np.array([5 * 10**8, 0]))
    )  # fmt: skip
    clock.stop()
    clock.stop()  # no burst running: nothing more
    assert len(clock.shares) == 2 and 0.0 < clock.shares[0] <= 1.0
    record = TaskRecord.from_clocks([clock]).arrays()
    assert record["part"].tolist() == [0, 1, 2]
    assert record["start"].tolist() == [0.0, 1.0, 2.0] and record["end"].tolist() == [1.0, 2.0, 4.0]
    assert record["wait"].tolist() == [0.0, 0.5, 0.5]
    assert record["cpu"].tolist() == pytest.approx(np.array([1.0, 1.0, 2.0]) * clock.shares[0])
    assert record["halo"].tolist() == pytest.approx([0.0, 0.5 * clock.shares[0], 0.0])
    # Taken for the segment's result: the clock starts afresh, and the sums a run's end
    # reads without building the columns are the columns' sums.
    rows = TaskRows.take([clock])
    assert not clock.rows and not clock.shares
    cpu, halo, main = rows.sums()
    assert cpu == pytest.approx(record["cpu"].sum())
    assert halo == pytest.approx(record["halo"].sum())
    assert main == pytest.approx(4.0)
    assert rows.arrays()["part"].tolist() == [0, 1, 2]
    assert rows.sums() == pytest.approx((cpu, halo, main))  # the same from the columns


def test_task_record_keeps_every_row_in_order_batches_and_single_tasks() -> None:
    # Batch rows become whole columns (no Python value per task); the order and the values
    # are those of the rows, single tasks between batches included.
    clocks = [ThreadClock(), ThreadClock()]
    clocks[0].rows = [
        (5, 1, 0, 0, 0.0, 1.0, 0.0),
        (np.array([7, 8]), 1, 1, 0, np.array([0, 1, 2]) * 10**9, 1.0, 0.25),
        (6, 2, 0, 0, 3.0, 3.5, 0.0),
        (9, 2, 0, 0, 3.5, 4.5, 0.0),
    ]
    clocks[0].shares = [1.0, 0.5, 1.0, 0.25]
    clocks[1].rows = [
        (np.array([3]), 2, 1, 1, np.array([0, 2]) * 10**9, 0.0, 0.5, np.array([10**9]))
    ]
    clocks[1].shares = [0.5]
    record = TaskRecord.from_clocks(clocks).arrays()
    assert record["part"].tolist() == [5, 7, 8, 6, 9, 3]
    assert record["step"].tolist() == [1, 1, 1, 2, 2, 2]
    assert record["phase"].tolist() == [0, 1, 1, 0, 0, 1]
    assert record["thread"].tolist() == [0, 0, 0, 0, 0, 1]
    assert record["start"].tolist() == [0.0, 1.0, 2.0, 3.0, 3.5, 0.0]
    assert record["end"].tolist() == [1.0, 2.0, 3.0, 3.5, 4.5, 2.0]
    assert record["wait"].tolist() == [0.0, 0.25, 0.25, 0.0, 0.0, 0.5]
    assert record["cpu"].tolist() == [1.0, 0.5, 0.5, 0.5, 0.25, 1.0]
    assert record["halo"].tolist() == [0.0, 0.0, 0.0, 0.0, 0.0, 0.5]  # 1 s at half a core
    assert record["part"].dtype == np.int64 and record["cpu"].dtype == np.float64
    assert all(v.size == 0 for v in TaskRecord.from_clocks([ThreadClock()]).arrays().values())
