"""The partitions-per-core rule: regenerate a SPEC, coarsen a trace, or refuse."""

from __future__ import annotations

import math

import numpy as np
import pytest

from grapeshot.model.errors import InputError
from grapeshot.model.machine_file import load_machine
from grapeshot.model.synthetic import synthetic_workload
from grapeshot.model.workload import HaloGraph, Workload, grid_halo
from grapeshot.sim import WorkloadSource, coarsen_trace, grid_for, regenerate_synthetic
from grapeshot.sim.resize import parts_needed


def test_parts_needed_is_total_cores_times_ppc() -> None:
    m = load_machine("ec2-c4.8xlarge", 32)
    assert parts_needed(m, 4) == 32 * 18 * 4
    for bad in (0, -1, 1.5, True):
        with pytest.raises(InputError, match="--ppc"):
            parts_needed(m, bad)  # type: ignore[arg-type]


def test_grid_for_gives_exactly_the_partitions_with_square_cells() -> None:
    assert grid_for(576, (1024, 1024)) == (24, 24)
    assert grid_for(576, (512, 256, 256)) == (16, 6, 6)  # 32 x 42.7 x 42.7 cells
    assert grid_for(2304, (512, 256, 256)) == (24, 12, 8)  # 21.3 x 21.3 x 32 cells
    g = grid_for(4608, (512, 256, 256))
    assert math.prod(g) == 4608
    cells = [d / k for d, k in zip((512, 256, 256), g, strict=True)]
    assert max(cells) / min(cells) < 1.6
    assert grid_for(7, (4, 1)) is None  # 7 partitions cannot fit 4 x 1 cells
    assert grid_for(13, (100, 100)) == (13, 1)  # a prime: one axis takes all


def test_synthetic_spec_is_regenerated_on_the_same_domain() -> None:
    spec = "dambreak:parts=16x8,cells=8,steps=6,floor=1e-4,cell_bytes=40,ghost=2"
    base = synthetic_workload(spec)
    same = regenerate_synthetic(spec, 128)
    assert same.parts_shape == (16, 8) and np.array_equal(same.cost, base.cost)
    fine = regenerate_synthetic(spec, 576)
    assert fine.n_parts == 576
    assert fine.domain_shape == base.domain_shape
    # Same physical work: wet cells times cell_cost, plus the floor scaled to the same total.
    np.testing.assert_allclose(fine.cost.sum(axis=1), base.cost.sum(axis=1), rtol=1e-9)
    assert fine.halo.n_messages > base.halo.n_messages
    assert np.array_equal(
        fine.halo.nbytes,
        grid_halo(base.domain_shape, fine.parts_shape, ghost=2, cell_bytes=40).nbytes,
    )


@pytest.mark.parametrize(
    "spec", ["binary:parts=8x8,busy=0.5,steps=40", "uniform:parts=8x8,steps=40"]
)
def test_partition_level_costs_are_scaled_to_keep_the_work(spec: str) -> None:
    base = synthetic_workload(spec)
    fine = regenerate_synthetic(spec, 256)
    assert fine.n_parts == 256
    assert fine.cost.sum() == pytest.approx(base.cost.sum(), rel=0.05)


def test_regeneration_that_does_not_fit_the_domain_is_refused() -> None:
    with pytest.raises(InputError, match=r"needs 1000 partitions.*cells"):
        regenerate_synthetic("dambreak:parts=4x4,cells=4,steps=2", 1000)


def fine_trace(halo_kind: str = "grid") -> Workload:
    domain, parts = (48, 24), (12, 6)
    rng = np.random.default_rng(0)
    cost = rng.uniform(0, 1e-3, size=(3, 72))
    work = rng.integers(0, 100, size=(3, 72))
    if halo_kind == "grid":
        halo = grid_halo(domain, parts, ghost=2, cell_bytes=24)
    else:
        g = grid_halo(domain, parts, ghost=1, cell_bytes=8)
        halo = HaloGraph(g.indptr, g.indices, g.nbytes + (g.indices % 3))
    return Workload(domain, parts, cost, halo, work=work, app="trace", scene="fine")


def test_trace_is_coarsened_by_whole_blocks() -> None:
    trace = fine_trace()
    coarse = coarsen_trace(trace, 18)
    assert coarse.n_parts == 18 and coarse.domain_shape == trace.domain_shape
    np.testing.assert_allclose(coarse.cost.sum(axis=1), trace.cost.sum(axis=1), rtol=1e-12)
    assert coarse.work is not None and coarse.work.sum() == trace.work.sum()
    # The halo is recognised as a grid halo (ghost 2, 24 bytes a cell) and recomputed.
    expected = grid_halo(trace.domain_shape, coarse.parts_shape, ghost=2, cell_bytes=24)
    assert np.array_equal(coarse.halo.indices, expected.indices)
    assert np.array_equal(coarse.halo.nbytes, expected.nbytes)
    # Block (0, 0) is fine partitions rows 0..f0-1, columns 0..f1-1.
    f0 = 12 // coarse.parts_shape[0]
    f1 = 6 // coarse.parts_shape[1]
    block = trace.cost.reshape(3, 12, 6)[:, :f0, :f1].sum(axis=(1, 2))
    np.testing.assert_allclose(coarse.cost[:, 0], block, rtol=1e-12)


def test_unrecognised_halo_is_summed_across_blocks() -> None:
    trace = fine_trace("irregular")
    coarse = coarsen_trace(trace, 8)
    assert coarse.n_parts == 8
    src = np.repeat(np.arange(72), np.diff(trace.halo.indptr))
    blocks = coarse.parts_shape
    f = (12 // blocks[0], 6 // blocks[1])
    block_of = (np.arange(72) // 6 // f[0]) * blocks[1] + (np.arange(72) % 6) // f[1]
    crossing = block_of[src] != block_of[trace.halo.indices]
    assert coarse.halo.nbytes.sum() == trace.halo.nbytes[crossing].sum()


def test_trace_refinement_and_impossible_merges_are_refused() -> None:
    trace = fine_trace()
    with pytest.raises(InputError, match=r"needs 144 partitions but the trace has 72"):
        coarsen_trace(trace, 144)
    with pytest.raises(InputError, match=r"needs 7 partitions"):
        coarsen_trace(trace, 7)
    m = load_machine("ec2-c4.8xlarge", 32)
    source = WorkloadSource(workload=trace)
    with pytest.raises(InputError, match="576 partitions but the trace has 72"):
        source.at_parts(parts_needed(m, 1))


def test_source_caches_and_applies_the_step_range() -> None:
    source = WorkloadSource(spec="dambreak:parts=8x8,steps=10", steps=(2, 5))
    a = source.at_parts(64)
    assert a.n_steps == 3 and source.at_parts(64) is a
    with pytest.raises(InputError, match="exactly one"):
        WorkloadSource()
