"""Plain kernels: the batch the runtime generates computes what the per-partition calls do,
bit for bit, whatever order the ready partitions come in."""

from __future__ import annotations

import copy
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from grapeshot.model.program import Box, Context, Exchange, Phase, Program, Reduction
from grapeshot.model.task_halos import no_halos
from grapeshot.runtime.halo_plan import Arena
from grapeshot.runtime.plain_batch import borrowed, cache_dir, iparams_table, is_numba_kernel
from grapeshot.runtime.rank_plan import _batch_of
from grapeshot.runtime.serial import exchange_all, run_serial
from tests.mpi_harness import ROOT


@njit(cache=True, nogil=True)
def smooth(u, out, count, box, params):
    """A 2-D 5-point smoother with a data-dependent branch, and a returned maximum."""
    g = box.ghost
    top = -1.0e300
    n = 0
    for i in range(g, g + box.shape[0]):
        for j in range(g, g + box.shape[1]):
            v = u[i, j] + params[0] * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])
            if v > params[1]:
                v = np.sqrt(v) + box.lo[0] * 1e-3
                n += 1
            out[i, j] = v
            top = max(top, v)
    count[0] = n + box.part
    return top


@njit(cache=True, nogil=True)
def stir(q, tag, box, params):
    """3-D, a field with a trailing axis, returns nothing."""
    g = box.ghost
    for i in range(g, g + box.shape[0]):
        for j in range(g, g + box.shape[1]):
            for k in range(g, g + box.shape[2]):
                q[i, j, k, 0] = q[i, j, k, 1] * params[0] + box.hi[2] - box.domain[1]
    tag[0] = box.lo[0] * 100 + box.lo[1] * 10 + box.lo[2]


@njit(cache=True, nogil=True)
def scratch_mean(u, out, box, params):
    """Allocates (a scratch row per row) and takes views of its fields: numba's memory
    manager is on inside a kernel the batch hands borrowed views."""
    g = box.ghost
    total = 0.0
    for i in range(g, g + box.shape[0]):
        row = np.empty(box.shape[1])
        above, below = u[i - 1, g : g + box.shape[1]], u[i + 1, g : g + box.shape[1]]
        row[:] = (above + below) * params[0]
        out[i, g : g + box.shape[1]] = row
        total += row.sum()
    return total


class Scratch(Program):
    name = "scratch"

    def __init__(self) -> None:
        self.domain_shape, self.parts_shape = (12, 10), (3, 2)
        self.phases = (
            Phase(
                "mean", scratch_mean, fields=("u", "out"), params=lambda ctx: (0.5,),
                exchange=Exchange(("u",)), reduce=Reduction("total", "sum"),
            ),
        )  # fmt: skip

    def init_block(self, box: Box):
        u = np.random.default_rng(box.part).uniform(size=box.padded_shape)
        return {"u": u, "out": np.zeros_like(u)}

    def output_fields(self, block, box):
        return {"out": block["out"][box.interior()].copy()}


class Smooth(Program):
    name = "smooth"
    work_field = "count"

    def __init__(self, domain, parts, seed: int) -> None:
        self.domain_shape, self.parts_shape = domain, parts
        self.rng_seed = seed
        self.phases = (
            Phase(
                "smooth", smooth, fields=("u", "out", "count"),
                params=lambda ctx: [0.2, 1.5 + ctx.step], exchange=Exchange(("u",)),
                reduce=Reduction("top", "max"),
            ),
        )  # fmt: skip

    def init_block(self, box: Box):
        rng = np.random.default_rng([self.rng_seed, box.part])
        u = rng.uniform(0.0, 3.0, size=box.padded_shape)
        return {"u": u, "out": np.zeros_like(u), "count": np.zeros(1, dtype=np.int64)}

    def output_fields(self, block, box):
        return {"out": block["out"][box.interior()].copy()}


class Stir(Program):
    name = "stir"

    def __init__(self) -> None:
        self.domain_shape, self.parts_shape = (6, 5, 4), (3, 2, 2)
        self.phases = (Phase("stir", stir, fields=("q", "tag"), params=lambda ctx: (2.0,)),)

    def init_block(self, box: Box):
        q = np.arange(np.prod(box.padded_shape) * 2, dtype=np.float64)
        return {"q": q.reshape((*box.padded_shape, 2)), "tag": np.zeros(1, dtype=np.int64)}

    def output_fields(self, block, box):
        return {"q": block["q"][(*box.interior(), 0)].copy()}


