"""A user's own program where a built-in app name goes: ``FILE.py:FACTORY``,
``package.module:FACTORY``, or the name of an installed app.

The factory is called ``FACTORY(parts=(px, py[, pz]), cells=(nx, ...) or None, seed=S)``
(and ``scene=NAME`` when the command line gives ``--scene`` and the factory takes it) and
must return a :class:`~grapeshot.model.program.Program` with those partitions and cells.
Before any executor builds the partitions, one of them is built (its ``init_block``) to check
the program's grid fields against ``--parts`` and to size the run: a program with other axes
than the grid asked for, or needing more memory than the machine has, is refused in one line.
Installed packages register apps under the entry-point group ``grapeshot.apps``::

    [project.entry-points."grapeshot.apps"]
    heat = "myheat.program:make_heat"

Everything that can go wrong in the user's module (the file is missing, its import fails,
there is no such factory, the factory raises or returns something else) is an
:class:`~grapeshot.model.errors.InputError` naming the file and the factory; every MPI rank
loads the module, meets the same error, and the command line prints it once.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from grapeshot.model import memory
from grapeshot.model.errors import InputError, exception_line
from grapeshot.model.memory import check_user_program_memory
from grapeshot.model.user_code import load_object

#: The entry-point group installed packages register their apps under.
ENTRY_POINT_GROUP = "grapeshot.apps"


@dataclass(frozen=True)
class UserApp:
    """A factory found in a user's module.

    Attributes
    ----------
    spec
        What the user wrote (``heat.py:make_heat``); the first words of every error.
    factory
        The callable.
    name
        A short name for titles and records (the factory's module stem).
    """

    spec: str
    factory: Any
    name: str

    def make_program(
        self,
        parts: tuple[int, ...],
        cells: tuple[int, ...] | None,
        seed: int,
        scene: str | None = None,
        *,
        steps: int = 0,
        share: float | None = None,
    ) -> Any:
        """Call the factory, check the :class:`~grapeshot.model.program.Program` it returns
        against ``parts`` and ``cells``, and size it from one partition (see the module).

        Parameters
        ----------
        parts, cells
            Partitions and cells per axis (``--parts``, ``--cells``; ``cells=None``: the
            factory's default).
        seed, scene
            Passed on to the factory (``scene`` only when given).
        steps
            Steps the run records, counted in its memory.
        share
            The part of the partitions this machine holds (``L / N`` for ``L`` of ``N``
            ranks on it), as :func:`grapeshot.model.memory.check_program_memory` takes it;
            ``None``: all of them, in this process or on this node.

        Raises
        ------
        InputError
            Naming the file and the factory, or the option the program does not follow.
        """
        from grapeshot.model.program import Program, largest_box  # numpy: not for `run --help`

        kwargs: dict[str, Any] = {"parts": tuple(parts), "cells": cells, "seed": seed}
        if scene is not None:
            if not _takes(self.factory, "scene"):
                raise InputError(
                    "--scene",
                    f"{self.spec} takes no scene",
                    "no --scene, or a factory with a scene= parameter",
                )
            kwargs["scene"] = scene
        call = f"{_name(self.factory)}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})"
        try:
            program = self.factory(**kwargs)
        except InputError:
            raise
        except Exception as exc:
            raise InputError(self.spec, f"{call} raised {exception_line(exc)}", None) from None
        if not isinstance(program, Program):
            raise InputError(
                self.spec,
                f"{call} returned {type(program).__name__}",
                "a grapeshot.model.program.Program (docs/program-api.md)",
            )
        if tuple(program.parts_shape) != tuple(parts):
            raise InputError(
                self.spec,
                f"{call} returned a program of partitions {tuple(program.parts_shape)}",
                f"the partitions asked for, {tuple(parts)}",
            )
        _check_cells(program, parts, cells, self.spec)
        if not program.phases:
            raise InputError(self.spec, f"{call} returned a program without phases", None)
        program.origin = self.spec
        if not program.name or program.name == Program.name:
            program.name = self.name
        given = f"--parts {_listed(parts)}" + (
            "" if cells is None else f" --cells {_listed(cells)}"
        )
        # A partition too big to build (its grid fields' cells, a byte a cell at least) is
        # refused with the estimate, not by the allocation failing in init_block; else one is
        # built and weighed.
        box = largest_box(program)
        least = _least_block_bytes(program, box)
        room = memory.available_memory()
        if room is not None and least > room:
            check_user_program_memory(
                program.name, parts, steps, where=given, share=share,
                block_bytes=least, output_bytes=least,
            )  # fmt: skip
        block_bytes, output_bytes = _sample(program, box)
        check_user_program_memory(
            program.name, parts, steps, where=given, share=share,
            block_bytes=block_bytes, output_bytes=output_bytes,
        )  # fmt: skip
        return program


def _listed(sizes: tuple[int, ...]) -> str:
    return ",".join(str(int(n)) for n in sizes)


def _check_cells(program: Any, parts: tuple[int, ...], cells: Any, spec: str) -> None:
    """Refuse a program whose domain has other axes than ``--parts``, or other cells than
    ``--cells`` gave: the factory did not follow them."""
    domain = tuple(int(n) for n in program.domain_shape)
    if len(domain) != len(parts):
        raise InputError(
            "--cells" if cells is not None else "--parts",
            f"{spec} returned a {len(domain)}-D program (cells {domain}) for a "
            f"{len(parts)}-D grid of {tuple(parts)} partitions",
            _other_axes(len(domain)),
        )
    if cells is not None and domain != tuple(cells):
        raise InputError(
            "--cells",
            f"{spec} returned a program of cells {domain}",
            f"the cells asked for, {tuple(cells)} (the factory's domain_shape = cells)",
        )


def _least_block_bytes(program: Any, box: Any) -> int:
    """Bytes the partition ``box``'s block holds at least, before building it: a byte a
    padded cell for every field a phase exchanges as a grid (what halos slice; 0 for a
    program with none)."""
    grid = {
        name
        for phase in program.phases
        if phase.exchange is not None
        for name in phase.exchange.grid_fields
    }
    return math.prod(box.padded_shape) * len(grid)


def _sample(program: Any, box: Any) -> tuple[int, int]:
    """Bytes of the partition ``box``'s block (the largest) and of its final fields, from one
    ``init_block`` and ``output_fields``; the block's grid fields checked on the way
    (:func:`_check_grid_fields`)."""
    from grapeshot.model.program import make_block

    block = make_block(program, box)
    _check_grid_fields(program, block, box)
    block_bytes = sum(int(getattr(a, "nbytes", 0)) for a in block.values())
    try:
        output = program.output_fields(block, box)
        output_bytes = sum(int(getattr(a, "nbytes", 0)) for a in output.values())
    except Exception:  # a program whose output needs a step first: the run will tell
        output_bytes = block_bytes
    return block_bytes, output_bytes


def _check_grid_fields(program: Any, block: dict, box: Any) -> None:
    """Refuse a block whose fields exchanged as grids do not start with the box's padded
    shape (what halos slice): with fewer axes than ``--parts``, a program of another
    dimension (one line naming ``--parts`` and the program's axes)."""
    ndim = len(box.padded_shape)
    for phase in program.phases:
        for name in phase.exchange.grid_fields if phase.exchange is not None else ():
            shape = tuple(getattr(block[name], "shape", ()))
            if shape[:ndim] == box.padded_shape:
                continue
            if 1 <= len(shape) < ndim:
                raise InputError(
                    "--parts",
                    f"{program.origin} builds a {len(shape)}-D program (init_block's {name!r} "
                    f"has shape {shape}) for a {ndim}-D grid of {program.parts_shape} partitions",
                    _other_axes(len(shape)),
                )
            raise InputError(
                f"{program.origin}: partition {box.part}",
                f"init_block's {name!r}, exchanged by phase {phase.name!r}, has shape {shape}",
                f"a grid field starting with the padded shape {box.padded_shape} (cells "
                f"{box.shape} and {box.ghost} ghost layers a side)",
            )


def _other_axes(ndim: int) -> str:
    """What a program of ``ndim`` axes needs on the command line."""
    if ndim >= 2:
        return f"--parts (and --cells) with {ndim} values, one per axis of the program"
    return (
        "a 2-D or 3-D program: grapeshot runs 2-D and 3-D grids, not 1-D ones yet (one "
        "--parts value means a square 2-D grid; docs/program-api.md)"
    )


def is_user_app(app: str) -> bool:
    """Whether ``app`` names a factory (``...:FACTORY``) rather than a registered name."""
    return ":" in app


@cache
def installed_apps() -> dict[str, str]:
    """``{name: "module:factory"}`` of the apps installed packages register."""
    from importlib.metadata import entry_points

    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def load_user_app(app: str) -> UserApp:
    """The factory ``app`` names: ``FILE.py:FACTORY``, ``package.module:FACTORY`` or the name
    of an installed app (:func:`installed_apps`).

    Raises
    ------
    InputError
        Naming the file (or module) and the factory, for everything that stops the load.
    """
    spec = installed_apps().get(app, app)
    factory, target = load_object(
        spec,
        option="--app",
        expected="FILE.py:FACTORY or package.module:FACTORY (a factory returning a Program)",
        kind=inspect.isfunction,
        wanted="a function {name}(parts=, cells=, seed=) returning a Program",
    )
    return UserApp(spec, factory, Path(target).stem if target.endswith(".py") else target)


def _name(factory: Any) -> str:
    return getattr(factory, "__name__", type(factory).__name__)


def _takes(factory: Any, keyword: str) -> bool:
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False
    return keyword in params or any(p.kind is p.VAR_KEYWORD for p in params.values())
