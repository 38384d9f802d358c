from __future__ import annotations

import numpy as np
import pytest

from grapeshot.apps import get_app
from grapeshot.apps.commbench import (
    CHUNK_BYTES,
    COMPUTE,
    SCENES,
    SMALL_CHUNK_BYTES,
    commbench_matrix,
    make_program,
    make_trace,
)
from grapeshot.model.errors import InputError


def assert_two_distinct_others(m) -> None:
    """Every row of the CommBench matrix: exactly two messages, to two other chares."""
    n = m.shape[0]
    assert m.shape == (n, n)
    assert np.all(np.diff(m.indptr) == 2)
    dest = m.indices.reshape(n, 2)
    own = np.arange(n)[:, None]
    assert np.all(dest != own)
    assert np.all(dest[:, 0] != dest[:, 1])
    assert np.all((dest >= 0) & (dest < n))


@pytest.mark.parametrize("n", [3, 4, 17, 1000])
def test_each_chare_sends_two_messages_to_distinct_others(n: int) -> None:
    m = commbench_matrix(n, seed=n)
    assert_two_distinct_others(m)
    assert m.dtype == np.int64


def test_sizes_equal_within_a_row_and_spread_as_specified() -> None:
    chunk, spread = 1000, 0.25
    m = commbench_matrix(4000, chunk_bytes=chunk, spread=spread, seed=1)
    per_row = m.data.reshape(-1, 2)
    assert np.all(per_row[:, 0] == per_row[:, 1])  # one chunk, sent to both destinations
    sizes = per_row[:, 0]
    assert sizes.min() >= chunk * (1 - spread)
    assert sizes.max() <= chunk * (1 + spread)
    # Uniform on [750, 1250]: mean 1000, sd 144; the mean of 4000 draws is within 1 %.
    assert abs(sizes.mean() - chunk) < 10
    assert abs(sizes.std() - spread * chunk / np.sqrt(3)) < 10
    uniform = commbench_matrix(50, spread=0.0, seed=1)
    assert np.all(uniform.data == CHUNK_BYTES)


def test_destinations_are_uniform_over_the_others() -> None:
    n, trials = 5, 3000
    counts = np.zeros((n, n))
    for seed in range(trials):
        counts += commbench_matrix(n, chunk_bytes=1, spread=0.0, seed=seed).toarray()
    freq = counts / trials
    off = ~np.eye(n, dtype=bool)
    assert np.all(np.diag(freq) == 0)
    # Each of the 4 others is picked with probability 2/4; sd of the frequency ~ 0.009.
    assert np.all(np.abs(freq[off] - 0.5) < 0.05)


def test_determinism_and_spread_independence() -> None:
    a = commbench_matrix(300, seed=7)
    b = commbench_matrix(300, seed=7)
    c = commbench_matrix(300, seed=8)
    assert (a != b).nnz == 0
    assert (a != c).nnz > 0
    # The destinations are drawn before the sizes: the spread changes sizes only.
    d = commbench_matrix(300, spread=0.0, seed=7)
    assert np.array_equal(a.indices, d.indices)
    assert np.array_equal(a.indptr, d.indptr)


def test_trace_halo_is_the_commbench_matrix() -> None:
    seen = []
    w = make_trace(
        "default", (4, 3, 2), 5, seed=3, progress=lambda done, total: seen.append((done, total))
    )
    m = commbench_matrix(24, seed=3)
    assert w.domain_shape == (4, 3, 2)
    assert w.parts_shape == (4, 3, 2)
    assert w.cost.shape == (5, 24)
    assert np.all(w.cost == COMPUTE)
    assert w.units == "s" and w.app == "commbench" and w.scene == "default"
    assert np.array_equal(w.halo.indptr, m.indptr)
    assert np.array_equal(w.halo.indices, m.indices)
    assert np.array_equal(w.halo.nbytes, m.data)
    assert np.array_equal(w.halo.sources(), np.repeat(np.arange(24), 2))
    assert seen == [(i, 5) for i in range(1, 6)]


def test_trace_scenes_cells_and_compute() -> None:
    w = make_trace("uniform-sizes", (8, 8), 2, cells=32, compute=0.0, chunk_bytes=4096)
    assert w.domain_shape == (32, 32)
    assert np.all(w.halo.nbytes == 4096)
    assert np.all(w.cost == 0.0)
    assert set(SCENES) == {"default", "uniform-sizes", "small"}
    assert get_app("commbench").make_trace is make_trace