def _batched_against_calls(program: Program, order: list[int], cut: int) -> None:
    """Run phase 0 through the generated batch with the partitions in ``order``, in two batch
    calls cut at ``cut`` (as the runtime makes them when messages arrive in between), and
    through ``Phase.call`` one by one in id order, from the same state; compare everything."""
    phase = program.phases[0]
    boxes = program.boxes()
    blocks = {box.part: program.init_block(box) for box in boxes}
    if phase.exchange is not None:
        ordered = [blocks[p] for p in range(len(boxes))]
        exchange_all(phase.exchange, boxes, ordered)
    expected = copy.deepcopy(blocks)
    ctx = Context(step=1, time=0.5)
    values = [phase.call(expected[b.part], b, ctx) for b in boxes]

    parts = np.arange(len(boxes))
    batch = _batch_of(program, phase, blocks[0])
    assert batch is not None and batch.shapes
    arena = Arena(batch.fields, parts, blocks)
    arrays = tuple(arena.flat[f] for f in batch.fields)
    bases = np.array([[arena.base[f][p] for p in parts] for f in batch.fields], dtype=np.int64)
    known: dict[int, np.ndarray] = {}
    iparams = iparams_table(batch, boxes, parts.tolist(), arena, known)
    # A re-plan's table from the rows kept: the same rows, in the new order of partitions.
    again = iparams_table(batch, boxes, parts[::-1].tolist(), arena, known)
    assert np.array_equal(again, iparams[::-1]) and set(known) == set(parts.tolist())
    todo_all = np.asarray(order, dtype=np.int64)
    got = np.full(len(boxes), np.nan)
    for todo in (todo_all[:cut], todo_all[cut:]):
        stamps = np.zeros(todo.size + 1, dtype=np.int64)
        batch.run(
            arrays, bases, todo, batch.params(ctx), iparams, got, stamps, no_halos(len(parts))
        )
        assert (stamps > 0).all()  # every task stamped: the halo protocol kept
    for p in parts:
        for name, array in expected[p].items():
            assert np.array_equal(blocks[p][name], array), (p, name)
    want = [0.0 if v is None else float(v) for v in values]
    assert np.array_equal(got, np.asarray(want))


@settings(max_examples=25, deadline=None)
@given(order=st.permutations(range(20)), cut=st.integers(0, 20), seed=st.integers(0, 3))
def test_a_2d_kernel_batched_in_any_order_gives_the_calls_bits(order, cut, seed) -> None:
    _batched_against_calls(Smooth((23, 17), (5, 4), seed=seed), order, cut)


@settings(max_examples=10, deadline=None)
@given(order=st.permutations(range(12)), cut=st.integers(0, 12))
def test_a_3d_kernel_with_a_trailing_axis_and_no_return_value(order, cut) -> None:
    _batched_against_calls(Stir(), order, cut)


def test_a_kernel_that_allocates_gets_the_calls_bits_and_frees_what_it_allocates() -> None:
    from numba.core.runtime import _nrt_python as nrt
    from numba.core.runtime import rtsys

    _batched_against_calls(Scratch(), list(range(6)), 2)  # compiled outside the count
    was_on = nrt.memsys_stats_enabled()
    nrt.memsys_enable_stats()
    try:
        before = rtsys.get_allocation_stats()
        _batched_against_calls(Scratch(), [5, 0, 3, 1, 4, 2], 3)
        after = rtsys.get_allocation_stats()
    finally:
        if not was_on:
            nrt.memsys_disable_stats()
    allocated, freed = after.alloc - before.alloc, after.free - before.free
    assert allocated > 0 and allocated == freed


@njit
def _views(flat, start):
    """Borrowed views of ``flat`` from ``start``, of 1 to 3 axes; one written through."""
    one = borrowed(flat, start, (6,))
    two = borrowed(flat, start, (2, 3))
    three = borrowed(flat, start, (1, 2, 3))
    two[1, 2] = -1
    return one.copy(), two.copy(), three.copy(), two.strides, three[0, :, 1:].copy()


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.float32])
def test_borrowed_views_are_the_slice_reshaped(dtype) -> None:
    flat = np.arange(20).astype(dtype)
    expected = flat[4:10].copy()
    expected[5] = -1
    one, two, three, strides, part = _views(flat, 4)
    assert flat[9] == -1  # written through to the array itself
    assert np.array_equal(one, expected) and one.dtype == dtype
    assert np.array_equal(two, expected.reshape(2, 3))
    assert np.array_equal(three, expected.reshape(1, 2, 3))
    assert strides == (3 * flat.itemsize, flat.itemsize)
    assert np.array_equal(part, expected.reshape(2, 3)[:, 1:])


def test_borrowed_takes_only_a_flat_contiguous_array_and_a_tuple_of_ints() -> None:
    from numba.core.errors import TypingError

    @njit
    def of(a, shape):
        return borrowed(a, 0, shape).sum()

    assert of(np.ones(6), (2, 3)) == 6.0
    for array, shape in [
        (np.ones((2, 3)), (2, 3)),  # not flat
        (np.ones(12)[::2], (2, 3)),  # not contiguous
        (np.ones(6), (2.0, 3.0)),  # not integers
    ]:
        with pytest.raises(TypingError):
            of(array, shape)


