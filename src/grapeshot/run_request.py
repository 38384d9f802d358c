"""``grapeshot run`` as a library call: a request with the command line's defaults, the set-up
every rank makes, and the run.

:class:`RunRequest` holds one field per option of the command that is not a file it writes
(the same names and defaults: ``--migrate-at`` is ``migrate_at``; ``parts`` and ``cells`` are
tuples of ints or the command line's text, ``"16,16"``). :func:`prepare_run` checks it and
builds the program on every rank (a failure on one rank is every rank's, in one line), with
its dynamic strategy and its placement; :func:`run` does that and runs it.
``grapeshot.run(...)`` is :func:`run`. Start the script as the command is started, one
process per rank::

    # mpiexec -n 2 python -m mpi4py my_script.py
    import grapeshot

    outcome = grapeshot.run(app="swe", scene="dambreak", parts=(16, 16), steps=60)
    if outcome is not None:  # rank 0
        print(outcome.summary["wall_time"], outcome.summary["fields_digest"])

(``python -m mpi4py`` ends every rank if one raises outside grapeshot's own collective
checks.) The command adds what writes files (``--record``, ``--timeline``, ``--checkpoint``,
``--restart``), the progress bar and the table; every refusal here is the command's, an
:class:`~grapeshot.model.errors.InputError` naming the option.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grapeshot.apps import APPS, default_scene, make_app_program
from grapeshot.model.errors import InputError, check_int
from grapeshot.model.option_checks import parse_cells, parse_parts, refuse_dynamic_options
from grapeshot.model.program import Program
from grapeshot.runtime.agreement import agreed, node_share, rank_zero_decides


@dataclass(frozen=True, kw_only=True)
class RunRequest:
    """What ``grapeshot run`` is asked, but the files it writes: one field per option, the
    command line's defaults (see ``grapeshot run --help``).

    ``app`` is a built-in app, an installed one, or a user's program as
    ``"FILE.py:FACTORY"`` / ``"package.module:FACTORY"``; ``strategy`` ``None`` is Birdshot
    (or the placement file's); ``interval``, ``threshold``, ``balancer`` and ``window`` go to
    a dynamic strategy.
    """

    app: str
    scene: str | None = None
    parts: tuple[int, ...] | str = (16, 16)
    cells: tuple[int, ...] | str | None = None
    steps: int = 20
    strategy: str | None = None
    interval: int | None = None
    threshold: float | None = None
    balancer: str | None = None
    window: int | None = None
    placement: Path | str | None = None
    seed: int = 0
    threads: int = 1
    executor: str = "task"
    reduction: str = "mpi"
    exchange: str = "ac"
    shm: bool = True
    migrate_at: int | None = None
    loads: str = "auto"
    lazy_moves: bool = False
    timeout: float = 120.0

    def part_shape(self) -> tuple[int, ...]:
        """``parts`` as a tuple (one value: a square 2-D grid)."""
        return parse_parts(self.parts)

    def cell_shape(self) -> tuple[int, ...] | None:
        """``cells`` as a tuple over the parts' axes (one value: every axis), or ``None``."""
        return parse_cells(self.cells, len(self.part_shape()))

    def dynamic_options(self) -> dict[str, Any]:
        """The dynamic strategy's options that were given."""
        given = dict(
            interval=self.interval, threshold=self.threshold, balancer=self.balancer,
            window=self.window,
        )  # fmt: skip
        return {k: v for k, v in given.items() if v is not None}


def _as_given(sizes: Any) -> str:
    """Sizes as the user wrote them (the command line's text), or a tuple's as it would."""
    if isinstance(sizes, str):
        return sizes
    return ",".join(map(str, (sizes,) if isinstance(sizes, int) else sizes))


@dataclass(frozen=True)
class PreparedRun:
    """A request's program built on this rank, its dynamic strategy (``None``: static) and
    the static strategy placing its partitions (a name, or a placement file's fixed one),
    and when the set-up began (``time.perf_counter()``)."""

    request: RunRequest
    program: Program
    dynamic: Any
    strategy: Any
    started: float

    def options(self) -> dict[str, Any]:
        """:func:`~grapeshot.runtime.driver.run_program`'s options (the fields of
        :class:`~grapeshot.runtime.run_options.RunOptions`) from the request and what was
        built for it."""
        r = self.request
        return dict(
            steps=r.steps, strategy=self.strategy, seed=r.seed, threads=int(r.threads),
            executor=r.executor, reduction=r.reduction, exchange=r.exchange, shm=r.shm,
            migrate_at=r.migrate_at, loads=r.loads, lazy_moves=r.lazy_moves, timeout=r.timeout,
            dynamic=self.dynamic,
        )  # fmt: skip

    def strategy_name(self) -> str:
        """The strategy as the user named it: the dynamic one's name, ``placement FILE``, or
        the static one's name."""
        if self.dynamic is not None:
            return self.dynamic.name
        if self.request.placement is not None:
            return f"placement {self.request.placement}"
        return str(self.strategy)


def prepare_run(
    request: RunRequest, comm, *, check: Callable[[], None] | None = None
) -> PreparedRun:
    """Check ``request`` and build its program on every rank of ``comm`` (collective).

    Rank 0 checks the program's size against the memory of its node (and runs ``check``, the
    command's check of its output paths, first) and every rank takes its verdict; then every
    rank builds the program, the dynamic strategy and the placement's strategy, and a
    failure on one rank is raised on all.

    Raises
    ------
    InputError
        The same on every rank.
    """
    from grapeshot.model.memory import check_program_memory

    parts, cells = request.part_shape(), request.cell_shape()
    app, scene, steps = request.app, request.scene, request.steps
    serial = request.executor == "serial"
    # Each rank holds its share of the partitions; rank 0's node holds its ranks'.
    share = None if serial else node_share(comm)

    def rank_zero() -> None:
        if check is not None:
            check()
        check_program_memory(
            app, scene or (default_scene(app) if app in APPS else None), parts, cells, steps,
            where=f"--parts {_as_given(request.parts)}"
            + ("" if cells is None else f" --cells {_as_given(request.cells)}"),
            share=share,
        )  # fmt: skip

    rank_zero_decides(comm, rank_zero)
    started = time.perf_counter()

    def build() -> PreparedRun:
        program = make_app_program(app, scene, parts, cells, request.seed, steps=steps, share=share)
        check_int(request.threads, "--threads")
        dynamic = dynamic_for_run(request.strategy, request.seed, **request.dynamic_options())
        initial = request.strategy if dynamic is None else dynamic.initial
        chosen = placed_strategy(request.placement, initial, program.n_parts, comm.Get_size())
        return PreparedRun(request, program, dynamic, chosen, started)

    # Every rank calls the factory: a failure on one ends all of them, in one line.
    return agreed(comm, build)


def run(
    *,
    comm=None,
    on_step: Callable[[int], None] | None = None,
    on_migrate: Callable[[Any], None] | None = None,
    **options: Any,
):
    """Run a request on ``comm``'s ranks (default: every rank of ``MPI.COMM_WORLD``;
    collective): rank 0 gets the :class:`~grapeshot.runtime.driver.RunOutcome`, the other
    ranks ``None``.

    ``options`` are :class:`RunRequest`'s fields; ``on_step(step)`` and ``on_migrate(m)``
    (a :class:`~grapeshot.runtime.driver.Rebalanced`) are called on rank 0 after each step
    and each rebalance that moved partitions.
    """
    from grapeshot.runtime.driver import run_program

    request = RunRequest(**options)
    if comm is None:
        from mpi4py import MPI  # here: importing mpi4py.MPI starts MPI

        comm = MPI.COMM_WORLD
    prepared = prepare_run(request, comm)
    outcome = run_program(
        prepared.program, comm=comm, on_step=on_step, on_migrate=on_migrate,
        setup_started=prepared.started, **prepared.options(),
    )  # fmt: skip
    if outcome is not None:
        outcome.summary["strategy"] = prepared.strategy_name()
    return outcome


def placed_strategy(placement: Path | str | None, strategy: str | None, n_parts: int, ranks: int):
    """The ``strategy`` of ``run_program``: a name, or a placement file's fixed node per part.

    Raises
    ------
    InputError
        If both are given, or the file's partitions are not the program's ``n_parts``, or it
        places on more nodes than there are ``ranks`` (a rank is a node in ``run``).
    """
    if placement is None:
        return strategy or "birdshot"
    if strategy is not None:
        raise InputError(
            "--placement", f"given with --strategy {strategy}", "one of --placement, --strategy"
        )
    from grapeshot.model.placement import load_placement
    from grapeshot.place.static import fixed_strategy

    fixed = load_placement(placement)
    if fixed.n_parts != n_parts:
        raise InputError(
            f"--placement {placement}",
            f"places {fixed.n_parts} partitions",
            f"{n_parts}, the program's (--parts, or place --synthetic with the same parts)",
        )
    if fixed.nodes != ranks:
        unit = "ranks" if fixed.per_rank else "nodes"
        raise InputError(
            f"--placement {placement}",
            f"is for {fixed.nodes} {unit}",
            f"{ranks}, the ranks of this run (mpiexec -n {fixed.nodes}"
            + (")" if fixed.per_rank else ", one rank per node)"),
        )
    return fixed_strategy(fixed.node_of)


def dynamic_for_run(strategy: str | None, seed: int, **options: Any) -> Any:
    """The dynamic strategy ``strategy`` names (with ``interval`` ...), or ``None``.

    Raises
    ------
    InputError
        If a dynamic option is given without a dynamic strategy that takes it, or the
        strategy needs a coarse shadow run (speculative), which ``run``'s apps do not have.
    """
    from grapeshot.place.dynamic import (
        DYNAMIC_STRATEGIES,
        factory_keywords,
        make_dynamic_strategy,
    )

    given = {k: v for k, v in options.items() if v is not None}
    if strategy not in DYNAMIC_STRATEGIES:
        refuse_dynamic_options(strategy or "birdshot", given)
        return None
    if "seed" in factory_keywords(strategy):
        given.setdefault("seed", seed)
    dynamic = make_dynamic_strategy(strategy, **given)
    if getattr(dynamic, "needs_shadow", False):
        raise InputError(
            f"--strategy {strategy}",
            "needs a coarse shadow run of the app, which sph, swe and wavefront do not have",
            "grapeshot simulate --trace FLIP.h5 --strategy speculative",
        )
    return dynamic
