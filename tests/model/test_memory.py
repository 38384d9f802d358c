"""Memory estimates (issue 27): counts that match what is built, a bound on what building
takes, and the refusal when the machine has less."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from grapeshot.model import memory
from grapeshot.model.errors import InputError
from grapeshot.model.synthetic import synthetic_workload
from grapeshot.model.workload import grid_halo


@pytest.mark.parametrize(
    "shape", [(1, 1), (1, 5), (2, 2), (7, 3), (16, 16), (1, 1, 4), (3, 4, 5), (6, 6, 6)]
)
@pytest.mark.parametrize("corners", [True, False])
def test_grid_messages_counts_the_halo_grid_halo_builds(shape, corners) -> None:
    halo = grid_halo(tuple(2 * k for k in shape), shape, corners=corners)
    assert memory.grid_messages(shape, corners=corners) == len(halo.indices)


def test_huge_sizes_are_counted_without_overflow() -> None:
    # 1e9 × 1e9 partitions (a typo's worth of zeros): int64 arithmetic would wrap.
    n = memory.synthetic_bytes("binary", (10**9, 10**9), 10, (10**10, 10**10))
    assert n > 2**63 and isinstance(n, int)


def test_the_estimate_bounds_what_building_a_workload_allocates() -> None:
    # tracemalloc sees numpy's buffers: the estimate of the build is above the traced peak,
    # and not wildly so (a refusal must not turn away work that fits several times over).
    spec, shape, steps = "binary:parts=120x90,steps=6", (120, 90), 6
    estimate = memory.synthetic_bytes("binary", shape, steps, (120 * 16, 90 * 16))
    tracemalloc.start()
    try:
        wl = synthetic_workload(spec)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert wl.n_parts == 120 * 90
    assert peak <= estimate <= 2 * peak, (peak, estimate)
    assert memory.workload_bytes(wl.n_parts, steps, len(wl.halo.indices)) >= (
        wl.cost.nbytes + wl.halo.indices.nbytes + wl.halo.nbytes.nbytes
    )


def test_format_bytes() -> None:
    assert memory.format_bytes(512) == "512 B"
    assert memory.format_bytes(1536) == "1.5 KiB"
    assert memory.format_bytes(80 * 2**30) == "80.0 GiB"
    assert memory.format_bytes(10**20) == "88817.8 PiB"


def test_available_memory_reads_meminfo(tmp_path: Path) -> None:
    fake = tmp_path / "meminfo"
    fake.write_text("MemTotal:  16000000 kB\nMemFree:  1000 kB\nMemAvailable:  2048 kB\n")
    assert memory._meminfo_available(str(fake)) == 2048 * 1024
    fake.write_text("MemTotal:  16000000 kB\n")
    assert memory._meminfo_available(str(fake)) is None
    assert memory._meminfo_available(str(tmp_path / "none")) is None
    room = memory.available_memory()
    assert room is None or room > 0


def test_check_memory_refuses_above_what_is_available(monkeypatch) -> None:
    monkeypatch.setattr(memory, "available_memory", lambda: 3 * 2**30)
    memory.check_memory(3 * 2**30, "--x", "for it", "less")  # exactly what there is: fine
    with pytest.raises(InputError) as err:
        memory.check_memory(5 * 2**30, "--parts 9,9", "for its fields", "fewer partitions")
    assert str(err.value) == (
        "--parts 9,9: needs about 5.0 GiB (5,368,709,120 bytes) for its fields, more than "
        "the 3.0 GiB this machine has available; expected fewer partitions"
    )
    monkeypatch.setattr(memory, "available_memory", lambda: None)  # unknown: not refused
    memory.check_memory(10**18, "--x", "for it", "less")


def test_program_bytes_knows_the_built_in_apps_only() -> None:
    assert memory.program_bytes("my_app.py:make", None, (4, 4), None, 10) is None
    swe = memory.program_bytes("swe", "dambreak", (4, 4), (1000, 1000), 10)
    assert swe is not None and swe >= 160 * 10**6
    # CommBench's partitions hold their chunks: the small scene's are 16× smaller.
    big = memory.program_bytes("commbench", "default", (64, 64), None, 1)
    small = memory.program_bytes("commbench", "small", (64, 64), None, 1)
    assert big is not None and small is not None and big > 10 * small
    # Without --cells every partition counts one cell at least.
    assert memory.program_bytes("flip", "dambreak", (10, 10), None, 1) == (
        280 * 100 + 400 * 100 + 80 * 100
    )


def test_the_simulation_and_placement_estimates_grow_with_every_size() -> None:
    base = memory.simulation_bytes(100, 10, 1, 4)
    assert memory.simulation_bytes(200, 10, 1, 4) > base
    assert memory.simulation_bytes(100, 20, 1, 4) > base
    assert memory.simulation_bytes(100, 10, 2, 4) > base
    assert memory.simulation_bytes(100, 10, 1, 4, window=3) > base
    place = memory.placement_bytes(100, 10, 800, 4, replay=False)
    assert memory.placement_bytes(100, 10, 800, 4, replay=True) == place + 8 * 10 * 100
    assert np.isfinite(float(place))


def test_a_run_of_too_many_steps_names_steps() -> None:
    with pytest.raises(InputError, match=r"^--parts 4,4 --steps 10000000000000: needs about"):
        memory.check_program_memory("swe", "dambreak", (4, 4), None, 10**13, where="--parts 4,4")
    with pytest.raises(InputError, match=r"^--parts 4,4 --cells 100000: needs about"):
        memory.check_program_memory(
            "swe", "dambreak", (4, 4), (100000, 100000), 10, where="--parts 4,4 --cells 100000"
        )


def test_a_run_on_ranks_counts_this_nodes_share_and_rank_0s_gather(monkeypatch) -> None:
    # CommBench on MPI ranks holds some 6 MB a partition (chunks sent, received, folded):
    # 576 partitions need about 3.8 GiB on one node, half of that with half the ranks here.
    whole = memory.program_bytes("commbench", "default", (24, 24), None, 2, on_ranks=True)
    serial = memory.program_bytes("commbench", "default", (24, 24), None, 2)
    assert whole is not None and serial is not None and whole > 2 * serial
    monkeypatch.setattr(memory, "available_memory", lambda: 3 * 2**30)
    with pytest.raises(InputError, match=r"^--parts 24,24: needs about 3\.8 GiB"):
        memory.check_program_memory(
            "commbench", "default", (24, 24), None, 2, where="--parts 24,24", share=1.0
        )
    memory.check_program_memory(
        "commbench", "default", (24, 24), None, 2, where="--parts 24,24", share=0.5
    )
    # Rank 0 gathers the whole domain at the end, whatever its share.
    monkeypatch.setattr(memory, "available_memory", lambda: 60 * 10**6)
    with pytest.raises(InputError, match="needs about"):
        memory.check_program_memory(
            "swe", "dambreak", (4, 4), (1000, 1000), 2, where="--cells 1000", share=0.0
        )