def test_serial_and_task_runtime_agree_in_process() -> None:
    """The task runtime on one rank (batched) against the serial executor (calls)."""
    from mpi4py import MPI

    from grapeshot.runtime.driver import run_program

    program = Smooth((30, 20), (6, 4), seed=3)
    serial = run_serial(program, 3)
    outcome = run_program(program, steps=3, strategy="cyclic", seed=0, comm=MPI.COMM_SELF)
    assert outcome.summary["fields_digest"] == serial.digest()
    assert np.array_equal(outcome.work.T, serial.work.T)
    assert outcome.summary["setup_seconds"] > 0 and outcome.summary["gather_seconds"] > 0


def test_what_is_not_batched() -> None:
    """Python kernels, kernels behind a Python boundary, and custom packers run per task."""

    def python_kernel(u, out, count, box, params):
        out[...] = u

    program = Smooth((8, 8), (2, 2), seed=0)
    block = program.init_block(program.boxes()[0])
    plain = program.phases[0]
    assert is_numba_kernel(plain.kernel) and _batch_of(program, plain, block) is not None
    slow = Phase("p", python_kernel, fields=plain.fields)
    assert not is_numba_kernel(python_kernel) and _batch_of(program, slow, block) is None
    walled = Phase(
        "w", smooth, fields=plain.fields, exchange=Exchange(("u",), boundary=lambda b, x: None)
    )
    assert _batch_of(program, walled, block) is None


def test_the_generated_loop_is_cached_once_and_found_again(tmp_path) -> None:
    """A second process loads the compiled loop from the cache folder (no new module file),
    and an edited kernel gets a module of its own."""
    kernel_file = tmp_path / "mykernel.py"
    kernel_file.write_text(
        "from numba import njit\n\n"
        "@njit(cache=True, nogil=True)\n"
        "def k(u, box, params):\n"
        "    u[box.ghost, box.ghost] += params[0]\n"
    )
    script = (
        "import sys, numpy as np\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "import mykernel\n"
        "from grapeshot.model.program import Phase, partition_boxes\n"
        "from grapeshot.runtime.plain_batch import plain_batch\n"
        "batch = plain_batch(Phase('k', mykernel.k, fields=('u',)), 2, (2,), None)\n"
        "print(len(batch.run.stats.cache_hits))\n"
        "batch.run((np.zeros(9),), np.zeros((1, 1), np.int64), np.zeros(1, np.int64), "
        "np.ones(1), np.array([[0, 0, 0, 1, 1, 1, 1, 1, 3, 3]]), np.zeros(1), "
        "np.zeros(2, np.int64), __import__('grapeshot.model.task_halos', fromlist=['x'])"
        ".no_halos(1))\n"
        "print(sum(batch.run.stats.cache_hits.values()))\n"
    )
    env = dict(os.environ, GRAPESHOT_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))

    def run() -> int:
        out = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
        )
        return int(out.stdout.split()[-1])

    assert run() == 0  # compiled
    assert run() == 1  # loaded from the cache
    folder = tmp_path / "cache" / "batches"
    assert len(list(folder.glob("*.py"))) == 1
    kernel_file.write_text(kernel_file.read_text().replace("+=", "-="))
    assert run() == 0  # the edited kernel is compiled anew, in a module of its own
    assert len(list(folder.glob("*.py"))) == 2
    assert cache_dir().name == "batches"


def test_faces_only_exchanges_move_no_corner_and_change_no_bit() -> None:
    """Exchange(corners=False) (the heat example's): no diagonal neighbour pair exchanges,
    on the serial executor and on the task runtime, and a 5-point stencil gets the same bits
    as with corners."""
    import dataclasses

    from mpi4py import MPI

    from grapeshot.apps.user import load_user_app
    from grapeshot.runtime.driver import run_program

    app = load_user_app(f"{ROOT / 'examples' / 'program' / 'heat.py'}:make_heat")
    faces = app.make_program((4, 3), (40, 30), 0)
    corners = app.make_program((4, 3), (40, 30), 0)
    corners.phases = tuple(
        dataclasses.replace(ph, exchange=dataclasses.replace(ph.exchange, corners=True))
        for ph in corners.phases
    )
    boxes = faces.boxes()

    def diagonal(pair) -> bool:
        a, b = boxes[pair[0]].index, boxes[pair[1]].index
        return all(x != y for x, y in zip(a, b, strict=True))

    serial = {name: run_serial(p, 4) for name, p in (("faces", faces), ("corners", corners))}
    assert serial["faces"].digest() == serial["corners"].digest()
    assert not any(diagonal(pair) for pair in serial["faces"].halo_bytes)
    assert any(diagonal(pair) for pair in serial["corners"].halo_bytes)
    outcome = run_program(faces, steps=4, strategy="cyclic", seed=0, comm=MPI.COMM_SELF)
    assert outcome.summary["fields_digest"] == serial["faces"].digest()
    assert not any(diagonal(pair) for pair in outcome.halo_bytes)


