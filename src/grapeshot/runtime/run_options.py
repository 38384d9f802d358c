"""How :func:`grapeshot.runtime.driver.run_program` runs a program: one record of its options,
checked once.

The fields are ``grapeshot run``'s options that are not the program's own (the program is
built before: its app, scene, parts and cells); the defaults are the command line's. Every
refusal is an :class:`~grapeshot.model.errors.InputError` naming the option, raised on every
rank alike (the checks read nothing rank-specific).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from grapeshot.model.errors import InputError

if TYPE_CHECKING:
    from grapeshot.runtime.checkpoint import CheckpointIndex, CheckpointWriter

#: The executors: the task runtime, the bulk-synchronous reference (one partition per rank),
#: the serial reference for results (one rank).
EXECUTORS = ("task", "reference", "serial")
#: What a partition's load is to a rebalance (:attr:`RunOptions.loads`).
LOADS = ("auto", "work", "cpu")


def check_timeout(timeout: float) -> None:
    """Refuse a ``--timeout`` that is not a positive, finite number of seconds."""
    if not 0 < timeout < float("inf"):
        raise InputError("--timeout", f"got {timeout}", "seconds > 0")


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """The options of one run (``grapeshot run``'s, ``--migrate-at`` is ``migrate_at``).

    Attributes
    ----------
    steps
        The run's total steps (from a checkpoint: to this step).
    strategy, seed
        The static strategy placing the partitions on the ranks, and its seed.
    threads
        Threads a rank runs tasks on.
    executor
        One of :data:`EXECUTORS`.
    reduction
        How the ranks reduce a phase's values: ``"mpi"``, ``"linear"`` or ``"binomial"``.
    migrate_at
        With the task executor: after this many steps, rebalance greedily on the last
        step's loads (``loads``) and move the partitions that change rank.
    timeout
        Seconds without progress after which every rank stops, saying what it waited for.
    probe_network
        After the run, measure messages of 8 B to 2 MiB between the ranks (for calibrating
        the simulator; a fraction of a second).
    task_rows
        Gather every task's row (part, step, phase, thread, times) into the outcome's
        ``tasks``, as a run record and a timeline need; ``False`` gathers only each rank's
        sums (busy, halo copies), and ``tasks`` is ``None``: a tenth of a microsecond or more
        a task less at the end of the run.
    dynamic
        With the task executor: a :class:`~grapeshot.place.dynamic.DynamicStrategy` (rank
        0's instance decides). Every ``dynamic.interval`` steps (or at its ``call_steps``)
        the ranks gather the partitions' loads of the steps since the last call (``loads``),
        rank 0 asks the strategy, broadcasts its proposal, and the partitions that change
        rank move their state. Exclusive with ``migrate_at``.
    loads
        What a partition's load is to a rebalance, one of :data:`LOADS`: ``"work"``, the
        program's work counts (:meth:`~grapeshot.model.program.Program.work`: the same
        moves every run); ``"cpu"``, the thread CPU seconds its tasks took (what they
        really cost, overheads included; the moves differ from run to run, the fields do
        not); ``"auto"``, work counts where the program counts its work (a ``work_field``
        or its own ``work``), else CPU seconds.
    lazy_moves
        With ``dynamic``: rank 0 makes a proposal's moves only once the time the current
        placement lost against the proposals since the last move reaches what a move costs
        (:class:`~grapeshot.place.paid_moves.MoveLedger`).
    exchange
        With the task executor: how migrating particles travel between ranks, ``"ac"`` (the
        runtime's own post-and-receive) or a schedule of :mod:`grapeshot.exchange`.
    shm
        With the task executor: ranks of one node write their grid halo messages straight
        into each other's inboxes (a shared-memory window); ``False`` sends them all
        through MPI (:mod:`grapeshot.runtime.mailboxes`).
    restart
        With the task executor: go on from this checkpoint (its step and simulated time, its
        blocks; the partitions placed anew on this run's ranks). ``steps`` is the whole
        run's: the steps from the checkpoint's to ``steps`` are run.
    checkpoint, checkpoint_every, checkpoint_seconds
        With the task executor: write a checkpoint with ``checkpoint`` every this many
        steps, and/or when this many seconds have passed on rank 0's clock
        (:mod:`grapeshot.runtime.checkpoint`).
    """

    steps: int
    strategy: str
    seed: int
    threads: int = 1
    executor: str = "task"
    reduction: str = "mpi"
    migrate_at: int | None = None
    timeout: float = 120.0
    probe_network: bool = False
    task_rows: bool = True
    dynamic: Any = None
    exchange: str = "ac"
    shm: bool = True
    restart: CheckpointIndex | None = None
    checkpoint: CheckpointWriter | None = None
    checkpoint_every: int | None = None
    checkpoint_seconds: float | None = None
    loads: str = "auto"
    lazy_moves: bool = False

    def __post_init__(self) -> None:
        from grapeshot.exchange.schedules import ALGORITHMS as EXCHANGES

        steps, executor, migrate_at = self.steps, self.executor, self.migrate_at
        check_timeout(self.timeout)
        if self.exchange not in EXCHANGES:
            raise InputError(
                "--exchange", f"got {self.exchange!r}", f"one of {', '.join(EXCHANGES)}"
            )
        if executor not in EXECUTORS:
            raise InputError("--executor", f"got {executor!r}", f"one of {', '.join(EXECUTORS)}")
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise InputError("--steps", f"got {steps!r}", "an integer >= 1")
        if migrate_at is not None and (executor != "task" or not 0 < migrate_at < steps):
            raise InputError(
                "--migrate-at",
                f"got {migrate_at}",
                f"a step in 1..{steps - 1} with --executor task",
            )
        if self.dynamic is not None and (executor != "task" or migrate_at is not None):
            raise InputError(
                f"--strategy {self.dynamic.name}",
                f"is dynamic; got --executor {executor}"
                + (" and --migrate-at" if migrate_at is not None else ""),
                "--executor task without --migrate-at",
            )
        if self.loads not in LOADS:
            raise InputError("--loads", f"got {self.loads!r}", f"one of {', '.join(LOADS)}")
        if self.loads != "auto" and not self.rebalanced:
            raise InputError(
                "--loads",
                f"got {self.loads!r} for a run that never rebalances",
                "a dynamic --strategy or --migrate-at",
            )
        if self.lazy_moves and self.dynamic is None:
            raise InputError(
                "--lazy-moves", "given without a dynamic strategy", "a dynamic --strategy"
            )
        if (self.restart is not None or self.checkpoint is not None) and executor != "task":
            option = "--restart" if self.restart is not None else "--checkpoint"
            raise InputError(option, f"given with --executor {executor}", "--executor task")
        if not self.first < steps:
            raise InputError(
                "--steps",
                f"got {steps}, and the checkpoint is at step {self.first}",
                f"the run's total steps, more than {self.first}",
            )

    @property
    def first(self) -> int:
        """The step the run starts at: the checkpoint's, else 0."""
        return 0 if self.restart is None else self.restart.step

    @property
    def rebalanced(self) -> bool:
        """Whether partitions may move during the run (a dynamic strategy, ``migrate_at``)."""
        return self.dynamic is not None or self.migrate_at is not None
