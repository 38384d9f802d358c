"""Does a program give the same bits on every partitioning? The logic of ``grapeshot check``.

A program keeps to the program API's conventions (docs/program-api.md) when its kernels read
only their partition's arrays and ghosts that halos fill; then every executor, placement and
partition grid gives the same bits. Nothing warns a user who breaks them: a kernel reading
deeper than its exchange's width gets a different digest for every partitioning. This module
runs the program on one partition (1×1, the serial executor's own phase,
:func:`~grapeshot.runtime.serial.run_phase`) and, in lockstep, on several partition grids,
each phase running its partitions in a fresh random order (from an explicit seed), and
compares the fields bit for bit after every phase: the output fields
(:meth:`~grapeshot.model.program.Program.output_fields`) and the interior of every grid
field of the blocks. The first difference is named: step, phase, field, global cell and
the partition holding it.

Check mode makes an over-read visible: in the partitioned runs, the ghost cells of an
exchanged float field that no exchange ever fills (deeper than the widest exchange of that
field towards that side, or a corner with ``Exchange(corners=False)``) start as NaN, so a
kernel reading one spreads NaN from its partition's edge. Ghost cells on the domain's walls
(the kernel's to fill) and fields no exchange moves (a coefficient whose ghosts
``init_block`` computed) keep their values.

It also warns about what is legal but likely wrong: a kernel returning a value in a phase
without a reduction (the value is dropped) and an integer field in a grid exchange (a
stencil on integers truncates). Pure: one process, no MPI.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from grapeshot.model.errors import GrapeshotError, InputError, exception_line
from grapeshot.model.fields import assemble_fields, fields_digest
from grapeshot.model.program import (
    Block,
    Box,
    Context,
    Offset,
    Program,
    halo_slab,
    make_block,
    neighbour_offsets,
)
from grapeshot.model.seed import as_generator
from grapeshot.model.workload import partition_bounds
from grapeshot.runtime.serial import run_phase

#: The partition grids compared with 1×1 when none are given, per number of axes; each is
#: cut down to what the domain holds (:func:`default_grids`). Both directions of a split,
#: and an uneven grid with partitions of different sizes.
DEFAULT_GRIDS: dict[int, tuple[tuple[int, ...], ...]] = {
    2: ((2, 1), (1, 2), (3, 5)),
    3: ((2, 1, 1), (1, 2, 1), (1, 1, 2), (3, 5, 2)),
}

#: ``progress(phases done, phases in all)`` after every phase of every step.
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class CheckWarning:
    """Something legal but likely wrong.

    Attributes
    ----------
    kind
        ``"unreduced-return"`` (a kernel returned a value in a phase without a reduction) or
        ``"integer-exchange"`` (an integer field in a grid halo exchange).
    phase
        The phase's name.
    message
        One line saying what and what to do.
    """

    kind: str
    phase: str
    message: str


@dataclass(frozen=True)
class Difference:
    """The first difference between a partitioned run and the 1×1 run.

    Attributes
    ----------
    step, phase
        After which phase of which step (0-based step) the fields first differ.
    field
        The field: an output name, or ``block['NAME']`` for the interior of a grid field.
    cell
        The first differing global cell (grid fields) in the partition below, else ``None``.
    row
        For particle fields: the first differing row of the fields sorted by ``id``.
    part, part_index
        The partition (id, and position in the partition grid) holding it: the lowest id
        among those holding a difference; ``None`` when it cannot be told.
    reference, value
        The value there on 1×1 and on this grid, as text.
    cells, parts
        How many cells (rows) differ, in how many partitions.
    problem
        Set instead of the above when the arrays cannot be compared cell by cell (shape,
        dtype, a field missing on one side).
    """

    step: int
    phase: str
    field: str
    cell: tuple[int, ...] | None = None
    row: int | None = None
    part: int | None = None
    part_index: tuple[int, ...] | None = None
    reference: str = ""
    value: str = ""
    cells: int = 0
    parts: int = 0
    problem: str | None = None

    def text(self, grid: str) -> str:
        """One line: where it first differs and how."""
        where = f"step {self.step}, phase {self.phase!r}: {self.field}"
        if self.problem is not None:
            return f"{where} {self.problem}"
        at = f"cell {self.cell}" if self.cell is not None else f"row {self.row}"
        if self.part is not None:
            at += f" in partition {self.part} {self.part_index}"
        return (
            f"{where} differs first at {at}: {self.reference} on 1×1, {self.value} on {grid} "
            f"({self.cells} {'cells' if self.cell is not None else 'rows'} differ in "
            f"{self.parts} partition{'s' if self.parts != 1 else ''})"
        )

    @property
    def read_nan(self) -> bool:
        """NaN where 1×1 has a number: a read of a ghost cell check mode set to NaN."""
        return self.value == "nan" and self.reference != "nan"


#: What a NaN where 1×1 has a number means (:attr:`Difference.read_nan`).
NAN_HINT = (
    "NaN where 1×1 has a number: check mode puts NaN in the ghost cells no exchange fills, so "
    "a kernel read deeper than its Exchange width (or a corner with corners=False)"
)


@dataclass
class GridResult:
    """How one partition grid compared with 1×1.

    Attributes
    ----------
    parts
        The partition grid.
    status
        ``"same"`` (bitwise equal after every phase), ``"differs"``, ``"failed"`` (the run
        raised where 1×1 did not) or ``"skipped"`` (the factory or the domain refused the
        grid).
    digest
        :func:`~grapeshot.model.fields.fields_digest` of the final output fields (``"same"``
        only: equal to 1×1's).
    difference
        The first difference (``"differs"``).
    message
        What failed (``"failed"``) or why the grid was skipped (``"skipped"``).
    """

    parts: tuple[int, ...]
    status: str
    digest: str | None = None
    difference: Difference | None = None
    message: str | None = None
    #: (step, phase index) where it first went wrong, to find the earliest over the grids.
    at: tuple[int, int] | None = field(default=None, repr=False)

    @property
    def label(self) -> str:
        """``"3×5"``."""
        return grid_label(self.parts)

    def text(self) -> str:
        """One line: what happened on this grid."""
        if self.status == "same":
            return "same bits after every phase"
        if self.difference is not None:
            return self.difference.text(self.label)
        return self.message or self.status


@dataclass
class CheckReport:
    """What ``grapeshot check`` found.

    Attributes
    ----------
    name, scene
        The program's.
    domain
        Cells per axis.
    steps, seed
        Steps compared; the seed of the partition orders (and of the factory).
    digest
        The 1×1 run's final :func:`~grapeshot.model.fields.fields_digest`, what ``grapeshot
        run`` prints for a program that passes.
    grids
        One result per partition grid, in the order run.
    warnings
        Hazards found on the way.
    nan_fields
        The fields whose unfilled ghost cells check mode set to NaN.
    """

    name: str
    scene: str
    domain: tuple[int, ...]
    steps: int
    seed: int
    digest: str
    grids: list[GridResult]
    warnings: list[CheckWarning]
    nan_fields: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """No grid differs or failed (warnings and skipped grids allowed)."""
        return not any(g.status in ("differs", "failed") for g in self.grids)

    @property
    def first(self) -> GridResult | None:
        """The grid that went wrong earliest (step, then phase, then grid order)."""
        wrong = [g for g in self.grids if g.at is not None]
        return min(wrong, key=lambda g: g.at) if wrong else None

    def verdict(self) -> str:
        """The one-line verdict."""
        if self.ok:
            ran = [g.label for g in self.grids if g.status == "same"]
            line = (
                f"same bits: {self.name} on {', '.join(ran)} (partitions in random order, seed "
                f"{self.seed}) equals 1×1 after every phase of {self.steps} "
                f"step{'s' if self.steps != 1 else ''}"
            )
            if self.warnings:
                n = len(self.warnings)
                line += f"; {n} warning{'s' if n != 1 else ''}"
            return line
        first = self.first
        assert first is not None  # not ok: some grid went wrong
        word = "mismatch" if first.status == "differs" else "failed"
        return f"{word}: {self.name} on {first.label}, {first.text()}"

    def hint(self) -> str | None:
        """What the first difference suggests (:data:`NAN_HINT`), if anything."""
        first = self.first
        if first is not None and first.difference is not None and first.difference.read_nan:
            return NAN_HINT
        return None

    def as_dict(self) -> dict[str, Any]:
        """The report as plain JSON-ready data."""
        first = self.first
        return {
            "app": self.name,
            "scene": self.scene,
            "cells": list(self.domain),
            "steps": self.steps,
            "seed": self.seed,
            "ok": self.ok,
            "verdict": self.verdict(),
            "fields_digest": self.digest,
            "first": None if first is None else first.label,
            "hint": self.hint(),
            "grids": [_grid_dict(g) for g in self.grids],
            "warnings": [asdict(w) for w in self.warnings],
            "nan_fields": list(self.nan_fields),
        }


def _grid_dict(g: GridResult) -> dict[str, Any]:
    diff = None if g.difference is None else asdict(g.difference)
    for key in ("cell", "part_index"):
        if diff is not None and diff[key] is not None:
            diff[key] = list(diff[key])
    return {
        "parts": list(g.parts),
        "status": g.status,
        "fields_digest": g.digest,
        "difference": diff,
        "message": g.message,
    }


def grid_label(parts: Sequence[int]) -> str:
    """``(3, 5)`` → ``"3×5"``."""
    return "×".join(str(int(k)) for k in parts)


def default_grids(domain: Sequence[int], ghost: int) -> list[tuple[int, ...]]:
    """:data:`DEFAULT_GRIDS` for ``domain``'s axes, each axis cut to the partitions the
    domain holds (at least ``ghost`` cells each), duplicates and 1×1 left out."""
    ndim = len(domain)
    if ndim not in DEFAULT_GRIDS:
        raise InputError(
            "--cells", f"gives a {ndim}-D domain", "2 or 3 values (a 2-D or 3-D program)"
        )
    most = [max(1, int(d) // max(1, ghost)) for d in domain]
    grids: list[tuple[int, ...]] = []
    for grid in DEFAULT_GRIDS[ndim]:
        cut = tuple(min(k, m) for k, m in zip(grid, most, strict=True))
        if any(k > 1 for k in cut) and cut not in grids:
            grids.append(cut)
    return grids


def check_program(
    make: Callable[[tuple[int, ...]], Program],
    steps: int,
    *,
    seed: int,
    ndim: int = 2,
    grids: Sequence[tuple[int, ...]] | None = None,
    progress: Progress | None = None,
) -> CheckReport:
    """Run the program ``make`` builds on 1×1 and on ``grids``, compare after every phase.

    Parameters
    ----------
    make
        ``make(parts)``: the program on the partition grid ``parts``.
    steps
        Steps to run (>= 1).
    seed
        Seed of the partition orders (a fresh permutation per grid and phase).
    ndim
        Axes of the program (the reference is ``(1,) * ndim``), when ``grids`` is not given.
    grids
        Partition grids to compare with 1×1; default :func:`default_grids`.
    progress
        Called after every phase with (phases done, phases in all).

    Returns
    -------
    CheckReport
        Every grid's result, the warnings, the verdict.

    Raises
    ------
    InputError
        Bad ``steps``, ``seed`` or ``grids``, a program that cannot be built on 1×1, a 1×1
        run that fails by itself, or no partitioned grid the program accepts.
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise InputError("--steps", f"got {steps!r}", "an integer >= 1")
    rng = as_generator(seed)
    if grids is not None:
        grids = [tuple(int(k) for k in g) for g in grids]
        if not grids or len({len(g) for g in grids}) != 1:
            raise InputError("--parts", f"got {grids}", "grids with the same number of axes")
        ndim = len(grids[0])
    try:
        reference = _Run(make((1,) * ndim), None, nan_ghosts=False)
    except InputError as exc:
        where, expected = exc.where, exc.expected
        raise InputError(where, f"{exc.problem} (on 1×1, check's reference)", expected) from None
    except GrapeshotError:  # the user's init_block raised: one line naming it (make_block)
        raise
    except Exception as exc:  # the user's factory
        raise InputError(
            "check", f"building the 1×1 blocks failed: {exception_line(exc)}", None
        ) from None
    program = reference.program
    if grids is None:
        grids = default_grids(program.domain_shape, program.ghost)
    results: list[GridResult] = []
    live: list[tuple[_Run, GridResult]] = []  # the grids still equal to 1×1
    for grid, stream in zip(grids, rng.spawn(len(grids)), strict=True):
        result = GridResult(grid, "same")
        results.append(result)
        try:
            run = _Run(make(grid), stream, nan_ghosts=True)
        except InputError as exc:  # the factory or the domain refuses this grid
            result.status, result.message = "skipped", str(exc)
            continue
        except Exception as exc:  # the user's init_block, on this grid only
            result.status, result.at = "failed", (-1, 0)
            result.message = f"building the blocks failed: {exception_line(exc)}"
            continue
        if len(run.program.phases) != len(program.phases):
            result.status, result.at = "failed", (-1, 0)
            result.message = (
                f"the factory built {len(run.program.phases)} phases, "
                f"{len(program.phases)} on 1×1; expected phases that do not depend on the "
                "partitions"
            )
            continue
        live.append((run, result))
    if all(r.status == "skipped" for r in results):
        reasons = "; ".join(f"{r.label}: {r.message}" for r in results) or "none fits"
        raise InputError(
            "check",
            f"no partitioned grid to compare with 1×1 ({reasons})",
            "larger --cells, or --parts grids the program accepts",
        )
    nan_fields = sorted({n for run, _ in live for n in run.nan_fields})
    warnings = _integer_exchanges(program, reference.blocks[0])
    returned: set[str] = set()
    total, done = steps * len(program.phases), 0
    for s in range(steps):
        for run in (reference, *(run for run, _ in live)):
            run.step_begins(s)
        for k, phase in enumerate(program.phases):
            if not live:
                break  # every grid went wrong already: nothing left to compare
            try:
                values = reference.phase(k)
            except GrapeshotError:
                raise
            except Exception as exc:  # the user's exchange or boundary, on 1×1 already
                raise InputError(
                    program.origin or program.name,
                    f"on 1×1, step {s}, phase {phase.name!r} failed: {exception_line(exc)}",
                    None,
                ) from None
            _note_returns(warnings, returned, phase.name, phase.reduce, values, s)
            expected = reference.fields()
            for run, result in list(live):
                try:
                    values = run.phase(k)
                except Exception as exc:  # the user's code, on this grid only
                    result.status, result.at = "failed", (s, k)
                    result.message = (
                        str(exc)  # names the partition, step and phase already
                        if isinstance(exc, GrapeshotError)
                        else f"step {s}, phase {phase.name!r} failed: {exception_line(exc)}"
                    )
                    live.remove((run, result))
                    continue
                _note_returns(warnings, returned, phase.name, phase.reduce, values, s)
                diff = _first_difference(expected, run, s, phase.name)
                if diff is not None:
                    result.status, result.at, result.difference = "differs", (s, k), diff
                    live.remove((run, result))
            done += 1
            if progress is not None:
                progress(done, total)
        for run in (reference, *(run for run, _ in live)):
            run.step_ends()
        if not live:
            break
    for run, result in live:
        result.digest = run.digest()
    return CheckReport(
        program.name,
        program.scene,
        tuple(program.domain_shape),
        steps,
        seed,
        reference.digest(),
        results,
        warnings,
        tuple(nan_fields),
    )


class _Run:
    """One run of the lockstep: a program on one grid, its blocks, clock and order stream."""

    def __init__(self, program: Program, rng: np.random.Generator | None, *, nan_ghosts: bool):
        self.program = program
        self.boxes = program.boxes()
        self.blocks = [make_block(program, box) for box in self.boxes]
        self.rng = rng
        self.time = 0.0
        self.ctx = Context(0, 0.0)
        self.nan_fields: tuple[str, ...] = ()
        if nan_ghosts:
            self.nan_fields = _fill_unfilled_ghosts(program, self.boxes, self.blocks)
        ndim = len(program.parts_shape)
        first = self.boxes[0]
        #: Block entries that are grid fields on every partition (their interiors compared).
        self.grid_names = tuple(
            sorted(
                name
                for name, a in self.blocks[0].items()
                if isinstance(a, np.ndarray)
                and a.shape[:ndim] == first.padded_shape
                and all(
                    isinstance(b.get(name), np.ndarray) and b[name].shape[:ndim] == x.padded_shape
                    for b, x in zip(self.blocks, self.boxes, strict=True)
                )
            )
        )

    def step_begins(self, step: int) -> None:
        self.ctx = Context(step=step, time=self.time)

    def phase(self, k: int) -> list[Any]:
        """Phase ``k`` on every partition, in a fresh random order (none for 1×1)."""
        n = len(self.boxes)
        order = None if self.rng is None else self.rng.permutation(n).tolist()
        return run_phase(
            self.program, self.program.phases[k], self.boxes, self.blocks, self.ctx, order=order
        )

    def step_ends(self) -> None:
        self.time += self.program.advance(self.ctx)

    def outputs(self) -> list[dict[str, np.ndarray]]:
        program = self.program
        return [program.output_fields(b, x) for b, x in zip(self.blocks, self.boxes, strict=True)]

    def fields(self) -> dict[str, np.ndarray]:
        """The output fields and every grid field's interior, over the whole domain."""
        found = assemble_fields(self.boxes, self.outputs(), self.program.particle_fields)
        if self.grid_names:
            interiors = [
                {f"block[{n!r}]": b[n][x.interior()] for n in self.grid_names}
                for b, x in zip(self.blocks, self.boxes, strict=True)
            ]
            found.update(assemble_fields(self.boxes, interiors))
        return found

    def digest(self) -> str:
        """The final output fields' digest (what ``grapeshot run`` prints)."""
        return fields_digest(
            assemble_fields(self.boxes, self.outputs(), self.program.particle_fields)
        )


def _exchanged_widths(program: Program) -> dict[str, dict[Offset, int]]:
    """``{field: {offset: widest width a grid exchange fills towards it}}`` over every
    phase; fields custom packers move are left out (their ghosts are theirs)."""
    ndim = len(program.parts_shape)
    widths: dict[str, dict[Offset, int]] = {}
    custom: set[str] = set()
    for phase in program.phases:
        ex = phase.exchange
        if ex is None:
            continue
        if ex.pack is not None or ex.unpack is not None:
            custom.update(ex.fields)
            continue
        for name in ex.fields:
            side = widths.setdefault(name, {})
            for o in ex.offsets(ndim):
                side[o] = max(side.get(o, 0), ex.width)
    return {n: w for n, w in widths.items() if n not in custom}


def _unfilled_cells(box: Box, widths: dict[Offset, int]) -> tuple[np.ndarray, ...]:
    """Index arrays of ``box``'s ghost cells beside a neighbour that no exchange fills."""
    mask = np.zeros(box.padded_shape, dtype=bool)
    for o in neighbour_offsets(box.ndim):
        if box.neighbour(o) is None:
            continue  # a wall: the kernel's (or the boundary's) to fill
        mask[halo_slab(box, o, box.ghost, ghost_side=True)] = True
        if widths.get(o, 0):
            mask[halo_slab(box, o, min(widths[o], box.ghost), ghost_side=True)] = False
    return np.nonzero(mask)


def _fill_unfilled_ghosts(
    program: Program, boxes: list[Box], blocks: list[Block]
) -> tuple[str, ...]:
    """Set to NaN, in every block, the ghost cells of exchanged float grid fields that no
    exchange fills; returns the fields that had some."""
    widths = _exchanged_widths(program)
    filled: set[str] = set()
    for box, block in zip(boxes, blocks, strict=True):
        cells: dict[tuple[tuple[Offset, int], ...], tuple[np.ndarray, ...]] = {}
        for name, side in widths.items():
            a = block.get(name)
            if (
                not isinstance(a, np.ndarray)
                or a.shape[: box.ndim] != box.padded_shape
                or not np.issubdtype(a.dtype, np.inexact)
            ):
                continue
            key = tuple(sorted(side.items()))
            if key not in cells:
                cells[key] = _unfilled_cells(box, side)
            if cells[key][0].size:
                a[cells[key]] = np.nan
                filled.add(name)
    return tuple(sorted(filled))


def _integer_exchanges(program: Program, block: Block) -> list[CheckWarning]:
    """A warning for each integer field a grid halo exchange moves."""
    found = []
    for phase in program.phases:
        for name in phase.exchange.grid_fields if phase.exchange is not None else ():
            a = block.get(name)
            if isinstance(a, np.ndarray) and a.dtype.kind in "biu":
                found.append(
                    CheckWarning(
                        "integer-exchange",
                        phase.name,
                        f"phase {phase.name!r} exchanges {name!r}, an integer field "
                        f"({a.dtype}): a stencil on it computes in integers and truncates; "
                        "expected a float field (np.zeros(shape), not dtype=int) if floats "
                        "were meant",
                    )
                )
    return found


def _note_returns(
    warnings: list[CheckWarning],
    seen: set[str],
    phase: str,
    reduce: Any,
    values: list[Any],
    step: int,
) -> None:
    """Warn (once per phase) when a kernel returned a value its phase does not reduce."""
    if reduce is not None or phase in seen:
        return
    for part, value in enumerate(values):
        if value is not None:
            seen.add(phase)
            warnings.append(
                CheckWarning(
                    "unreduced-return",
                    phase,
                    f"phase {phase!r}: the kernel returned {value!r} (partition {part}, step "
                    f"{step}) but the phase has no reduction, so the value is dropped; "
                    "expected Phase(..., reduce=Reduction(NAME, 'min'|'max'|'sum')) to "
                    "publish it as ctx.values[NAME], or a kernel that returns nothing",
                )
            )
            return


def _first_difference(
    expected: dict[str, np.ndarray], run: _Run, step: int, phase: str
) -> Difference | None:
    """The first difference between 1×1's fields and ``run``'s, or ``None``: the lowest
    partition holding one, over every field (ties: field name order)."""
    got = run.fields()
    found: list[Difference] = []
    for name in sorted(set(expected) | set(got)):
        if name not in got or name not in expected:
            side = "1×1" if name in expected else grid_label(run.program.parts_shape)
            found.append(Difference(step, phase, name, problem=f"is only on {side}"))
            continue
        a, b = np.ascontiguousarray(expected[name]), np.ascontiguousarray(got[name])
        if a.shape != b.shape or a.dtype != b.dtype:
            found.append(
                Difference(
                    step, phase, name,
                    problem=f"is {a.dtype}{list(a.shape)} on 1×1, {b.dtype}{list(b.shape)} "
                    f"on {grid_label(run.program.parts_shape)}",
                )
            )  # fmt: skip
            continue
        if np.array_equal(_bits(a), _bits(b)):
            continue
        found.append(_locate(name, a, b, run, step, phase))
    if not found:
        return None
    return min(found, key=lambda d: (d.part is None, d.part if d.part is not None else 0))


def _bits(a: np.ndarray) -> np.ndarray:
    """``a``'s bytes as unsigned integers of its item size (one per element when there is
    such a type): compared, they say bitwise equality (NaN equals NaN, -0.0 differs from 0)."""
    flat = a.reshape(-1)
    size = a.dtype.itemsize
    return flat.view(f"u{size}") if size in (1, 2, 4, 8) else flat.view(np.uint8)


def _differing(a: np.ndarray, b: np.ndarray, lead: int) -> np.ndarray:
    """Bool over ``a``'s first ``lead`` axes: where any bit of ``a`` and ``b`` differs."""
    bits_a = _bits(a).reshape((*a.shape[:lead], -1))
    bits_b = _bits(b).reshape((*b.shape[:lead], -1))
    return (bits_a != bits_b).any(axis=-1)


def _locate(name: str, a: np.ndarray, b: np.ndarray, run: _Run, step: int, phase: str):
    program, boxes = run.program, run.boxes
    domain = tuple(program.domain_shape)
    ndim = len(domain)
    grid = a.shape[:ndim] == domain and name not in program.particle_fields and name != "id"
    if grid:
        where = np.flatnonzero(_differing(a, b, ndim))
        coords = np.unravel_index(where, domain)
        bounds = partition_bounds(domain, program.parts_shape)
        index = [np.searchsorted(bounds[ax], coords[ax], side="right") - 1 for ax in range(ndim)]
        owner = np.ravel_multi_index(index, program.parts_shape)
        part = int(owner.min())
        first = int(where[owner == part][0])
        cell = tuple(int(c) for c in np.unravel_index(first, domain))
        return Difference(
            step, phase, name, cell=cell, part=part, part_index=boxes[part].index,
            reference=_value(a[cell]), value=_value(b[cell]),
            cells=int(where.size), parts=int(np.unique(owner).size),
        )  # fmt: skip
    rows = np.flatnonzero(_differing(a, b, 1))
    row = int(rows[0])
    owner = _particle_owners(run)
    part = None if owner is None else int(owner[row])
    parts = 0 if owner is None else int(np.unique(owner[rows]).size)
    return Difference(
        step, phase, name, row=row, part=part,
        part_index=None if part is None else boxes[part].index,
        reference=_value(a[row]), value=_value(b[row]), cells=int(rows.size), parts=parts,
    )  # fmt: skip


def _particle_owners(run: _Run) -> np.ndarray | None:
    """The partition of each particle row, in the order :func:`assemble_fields` gives them
    (sorted by ``id``), or ``None`` when the outputs have no particle fields."""
    outputs, box = run.outputs(), run.boxes[0]
    particles = run.program.particle_fields
    names = [
        n for n, a in outputs[0].items()
        if n in particles or n == "id" or a.shape[: box.ndim] != box.shape
    ]  # fmt: skip
    if not names:
        return None
    counts = [len(out[names[0]]) for out in outputs]
    owner = np.repeat(np.arange(len(outputs)), counts)
    if "id" in outputs[0]:
        ids = np.concatenate([out["id"] for out in outputs])
        owner = owner[np.argsort(ids, kind="stable")]
    return owner


def _value(x: Any) -> str:
    """A cell's value as text (a vector of components as a list), at most 60 characters."""
    text = repr(np.asarray(x).tolist())
    return text if len(text) <= 60 else text[:59] + "…"
