"""What large runs lean on, checked against the plain versions it replaced, bit for bit.

The synthetic dam break's wet cells without the columns × partitions matrix (and without
summing the partitions all dry or all under water), the grid halo's CSR without a sort, the
layout's message costs without per-message arrays, the radix event heap, the ring of two tasks
per partition in the kernel's clocks, and the per-step sums after the run without per-task node
and step arrays.
"""

from __future__ import annotations

import heapq
import itertools

import numpy as np
import pytest

from grapeshot.model.machine_file import load_machine
from grapeshot.model.synthetic import _wet_per_part
from grapeshot.model.workload import HaloGraph, grid_halo, partition_bounds
from grapeshot.place import place
from grapeshot.sim import SimOptions, WorkloadSource, simulate
from grapeshot.sim.engine import _task_sums
from grapeshot.sim.event_heap import peek_event, pop_event, push_event
from grapeshot.sim.kernel_state import C_EVENTS, Clocks, new_heap
from grapeshot.sim.program import Overheads, build_layout, build_program
from grapeshot.sim.reference import reference_run


@pytest.mark.parametrize("width", [1, 2, 3, 7, 8, 9, 16, 17, 128, 129, 130, 300, 1000])
def test_wet_cells_are_numpys_reduceat_of_the_clipped_matrix(width: int) -> None:
    rng = np.random.default_rng(width)
    nx, ny_parts = 3 * width, 5
    h = rng.uniform(-2.0, 40.0, nx)
    y_bounds = np.array([0, 3, 9, 10, 25, 40])
    y_lo = y_bounds[:-1].astype(float)
    y_size = np.diff(y_bounds).astype(float)
    x_lo = np.array([0, width, 2 * width, nx], dtype=np.int64)
    want = np.add.reduceat(
        np.clip(h[:, None] - y_lo[None, :], 0.0, y_size[None, :]), x_lo[:-1], axis=0
    )
    got = np.empty((3, ny_parts))
    _wet_per_part(h, x_lo, y_lo, y_size, got)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("width", [1, 2, 7, 9, 130])
def test_wet_cells_of_all_dry_and_all_wet_partitions_are_the_same_sums(width: int) -> None:
    # Columns above every partition, a surface crossing them, columns below: heights that
    # land exactly on a partition's bottom or top, and fractional ones.
    rng = np.random.default_rng(width)
    y_bounds = np.array([0, 3, 9, 10, 25, 40])
    y_lo = y_bounds[:-1].astype(float)
    y_size = np.diff(y_bounds).astype(float)
    h = np.concatenate(
        [
            rng.choice([40.0, 41.5, 1e6], width),
            rng.choice(np.concatenate((y_bounds.astype(float), [2.5, 9.25, 30.0])), width),
            rng.uniform(25.0, 40.0, width),
            rng.choice([0.0, -3.0, 9.0, 10.0], width),
        ]
    )
    x_lo = np.arange(0, 4 * width + 1, width, dtype=np.int64)
    want = np.add.reduceat(
        np.clip(h[:, None] - y_lo[None, :], 0.0, y_size[None, :]), x_lo[:-1], axis=0
    )
    got = np.empty((4, len(y_lo)))
    _wet_per_part(h, x_lo, y_lo, y_size, got)
    assert np.array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("pin", [False, True])
def test_layout_message_costs_are_the_bincount_of_the_per_message_costs(pin: bool) -> None:
    machine = load_machine("bluewaters-xe6", 8)
    workload = WorkloadSource(spec="dambreak:parts=24x20,steps=2").at_parts(24 * 20)
    over = Overheads(task=1e-5, message=3e-6, copy_bandwidth=7e9)
    options = SimOptions(overheads=over, pin=pin)
    program = build_program(workload, options)
    node_of = np.random.default_rng(1).integers(0, machine.nodes, program.n_parts)
    layout = build_layout(program, machine, node_of, options)
    src = np.repeat(np.arange(program.n_parts), np.diff(program.out_ptr))
    dst = program.out_idx
    remote = node_of[src] != node_of[dst]
    copy = program.out_bytes / 7e9
    send = copy + np.where(remote, over.message, 0.0)
    recv = np.where(remote, over.message + copy, 0.0)
    assert remote.any() and not remote.all()
    assert np.array_equal(layout.out_extra, np.bincount(src, weights=send, minlength=src.max() + 1))
    assert np.array_equal(layout.in_extra, np.bincount(dst, weights=recv, minlength=dst.max() + 1))
    order = np.argsort(node_of, kind="stable")
    assert np.array_equal(layout.node_parts, order)


