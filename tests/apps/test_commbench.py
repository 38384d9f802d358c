from __future__ import annotations

import numpy as np
import pytest

from grapeshot.apps import get_app
from grapeshot.apps.commbench import (
    CHUNK_BYTES,
    COMPUTE,
    SCENES,
    commbench_matrix,
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
    assert set(SCENES) == {"default", "uniform-sizes"}
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
