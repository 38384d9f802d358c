"""The runtime's scheduling logic, free of MPI and threads (STYLE 1: events in, actions out).

Each local partition walks its tasks in order: for every step ``s`` and phase ``k``, a task
``(s, k)``. A task goes through two gates:

- **prep**: once the partition's previous task has run and, if that phase migrated
  particles, once every neighbour's emigrant buffer for it has arrived: the driver hands
  over the immigrants, then packs and sends this phase's halo buffers (if it has an
  exchange).
- **run**: once prepped, every neighbour's halo buffer for ``(s, k)`` has arrived and the
  previous phase's global reduction (if any) is known: the task joins the FIFO ready queue.

When every local partition has run a phase that reduces, the driver performs the global
reduction. The driver (:mod:`grapeshot.runtime.executor`) turns actions into work and MPI
calls; this class only counts.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from grapeshot.model.program import Phase


@dataclass(frozen=True)
class Prep:
    """Hand over immigrants (if ``immigrate``), record last step's work (if
    ``record_work_of`` is not None), then pack and send the halo of ``(step, phase)`` (if
    ``exchange``). ``step == steps`` is the final prep: immigrants and work only."""

    part: int
    step: int
    phase: int
    immigrate: bool
    exchange: bool
    record_work_of: int | None


@dataclass(frozen=True)
class Run:
    """Run the kernel of ``phase`` in ``step`` on ``part`` (queued FIFO)."""

    part: int
    step: int
    phase: int


@dataclass(frozen=True)
class Reduce:
    """Every local partition ran ``phase`` of ``step``, which reduces: combine globally."""

    step: int
    phase: int


class RankSchedule:
    """Dependency counting for the partitions one rank owns.

    Parameters
    ----------
    phases
        The program's phases.
    neighbours
        ``{part: number of neighbours}`` for every local partition (every neighbour sends a
        halo buffer per exchange and an emigrant buffer per migration, possibly empty).
    start_step, steps
        Steps ``start_step .. start_step + steps - 1`` are run.
    """

    def __init__(
        self,
        phases: Sequence[Phase],
        neighbours: dict[int, int],
        *,
        start_step: int,
        steps: int,
    ) -> None:
        self.n_phases = len(phases)
        self.exchange = [p.exchange is not None for p in phases]
        self.reduces = [p.reduce is not None for p in phases]
        self.migrates = [p.migrate is not None for p in phases]
        self.neighbours = dict(neighbours)
        self.start = start_step
        self.end = start_step + steps
        # Per partition: the task it is waiting to prep / run, and whether it is prepped.
        self.cursor = {p: (start_step, 0) for p in self.neighbours}
        self.prepped: set[int] = set()
        self.running: set[int] = set()
        self.finished: set[int] = set()
        self.halo_in: dict[tuple[int, int, int], int] = {}
        self.migrants_in: dict[tuple[int, int, int], int] = {}
        self.reduced: set[tuple[int, int]] = set()
        self.ran: dict[tuple[int, int], int] = {}
        self.ready: deque[Run] = deque()

    # -- helpers -------------------------------------------------------------------------

    def _previous(self, step: int, phase: int) -> tuple[int, int] | None:
        if phase > 0:
            return step, phase - 1
        if step > self.start:
            return step - 1, self.n_phases - 1
        return None

    def _advance(self, part: int) -> list[Prep | Reduce]:
        """Open every gate ``part`` can pass now; return the preps the driver must do."""
        actions: list[Prep | Reduce] = []
        while part not in self.finished and part not in self.running:
            step, phase = self.cursor[part]
            prev = self._previous(step, phase)
            if part not in self.prepped:
                migrated = prev is not None and self.migrates[prev[1]]
                if (
                    migrated
                    and self.migrants_in.get((part, step, phase), 0) < self.neighbours[part]
                ):
                    return actions
                self.migrants_in.pop((part, step, phase), None)
                final = step == self.end
                actions.append(
                    Prep(
                        part,
                        step,
                        phase,
                        immigrate=migrated,
                        exchange=not final and self.exchange[phase],
                        record_work_of=step - 1 if phase == 0 and step > self.start else None,
                    )
                )
                if final:
                    self.finished.add(part)
                    return actions
                self.prepped.add(part)
            if (
                self.exchange[phase]
                and self.halo_in.get((part, step, phase), 0) < (self.neighbours[part])
            ):
                return actions
            if prev is not None and self.reduces[prev[1]] and prev not in self.reduced:
                return actions
            self.halo_in.pop((part, step, phase), None)
            self.prepped.discard(part)
            self.running.add(part)
            self.ready.append(Run(part, step, phase))
        return actions

    # -- events --------------------------------------------------------------------------

    def begin(self) -> list[Prep | Reduce]:
        """The actions available before anything has happened."""
        actions: list[Prep | Reduce] = []
        for part in sorted(self.neighbours):
            actions += self._advance(part)
        return actions

    def task_done(self, run: Run) -> list[Prep | Reduce]:
        """``run`` finished on a worker (its emigrants, if any, are already sent)."""
        self.running.discard(run.part)
        step, phase = run.step, run.phase
        self.cursor[run.part] = (step, phase + 1) if phase + 1 < self.n_phases else (step + 1, 0)
        actions: list[Prep | Reduce] = []
        if self.reduces[phase]:
            count = self.ran.get((step, phase), 0) + 1
            self.ran[(step, phase)] = count
            if count == len(self.neighbours):
                del self.ran[(step, phase)]
                actions.append(Reduce(step, phase))
        return actions + self._advance(run.part)

    def halo_arrived(self, part: int, step: int, phase: int) -> list[Prep | Reduce]:
        """A neighbour's halo buffer for ``(step, phase)`` reached local ``part``."""
        key = (part, step, phase)
        self.halo_in[key] = self.halo_in.get(key, 0) + 1
        return self._advance(part)

    def migrants_arrived(self, part: int, step: int, phase: int) -> list[Prep | Reduce]:
        """A neighbour's emigrant buffer, to be taken in before task ``(step, phase)``."""
        key = (part, step, phase)
        self.migrants_in[key] = self.migrants_in.get(key, 0) + 1
        return self._advance(part)

    def reduction_done(self, step: int, phase: int) -> list[Prep | Reduce]:
        """The global reduction of ``(step, phase)`` is known."""
        self.reduced.add((step, phase))
        actions: list[Prep | Reduce] = []
        for part in sorted(self.neighbours):
            actions += self._advance(part)
        return actions

    def next_ready(self) -> Run | None:
        """The oldest ready task (FIFO), or ``None``."""
        return self.ready.popleft() if self.ready else None

    @property
    def done(self) -> bool:
        """Every local partition has run every task and taken its last immigrants."""
        return len(self.finished) == len(self.neighbours)
