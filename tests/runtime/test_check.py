"""grapeshot check's logic: a program on 1×1 against partitioned grids, phase by phase.

The programs below are a user's small stencil codes, each keeping or breaking one convention
of docs/program-api.md; tests/cli/test_check_cli.py runs some through the command line as
``tests.runtime.test_check:FACTORY``.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from grapeshot.apps.user import load_user_app
from grapeshot.model.errors import InputError
from grapeshot.model.program import Exchange, Phase, Program, Reduction
from grapeshot.runtime.check import check_program, default_grids
from grapeshot.runtime.serial import run_serial
from tests.mpi_harness import ROOT

HEAT = f"{ROOT / 'examples' / 'program' / 'heat.py'}:make_heat"


@njit(nogil=True, cache=True)
def _blur(u, out, box, params):
    """``out`` = a blur of ``u`` reaching ``params[0]`` cells along the axes (and the four
    diagonal neighbours with ``params[1] > 0``); the walls extend the edge cells into every
    ghost layer, over the whole padded width (the halos' ghost rows too), so the ghost cells
    where a wall meets a neighbour's halo are filled as 1×1 fills them."""
    g = box.ghost
    nx, ny = box.shape
    for k in range(1, g + 1):
        if box.lo[1] == 0:
            u[:, g - k] = u[:, g]
        if box.hi[1] == box.domain[1]:
            u[:, g + ny - 1 + k] = u[:, g + ny - 1]
    for k in range(1, g + 1):
        if box.lo[0] == 0:
            u[g - k, :] = u[g, :]
        if box.hi[0] == box.domain[0]:
            u[g + nx - 1 + k, :] = u[g + nx - 1, :]
    r = int(params[0])
    diag = params[1] > 0
    for i in range(g, g + nx):
        for j in range(g, g + ny):
            s = u[i - r, j] + u[i + r, j] + u[i, j - r] + u[i, j + r]
            if diag:
                s += u[i - 1, j - 1] + u[i - 1, j + 1] + u[i + 1, j - 1] + u[i + 1, j + 1]
                out[i, j] = 0.5 * u[i, j] + 0.0625 * s
            else:
                out[i, j] = 0.5 * u[i, j] + 0.125 * s


@njit(nogil=True, cache=True)
def _total(u, box, params):
    g = box.ghost
    nx, ny = box.shape
    return u[g : g + nx, g : g + ny].sum()


class Plate(Program):
    """Two half-steps ``u → v → u`` of :func:`_blur`, each exchanging what it reads."""

    name = "plate"

    def __init__(self, parts, cells=None, *, ghost=1, width=1, reach=1, corners=False,
                 diag=False, dtype=np.float64, exchange_v=True, extra=()):  # fmt: skip
        self.parts_shape = tuple(parts)
        self.domain_shape = tuple(cells) if cells is not None else (24, 20)
        self.ghost, self.dtype, self.knobs = ghost, dtype, [float(reach), float(diag)]
        halo = Exchange(("u",), width=width, corners=corners)
        back = Exchange(("v",), width=width, corners=corners) if exchange_v else None
        self.phases = (
            Phase("u-to-v", _blur, fields=("u", "v"), params=self.params, exchange=halo),
            Phase("v-to-u", _blur, fields=("v", "u"), params=self.params, exchange=back),
            *extra,
        )

    def params(self, ctx):
        return self.knobs

    def init_block(self, box):
        u = np.zeros(box.padded_shape, dtype=self.dtype)
        x = np.arange(box.lo[0], box.hi[0])[:, None]
        y = np.arange(box.lo[1], box.hi[1])[None, :]
        u[box.interior()] = np.sin(0.7 * x) * 8 + np.cos(0.3 * y) * 4
        return {"u": u, "v": u.copy()}

    def output_fields(self, block, box):
        return {"u": block["u"][box.interior()].copy()}

    def advance(self, ctx):
        return 1.0


def make_wide(parts, cells=None, seed=0):
    """Reads 2 cells along each axis, exchanges 1 (ghost 2): reads stale ghost cells."""
    return Plate(parts, cells, ghost=2, width=1, reach=2)


def make_wide_ok(parts, cells=None, seed=0):
    """The same kernel with the exchange it needs."""
    return Plate(parts, cells, ghost=2, width=2, reach=2)


def make_corners(parts, cells=None, seed=0):
    """A 9-point stencil with Exchange(corners=False): reads corner ghosts no one fills."""
    return Plate(parts, cells, diag=True, corners=False)


def make_unexchanged(parts, cells=None, seed=0):
    """The second half-step reads ``v``'s ghosts, which no exchange ever fills."""
    return Plate(parts, cells, exchange_v=False)


def make_ints(parts, cells=None, seed=0):
    """Integer fields in the halo exchanges: a stencil on them truncates."""
    return Plate(parts, cells, dtype=np.int64)


def make_returns(parts, cells=None, seed=0):
    """A kernel returning the plate's total in a phase without a reduction."""
    return Plate(parts, cells, extra=(Phase("total", _total, fields=("u",)),))


def make_reduced(parts, cells=None, seed=0):
    """The same, reduced."""
    total = Phase("total", _total, fields=("u",), reduce=Reduction("total", "sum"))
    return Plate(parts, cells, extra=(total,))


def _check(factory, steps=3):
    return check_program(factory, steps, seed=0)


def test_the_heat_example_passes_and_its_digest_is_the_serial_runs() -> None:
    app = load_user_app(HEAT)
    report = check_program(lambda parts: app.make_program(parts, (48, 40), 0), 4, seed=0)
    assert report.ok and not report.warnings, report.verdict()
    assert [(g.parts, g.status) for g in report.grids] == [
        ((2, 1), "same"), ((1, 2), "same"), ((3, 5), "same"),
    ]  # fmt: skip
    serial = run_serial(app.make_program((4, 4), (48, 40), 0), 4).digest()
    assert report.digest == serial
    assert {g.digest for g in report.grids} == {serial}
    # Faces only: the corner ghosts of the exchanged fields are NaN in check mode, and the
    # 5-point stencil never reads them.
    assert report.nan_fields == ("u", "v")
    assert report.verdict().startswith("same bits: heat on 2×1, 1×2, 3×5")


def test_a_kernel_reading_beyond_its_exchange_is_named_with_its_phase_and_partition() -> None:
    report = _check(make_wide)
    assert not report.ok
    assert [g.status for g in report.grids] == ["differs"] * 3
    first = report.first
    assert first is not None and first.parts == (2, 1)
    diff = first.difference
    assert (diff.step, diff.phase, diff.field) == (0, "u-to-v", "block['v']")
    # The named partition holds the named cell, which is within 2 cells of its edge on the
    # split axis, and the over-read shows as NaN (check mode's unfilled ghosts).
    box = make_wide((2, 1)).boxes()[diff.part]
    assert diff.part == 0 and diff.part_index == (0, 0)
    assert all(lo <= c < hi for c, lo, hi in zip(diff.cell, box.lo, box.hi, strict=True))
    assert box.hi[0] - diff.cell[0] <= 2
    assert diff.value == "nan" and diff.reference != "nan" and report.hint() is not None
    line = report.verdict()
    assert line.startswith("mismatch: plate on 2×1, step 0, phase 'u-to-v': block['v']")
    assert f"cell {diff.cell} in partition 0 (0, 0)" in line
    # With the exchange it needs, the same kernel passes.
    assert _check(make_wide_ok).ok


def test_a_corner_read_without_corners_differs_only_where_there_are_corners() -> None:
    report = _check(make_corners)
    assert [(g.parts, g.status) for g in report.grids] == [
        ((2, 1), "same"), ((1, 2), "same"), ((3, 5), "differs"),
    ]  # fmt: skip
    diff = report.first.difference
    assert diff.value == "nan" and diff.phase == "u-to-v"
    # The cell is in a corner of its partition where both sides have neighbours.
    box = make_corners((3, 5)).boxes()[diff.part]
    for c, lo, hi, n in zip(diff.cell, box.lo, box.hi, box.domain_shape, strict=True):
        assert (c == lo and lo > 0) or (c == hi - 1 and hi < n)


def test_a_stale_ghost_read_differs_without_nan() -> None:
    # v's ghosts are never exchanged: check mode leaves them (a field no exchange moves may
    # hold ghosts init_block computed), and the stale values still differ from 1×1's.
    report = _check(make_unexchanged)
    assert report.nan_fields == ("u",)
    first = report.first
    assert first.status == "differs" and first.difference.phase == "v-to-u"
    assert first.difference.value != "nan" and report.hint() is None


def test_integer_fields_in_an_exchange_warn_and_still_compare() -> None:
    report = _check(make_ints)
    assert report.ok, report.verdict()
    kinds = [(w.kind, w.phase) for w in report.warnings]
    assert kinds == [("integer-exchange", "u-to-v"), ("integer-exchange", "v-to-u")]
    assert "exchanges 'u', an integer field (int64)" in report.warnings[0].message
    assert report.verdict().endswith("; 2 warnings")
    assert not _check(make_wide_ok).warnings


def test_a_returned_value_without_a_reduction_warns_once() -> None:
    report = _check(make_returns)
    assert report.ok, report.verdict()
    assert [(w.kind, w.phase) for w in report.warnings] == [("unreduced-return", "total")]
    assert "no reduction, so the value is dropped" in report.warnings[0].message
    assert not _check(make_reduced).warnings


def test_a_grid_whose_kernel_raises_fails_where_1x1_does_not() -> None:
    def picky(u, box, params):
        if box.lo[0] > 0:
            raise ValueError("away from the wall")

    def make(parts):
        return Plate(parts, extra=(Phase("picky", picky, fields=("u",)),))

    report = check_program(make, 2, seed=0)
    assert not report.ok and report.first.status == "failed"
    assert [g.status for g in report.grids] == ["failed", "same", "failed"]
    assert "phase 'picky' failed: ValueError: away from the wall" in report.first.message
    assert report.verdict().startswith("failed: plate on 2×1, partition 1, step 0")


def test_partition_orders_are_random_and_follow_the_seed() -> None:
    def orders(seed: int) -> list[int]:
        seen: list[int] = []

        def note(u, box, params):
            seen.append(box.part)

        check_program(
            lambda parts: Plate(parts, extra=(Phase("note", note, fields=("u",)),)),
            2, seed=seed, grids=[(3, 5)],
        )  # fmt: skip
        return seen

    first = orders(0)
    grid = first[1:16]  # after 1×1's one partition, the 3×5 grid's 15 in its order
    assert sorted(grid) == list(range(15)) and grid != sorted(grid)
    assert orders(0) == first and orders(1) != first


def test_grids_are_cut_to_the_cells_and_a_domain_without_one_is_refused() -> None:
    assert default_grids((64, 64), 1) == [(2, 1), (1, 2), (3, 5)]
    assert default_grids((4, 3), 2) == [(2, 1)]  # 1×2 and 3×5 cut to 1×1 and 2×1
    assert default_grids((8, 8, 8), 1) == [(2, 1, 1), (1, 2, 1), (1, 1, 2), (3, 5, 2)]
    with pytest.raises(InputError, match="no partitioned grid to compare with 1×1"):
        check_program(lambda parts: Plate(parts, (1, 1)), 1, seed=0)
    with pytest.raises(InputError, match="--steps"):
        check_program(make_wide, 0, seed=0)


def test_particles_that_migrate_pass_in_random_orders() -> None:
    from tests.runtime.toy_programs import Walkers

    report = check_program(lambda parts: Walkers(parts=parts), 12, seed=3)
    assert report.ok and not report.warnings, report.verdict()
    assert report.digest == run_serial(Walkers(parts=(4, 2)), 12).digest()