def _halo_by_sorting(domain, parts, ghost, cell_bytes, corners) -> HaloGraph:
    """The former construction: every (offset, partition) pair, then np.unique."""
    ndim = len(parts)
    extents = [np.diff(b) for b in partition_bounds(domain, parts)]
    coords = np.indices(parts).reshape(ndim, -1)
    n = coords.shape[1]
    keys, sizes = [], []
    for offset in itertools.product((-1, 0, 1), repeat=ndim):
        nonzero = sum(o != 0 for o in offset)
        if nonzero == 0 or (not corners and nonzero > 1):
            continue
        nb = coords + np.asarray(offset)[:, None]
        ok = np.all((nb >= 0) & (nb < np.asarray(parts)[:, None]), axis=0)
        cells = np.ones(int(ok.sum()), dtype=np.int64)
        for a in range(ndim):
            along = extents[a][coords[a, ok]]
            cells *= np.minimum(ghost, along) if offset[a] else along
        keys.append(np.flatnonzero(ok) * n + np.ravel_multi_index(tuple(nb[:, ok]), parts))
        sizes.append(cells * cell_bytes)
    pair, inverse = np.unique(np.concatenate(keys), return_inverse=True)
    total = np.bincount(inverse.reshape(-1), weights=np.concatenate(sizes))
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(pair // n, minlength=n), out=indptr[1:])
    return HaloGraph(indptr, pair % n, np.rint(total).astype(np.int64))


@pytest.mark.parametrize(
    ("domain", "parts", "ghost", "corners"),
    [
        ((64, 48), (8, 6), 1, True),
        ((64, 48), (8, 6), 3, False),
        ((20, 21, 22), (4, 3, 5), 2, True),
        ((30, 7), (5, 1), 4, True),
        ((6, 9), (1, 3), 1, True),
    ],
)
def test_grid_halo_without_a_sort_is_the_sorted_one(domain, parts, ghost, corners) -> None:
    got = grid_halo(domain, parts, ghost=ghost, cell_bytes=40, corners=corners)
    want = _halo_by_sorting(domain, parts, ghost, 40, corners)
    for name in ("indptr", "indices", "nbytes"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
        assert getattr(got, name).dtype == np.int64


@pytest.mark.parametrize("cap", [1, 5, 300, 3000])
def test_the_radix_heap_pops_in_time_then_push_order_with_its_core(cap: int) -> None:
    heap, buckets, links = new_heap(cap)
    clk = Clocks(
        heap=heap,
        buckets=buckets,
        links=links,
        ctr=np.zeros(5, dtype=np.int64),
        **{f: None for f in Clocks._fields if f not in ("heap", "buckets", "links", "ctr")},
    )
    rng = np.random.default_rng(cap)
    plain: list[tuple[float, int, int, int, int]] = []
    seq = 0
    now = 0.0  # the last time popped: no push goes below it
    popped, want = [], []
    for _ in range(20_000):
        if plain and (len(plain) >= cap or rng.random() < 0.45):
            peeked = peek_event(clk)
            popped.append(pop_event(clk))
            t, _, item, kind, core = heapq.heappop(plain)
            want.append((t, kind, item, core))
            assert peeked == (kind, item)
            now = t
        else:
            # Coarse steps for many ties (broken by push order), fine ones for low buckets,
            # and now itself (bucket 0 while it is being popped); -0.0 is 0.0.
            u = rng.random()
            if u < 0.4:
                t = now + float(rng.integers(0, 8)) * 0.5
            elif u < 0.8:
                t = now + float(rng.exponential(1e-9 if u < 0.6 else 10.0))
            else:
                t = -0.0 if now == 0.0 else now
            item, kind = int(rng.integers(0, 1 << 40)), int(rng.integers(0, 3))
            core = int(rng.integers(0, 1 << 20))
            push_event(clk, t, item, kind, core)
            heapq.heappush(plain, (t, seq, item, kind, core))
            seq += 1
    assert popped == want
    assert int(clk.ctr[C_EVENTS]) == len(plain)


def test_dependencies_are_kept_for_two_tasks_per_partition_not_per_task() -> None:
    machine = load_machine("ec2-c4.8xlarge", 4)
    options = SimOptions(phases=3, sync="allreduce")
    workload = WorkloadSource(spec="dambreak:parts=16x16,steps=9").as_given()
    placement = place(workload, machine, "birdshot", seed=2)
    ours = simulate(workload, placement, machine, options, timeline_steps=(0, 9))
    plain = reference_run(workload, placement, machine, options)
    assert np.array_equal(ours.tasks.end, plain.task_end)
    assert np.array_equal(ours.tasks.start, plain.task_start)


def test_per_step_sums_are_the_bincount_and_window_loop() -> None:
    rng = np.random.default_rng(5)
    n_parts, phases, n_nodes = 7, 2, 3
    steps = [(0, 2), (2, 5)]  # two segments, each with its own placement
    nodes = [rng.integers(0, n_nodes, n_parts), rng.integers(0, n_nodes, n_parts)]
    n_steps = 5
    n_tasks = n_steps * phases * n_parts
    start = np.sort(rng.uniform(0.0, 5.0, n_tasks))
    end = start + rng.uniform(0.0, 1.5, n_tasks)
    end[::11] = start[::11]  # empty tasks
    bounds = np.concatenate(([0.0], np.sort(rng.uniform(0.0, 6.5, n_steps))))
    task_node = np.concatenate(
        [np.tile(nd, (b - a) * phases) for (a, b), nd in zip(steps, nodes, strict=True)]
    )
    step_of = np.repeat(np.arange(n_steps), phases * n_parts)
    want_work = np.bincount(
        step_of * n_nodes + task_node, weights=end - start, minlength=n_steps * n_nodes
    ).reshape(n_steps, n_nodes)
    want_busy = np.zeros((n_steps, n_nodes))
    for a, b, k in zip(start, end, task_node, strict=True):
        if b <= a:
            continue
        w = max(int(np.searchsorted(bounds, a, side="right")) - 1, 0)
        while w < n_steps:
            lo, hi = max(bounds[w], a), min(bounds[w + 1], b)
            if hi > lo:
                want_busy[w, k] += hi - lo
            if b <= bounds[w + 1]:
                break
            w += 1
    busy, work = np.zeros((n_steps, n_nodes)), np.zeros((n_steps, n_nodes))
    per_step = phases * n_parts
    _task_sums(
        start,
        end,
        np.array([a * per_step for a, _ in steps] + [n_steps * per_step]),
        np.stack(nodes).astype(np.int64),
        np.array([a for a, _ in steps]),
        n_parts,
        phases,
        bounds,
        busy,
        work,
    )
    assert np.array_equal(work, want_work)
    assert np.array_equal(busy, want_busy)
