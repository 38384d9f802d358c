from __future__ import annotations

import numpy as np
import pytest

from grapeshot.model.errors import InputError
from grapeshot.model.program import Exchange, Phase
from grapeshot.runtime.serial import run_serial
from tests.runtime.toy_programs import Heat, Walkers


@pytest.mark.parametrize("parts", [(1, 1), (3, 2), (4, 3), (8, 6)])
def test_heat_is_bitwise_independent_of_partitions(parts) -> None:
    ref = run_serial(Heat(parts=(1, 1)), 12)
    run = run_serial(Heat(parts=parts), 12)
    assert np.array_equal(run.fields()["u"], ref.fields()["u"])
    assert run.digest() == ref.digest()


def test_heat_conserves_heat_and_records_a_trace() -> None:
    run = run_serial(Heat(parts=(3, 2)), 5)
    assert run.fields()["u"].sum() == pytest.approx(36.0)
    w = run.workload()
    assert w.cost.shape == (5, 6) and w.work.shape == (5, 6)
    assert (w.cost >= 0).all() and w.units == "s"
    # Neighbour pairs: 3x2 grid with corners.
    assert w.halo.n_messages == 2 * (3 + 4 + 2 * 2)
    assert run.time == 5.0


def test_particles_migrate_and_are_kept() -> None:
    ref = run_serial(Walkers(parts=(1, 1)), 30)
    run = run_serial(Walkers(parts=(4, 2)), 30)
    assert run.work.sum(axis=1).tolist() == [40] * 30
    assert np.array_equal(ref.fields()["x"], run.fields()["x"])
    assert run.digest() == ref.digest()


def test_bad_steps() -> None:
    with pytest.raises(InputError, match="--steps"):
        run_serial(Heat(), 0)


def test_partitions_thinner_than_ghost_are_refused() -> None:
    with pytest.raises(InputError, match="--parts"):
        run_serial(Heat(domain=(4, 4), parts=(8, 1)), 1)


def test_exchange_pack_all_needs_pack_and_defaults_to_pack_per_offset() -> None:
    with pytest.raises(ValueError, match="give pack as well"):
        Exchange(("u",), 1, pack_all=lambda block, box, offsets: [])
    calls = []

    def pack(block, box, offset):
        calls.append(offset)
        return np.full(2, offset[0], dtype=float)

    got = Exchange(("u",), 1, pack, lambda *a: None).packer_all()(None, None, [(1, 0), (-1, 1)])
    assert calls == [(1, 0), (-1, 1)]
    assert [g.tolist() for g in got] == [[1.0, 1.0], [-1.0, -1.0]]


#: A user's program whose kernel nothing has compiled yet (no numba cache): ``SEEN`` gets,
#: at every call of its ``params``, right before the kernel runs, how many signatures numba
#: has compiled for it (0 until it compiled one).
COLD_PROGRAM = """
import numpy as np
from numba import njit

from grapeshot.model.program import Exchange, Phase, Program

SEEN = []


@njit(nogil=True)
def half_step(u, out, box, params):
    g = box.ghost
    nx, ny = box.shape
    for i in range(g, g + nx):
        for j in range(g, g + ny):
            out[i, j] = 0.5 * u[i, j] + 0.125 * (
                u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]
            )


class Cold(Program):
    name = "cold"

    def __init__(self, parts, cells):
        self.parts_shape = tuple(parts)
        self.domain_shape = tuple(cells) if cells is not None else (16, 16)
        self.phases = (
            Phase("u-to-v", half_step, fields=("u", "v"), params=self.params,
                  exchange=Exchange(("u",))),
            Phase("v-to-u", half_step, fields=("v", "u"), params=self.params,
                  exchange=Exchange(("v",))),
        )

    def params(self, ctx):
        SEEN.append(len(half_step.signatures))
        return [0.0]

    def init_block(self, box):
        u = np.ones(box.padded_shape)
        return {"u": u, "v": u.copy()}

    def output_fields(self, block, box):
        return {"u": block["u"][box.interior()].copy()}

    def advance(self, ctx):
        return 1.0


def make_cold(parts, cells=None, seed=0):
    return Cold(parts, cells)
"""


def test_a_serial_run_compiles_its_kernels_in_the_set_up_not_in_the_steps(tmp_path) -> None:
    """`grapeshot run --executor serial` (plain, one process): numba compiles the user's
    kernel before the first timed step, as the task runtime does, so the first partition's
    seconds are its own and the compiling is set-up."""
    import json

    from grapeshot.apps.user import load_user_app
    from tests.cli.helpers import run_main

    path = tmp_path / "cold_kernel.py"
    path.write_text(COLD_PROGRAM, encoding="utf-8")
    spec = f"{path}:make_cold"
    steps, parts, phases = 3, 4, 2
    result = run_main(
        "run", "--app", spec, "--executor", "serial", "--parts", "2,2", "--steps", str(steps),
        "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    summary = json.loads(result.out)
    seen = load_user_app(spec).factory.__globals__["SEEN"]
    timed = steps * parts * phases  # the kernel calls of the steps, each after its params
    assert seen[0] == 0 and len(seen) > timed  # the warm-up's first call compiled it
    assert min(seen[-timed:]) == 1  # ... before any timed call
    assert summary["compile_seconds"] == [0.0] and summary["compiled"] == [[]]
    assert summary["setup_seconds"] > 0


def test_what_compiles_during_the_steps_is_counted() -> None:
    from numba import njit

    @njit(nogil=True)
    def scale(u):
        u *= 1.0

    def kernel(block, box, ctx):
        # From step 1 on a float32 copy: a type the warm-up (step 0) never gave it.
        scale(block["u"] if ctx.step == 0 else block["u"].astype(np.float32))

    program = Heat(parts=(2, 1))
    program.phases = (*program.phases, Phase("scale", kernel))
    cold = run_serial(program, 1)
    assert (cold.compiled, cold.compile_seconds) == ([], 0.0)  # warmed before the step
    late = run_serial(program, 3)
    assert late.compiled == [scale.py_func.__qualname__] and late.compile_seconds > 0.0


def test_run_phase_gives_the_same_bits_in_any_order() -> None:
    from grapeshot.model.program import Context
    from grapeshot.runtime.serial import run_phase

    for program in (Heat(parts=(3, 2)), Walkers(parts=(4, 2))):
        expected = run_serial(program, 6).digest()
        boxes = program.boxes()
        blocks = [program.init_block(box) for box in boxes]
        rng = np.random.default_rng(5)
        t = 0.0
        for step in range(6):
            ctx = Context(step, t)
            for phase in program.phases:
                run_phase(program, phase, boxes, blocks, ctx, order=rng.permutation(len(boxes)))
            t += program.advance(ctx)
        run = run_serial(program, 1)
        run.blocks = blocks
        assert run.digest() == expected