def make_setter(value: float):
    """A factory of kernels that differ only in a captured constant (two phases' kernels)."""

    @njit(nogil=True)
    def setter(u, box, params):
        u[box.ghost, box.ghost] = value
        return value

    return setter


def _run_one(run) -> float:
    """What the generated loop ``run`` returns for one partition of one cell (3×3 padded)."""
    got = np.zeros(1)
    run(
        (np.zeros(9),), np.zeros((1, 1), np.int64), np.zeros(1, np.int64), np.ones(1),
        np.array([[0, 0, 0, 1, 1, 1, 1, 1, 3, 3]]), got, np.zeros(2, np.int64), no_halos(1),
    )  # fmt: skip
    return float(got[0])


def test_two_kernels_of_one_factory_get_loops_of_their_own() -> None:
    """The loop is keyed on what the kernel captured, not only on its name and file: phase
    A must not run phase B's kernel (before: both returned the constant bound last)."""
    from grapeshot.runtime.plain_batch import plain_batch

    def loop(value: float):
        return plain_batch(Phase("set", make_setter(value), fields=("u",)), 2, (2,), None).run

    first, second = loop(1.0), loop(100.0)
    assert first is not second
    assert (_run_one(first), _run_one(second)) == (1.0, 100.0)
    assert loop(1.0) is first  # the same constant again: the same loop


FACTORY = """\
from numba import njit


def make(value):
    @njit(nogil=True, cache=True)
    def setter(u, box, params):
        u[box.ghost, box.ghost] = value
        return value

    return setter
"""

RUN_FACTORY = """\
import sys, numpy as np
sys.path.insert(0, {folder!r})
import factory
from grapeshot.model.program import Phase
from grapeshot.model.task_halos import no_halos
from grapeshot.runtime.plain_batch import plain_batch
batch = plain_batch(Phase('k', factory.make({value}), fields=('u',)), 2, (2,), None)
got = np.zeros(1)
batch.run((np.zeros(9),), np.zeros((1, 1), np.int64), np.zeros(1, np.int64), np.ones(1),
          np.array([[0, 0, 0, 1, 1, 1, 1, 1, 3, 3]]), got, np.zeros(2, np.int64), no_halos(1))
print(got[0], sum(batch.run.stats.cache_hits.values()))
"""


def _run_factory(tmp_path, value: float, pythonpath: str) -> tuple[float, int]:
    env = dict(os.environ, GRAPESHOT_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=pythonpath)
    script = RUN_FACTORY.format(folder=str(tmp_path), value=value)
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    )
    got, hits = out.stdout.split()
    return float(got), int(hits)


def test_the_disk_cache_serves_no_other_runs_constant(tmp_path) -> None:
    """A later run with another captured constant compiles its own loop (before: the loop
    cached by an earlier run with 1.0 returned 1.0 for a kernel made with 7.0)."""
    (tmp_path / "factory.py").write_text(FACTORY)
    assert _run_factory(tmp_path, 1.0, str(ROOT / "src")) == (1.0, 0)
    assert _run_factory(tmp_path, 7.0, str(ROOT / "src")) == (7.0, 0)
    assert _run_factory(tmp_path, 1.0, str(ROOT / "src")) == (
        1.0,
        1,
    )  # its own loop, from the cache


def test_an_upgraded_grapeshot_runs_no_loop_compiled_against_its_old_code(tmp_path) -> None:
    """A loop compiles grapeshot's own helpers into it (``as_value``, the halo hooks): after
    those change (a ``git pull``, a ``pip install -U``) the loop is compiled anew, and the old
    one is deleted from the folder (before: the old loop kept running the old code)."""
    import shutil

    (tmp_path / "factory.py").write_text(FACTORY)
    site = tmp_path / "site"
    shutil.copytree(
        ROOT / "src" / "grapeshot", site / "grapeshot",
        ignore=shutil.ignore_patterns("__pycache__"),
    )  # fmt: skip
    assert _run_factory(tmp_path, 2.0, str(site)) == (2.0, 0)
    helper = site / "grapeshot" / "runtime" / "plain_batch.py"
    text = helper.read_text()
    old = "return lambda value: float(value)\n"
    assert text.count(old) == 1
    before = helper.stat().st_mtime_ns
    helper.write_text(text.replace(old, "return lambda value: float(value) + 0.5\n"))
    os.utime(helper, ns=(before + 10**9, before + 10**9))
    assert _run_factory(tmp_path, 2.0, str(site)) == (2.5, 0)
    assert len(list((tmp_path / "cache" / "batches").glob("*.py"))) == 1