@pytest.mark.parametrize(
    ("call", "where"),
    [
        (lambda: commbench_matrix(2), "n_chares"),
        (lambda: commbench_matrix(10, chunk_bytes=0), "chunk_bytes"),
        (lambda: commbench_matrix(10, spread=1.0), "spread"),
        (lambda: commbench_matrix(10, spread=-0.1), "spread"),
        (lambda: commbench_matrix(10, spread="wide"), "spread"),
        (lambda: commbench_matrix(10, seed=None), "seed"),
        (lambda: make_trace("nope", (2, 2), 1), "scene"),
        (lambda: make_trace("default", (2,), 1), "parts"),
        (lambda: make_trace("default", (2, 0), 1), "parts"),
        (lambda: make_trace("default", (1, 2), 1), "parts"),
        (lambda: make_trace("default", (2, 2), 0), "steps"),
        (lambda: make_trace("default", (2, 2), 1, compute=-1.0), "compute"),
        (lambda: make_trace("default", (4, 4), 1, cells=2), "parts"),
        (lambda: make_trace("default", (2, 2), 1, progress=3), "progress"),
    ],
)
def test_bad_input(call, where: str) -> None:
    with pytest.raises(InputError, match=f"^{where}"):
        call()


# --- the runnable program ---------------------------------------------------------------------


def test_program_sends_the_trace_messages_with_real_bytes() -> None:
    from grapeshot.runtime.serial import run_serial

    program = make_program("small", (4, 3), seed=3)
    run = run_serial(program, 3)
    m = commbench_matrix(12, chunk_bytes=SMALL_CHUNK_BYTES, seed=3)
    sent = np.zeros((12, 12), dtype=np.int64)
    for (src, dst), nbytes in run.halo_bytes.items():
        sent[src, dst] = nbytes
    assert np.array_equal(sent, 3 * m.toarray())  # the trace's graph, every step, real bytes
    w = run.workload("work")
    assert np.array_equal(w.halo.nbytes, m.data)  # bytes per step
    assert np.all(run.work == 8 * 8)  # default 8 x 8 cells per chare
    assert run.time == 3.0


def test_program_digest_is_deterministic_and_depends_on_every_arrival() -> None:
    from grapeshot.runtime.serial import run_serial

    a = run_serial(make_program("small", (4, 4), seed=1), 4).digest()
    assert a == run_serial(make_program("small", (4, 4), seed=1), 4).digest()
    assert a != run_serial(make_program("small", (4, 4), seed=2), 4).digest()
    program = make_program("small", (4, 4), seed=1)
    boxes, graph = program.boxes(), program.phases[0].graph
    chunks = [(q, graph.pack(program.init_block(boxes[q]), boxes[q], 0)) for q in (1, 2)]
    mixes = []
    for order in (chunks, chunks[::-1]):
        block = program.init_block(boxes[0])
        graph.unpack(block, boxes[0], order)
        mixes.append(int(block["mix"][0]))
    assert mixes[0] != mixes[1]  # the fold sees the arrival order, which executors fix


def test_program_refuses_a_corrupted_or_misrouted_chunk() -> None:
    from grapeshot.model.program import SimulationError

    program = make_program("small", (2, 2), seed=0)
    boxes = program.boxes()
    graph = program.phases[0].graph
    block = program.init_block(boxes[0])
    src = 1
    buf = graph.pack(program.init_block(boxes[src]), boxes[src], 0)
    buf[100] ^= 1
    with pytest.raises(SimulationError, match="corrupted"):
        graph.unpack(block, boxes[0], [(src, buf)])
    good = graph.pack(program.init_block(boxes[src]), boxes[src], 0)
    with pytest.raises(SimulationError, match="corrupted"):  # labelled as another sender
        graph.unpack(block, boxes[0], [(3, good[: program.sizes[3]])])
    with pytest.raises(SimulationError, match="expected"):
        graph.unpack(block, boxes[0], [(src, good[:-1])])


def test_program_is_registered_runnable() -> None:
    from grapeshot.apps import APPS

    assert APPS["commbench"].runnable
    assert get_app("commbench").make_program is make_program
    program = make_program("default", (2, 2, 2), cells=4, seed=0)
    assert program.domain_shape == (4, 4, 4) and program.n_parts == 8
    assert np.all((program.sizes >= CHUNK_BYTES // 2) & (program.sizes < 3 * CHUNK_BYTES // 2))


def test_run_without_a_scene_takes_the_first_one() -> None:
    # CommBench has no "dambreak": `run commbench` without --scene runs its first scene.
    from grapeshot.apps import default_scene, make_app_program

    assert default_scene("commbench") == next(iter(SCENES))
    assert default_scene("swe") == "dambreak"
    program = make_app_program("commbench", None, (2, 2), None, 0)
    assert program.scene == next(iter(SCENES))


@pytest.mark.parametrize(
    ("call", "where"),
    [
        (lambda: make_program("nope", (2, 2)), "scene"),
        (lambda: make_program("small", (2,)), "parts"),
        (lambda: make_program("small", (1, 2)), "parts"),
        (lambda: make_program("small", (4, 4), cells=2), "parts"),
        (lambda: make_program("small", (2, 2), cells="x"), "cells"),
        (lambda: make_program("small", (2, 2), seed=None), "seed"),
    ],
)
def test_program_bad_input(call, where: str) -> None:
    with pytest.raises(InputError, match=f"^{where}"):
        call()
