"""The functions that run one phase's tasks on a list of local partitions, and what tasks
leave behind for the rest of the step (reduced values, emigrants) or find (custom halos).

``task(todo, step, ctx, waited, rows, thread, then=None)`` runs the partitions at positions
``todo`` in order and appends their rows to ``rows``
(:class:`~grapeshot.runtime.timeline.ThreadClock`); an exception is kept in the rank's
:class:`~grapeshot.runtime.watch.Watch` for the main thread, which aborts the run. Tasks run
on any thread and never call MPI; ``then``, which only the main thread passes (its phase's
last call, :meth:`~grapeshot.runtime.dispatch.Dispatch.run`), is called once the partitions
ran, before the call's own bookkeeping, unless a task of the rank failed.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from numba.core.errors import NumbaError

from grapeshot.model.errors import InputError, exception_line
from grapeshot.model.program import Context, Program
from grapeshot.runtime.batch_checks import batch_verdict
from grapeshot.runtime.fusion import Fusion
from grapeshot.runtime.plain_batch import iparams_table
from grapeshot.runtime.rank_plan import RankPlan
from grapeshot.runtime.timeline import RunClock, batch_row
from grapeshot.runtime.watch import Watch


class PartSlots:
    """Per local partition (by position), what passes between its tasks and the exchanges.

    Attributes
    ----------
    inbox
        ``{slot: buffer}`` of custom halos that arrived for the partition's next task.
    values
        The last kernel's return value (a reduced phase's contribution), task by task.
    batch_values
        float ``(L,)``: the same, written by batched phases.
    emigrants
        ``{offset: buffer}`` the last task took out (migrating phases), or ``None``.
    """

    def __init__(self, n: int) -> None:
        self.inbox: list[dict[int, np.ndarray]] = [{} for _ in range(n)]
        self.values: list[float | None] = [None] * n
        self.batch_values = np.zeros(n)
        self.emigrants: list[dict | None] = [None] * n


class PhaseTasks:
    """The task function of every phase of one rank, each built once on first use.

    Parameters
    ----------
    plan, fusion
        The rank's plan and fused copies.
    slots
        Where tasks leave values and emigrants and find custom halos.
    clock
        The run's clock (task rows are seconds since its ``t0``).
    watch
        Where tasks tell progress and failures.
    parity
        ``parity(step)``: which of a grid exchange's two inboxes serves ``step``.
    rows
        ``{batched phase: {partition: iparams row}}`` the runner keeps across re-plans
        (:func:`~grapeshot.runtime.plain_batch.iparams_table`); default: a new one.
    """

    def __init__(
        self,
        plan: RankPlan,
        fusion: Fusion,
        slots: PartSlots,
        clock: RunClock,
        watch: Watch,
        parity: Callable[[int], int],
        rows: dict[int, dict[int, np.ndarray]] | None = None,
    ) -> None:
        self.plan = plan
        self.fusion = fusion
        self.slots = slots
        self.clock = clock
        self.watch = watch
        self.parity = parity
        self.built: dict[int, Callable] = {}
        #: ``{batched phase: {partition: its row of iparams}}``, kept across re-plans.
        self.rows = {} if rows is None else rows
        #: Per thread, ``[seconds, returns]``: how long its batched calls waited, after their
        #: last task ended in compiled code, to hold the GIL again and return (each thread
        #: writes its own entry). Near zero unless threads contend for the GIL.
        self.gil: dict[int, list] = {}

    def returned(self, thread: int, back: float, end: int) -> None:
        """Count the GIL's wait after a batched call on ``thread``: from its last stamp
        ``end`` (``CLOCK_MONOTONIC`` ns) to ``back``, when Python ran again
        (``time.perf_counter()``)."""
        acc = self.gil.setdefault(thread, [0.0, 0])
        acc[0] += max(0.0, back - self.clock.t0 - (end * 1e-9 + self.clock.stamp_offset))
        acc[1] += 1

    def of(self, k: int) -> Callable:
        """The function that runs phase ``k`` on a list of local partitions (built once).

        A batched phase (:class:`~grapeshot.model.program.Batch`) runs them all in one
        compiled call; the others one by one: unpack custom halos, fill the walls, run the
        kernel and its checks, take the emigrants out. Everything a task needs is bound here,
        so it costs a few Python operations besides the app's own calls.
        """
        task = self.built.get(k)
        if task is None:
            task = self.built[k] = self._batch(k) if k in self.plan.batched else self._one(k)
        return task

    def _one(self, k: int) -> Callable:
        plan = self.plan
        phase = plan.program.phases[k]
        exchange, name = phase.exchange, phase.name
        kernel = phase.kernel if phase.fields is None else phase.call
        boundary = exchange.boundary if exchange is not None else None
        unpack = exchange.unpacker() if exchange is not None and k not in plan.plans else None
        emigrate = phase.migrate.emigrate if phase.migrate is not None else None
        check = plan.program.check_block
        local, boxes, blocks, offsets = plan.local, plan.boxes, plan.blocks, plan.offsets
        slots = self.slots
        inboxes, values, emigrants = slots.inbox, slots.values, slots.emigrants
        perf_counter, clock, watch = time.perf_counter, self.clock, self.watch
        fail = watch.fail

        def task(
            todo: list, step: int, ctx: Context, waited: float, rows: list, thread: int,
            then: Callable[[], None] | None = None, news: int = 0,
        ):  # fmt: skip
            t0 = clock.t0
            for i in todo:
                p = local[i]
                box, block = boxes[p], blocks[p]
                start = perf_counter()
                try:
                    if unpack is not None:
                        inbox = inboxes[i]
                        for slot in sorted(inbox):
                            unpack(block, box, offsets[slot], inbox[slot])
                        inbox.clear()
                    if boundary is not None:
                        boundary(block, box)
                    values[i] = kernel(block, box, ctx)
                    check(block, box, ctx, name)
                    if emigrate is not None:
                        emigrants[i] = emigrate(block, box)
                except BaseException as exc:  # the main thread reports it and aborts the run
                    fail(p, step, name, exc)
                end = perf_counter()
                watch.progress_at = end
                rows.append((p, step, k, thread, start - t0, end - t0, waited))
            if then is not None and watch.failure is None:
                then()

        return task

    def batch_args(self, k: int) -> tuple[tuple, np.ndarray, np.ndarray]:
        """``(arrays, bases, iparams)`` of batched phase ``k``'s calls: its fields' flat
        arrays, int ``(fields, L)`` where each local partition starts in each, and its
        iparams rows (:func:`~grapeshot.runtime.plain_batch.iparams_table`)."""
        plan = self.plan
        batch, arena = plan.batches[k], plan.arena
        arrays = tuple(arena.flat[f] for f in batch.fields)
        # The arena lists the partitions in the plan's local order.
        bases = np.array([arena.bases(f) for f in batch.fields], dtype=np.int64).reshape(
            len(batch.fields), len(plan.local)
        )
        iparams = iparams_table(batch, plan.boxes, plan.local, arena, self.rows.setdefault(k, {}))
        return arrays, bases, iparams

    def checks_after(self, k: int) -> bool:
        """Whether batched phase ``k``'s calls need Python after them: the protocol's check
        of a hand-written batch, a status word, or ``check_block``."""
        program = self.plan.program
        return (
            type(program).check_block is not Program.check_block
            or self.plan.batches[k].status is not None
            or program.phases[k].batch is not None
        )

    def _batch(self, k: int) -> Callable:
        plan, fusion = self.plan, self.fusion
        program = plan.program
        phase = program.phases[k]
        batch, name = plan.batches[k], phase.name
        arrays, bases, iparams = self.batch_args(k)
        run, params_of, values = batch.run, batch.params, self.slots.batch_values
        # Programs that keep the default check_block (no check) pay nothing per task for it.
        check = program.check_block
        checked = type(program).check_block is not Program.check_block
        # Where each partition's status word is, if the batch keeps one: only the partitions
        # it flags need a check_block call.
        status = (np.zeros(0, dtype=np.int64), np.zeros(len(plan.local), dtype=np.int64))
        if batch.status is not None:
            f = batch.fields.index(batch.status)
            status = (arrays[f], bases[f])
        # A batch the runtime generated (plain_batch) keeps the protocol by construction:
        # with no check_block either, nothing is left to check after its calls.
        verdict = self.checks_after(k)
        local = np.asarray(plan.local, dtype=np.int64)
        boxes, blocks = plan.boxes, plan.blocks
        by_parity = fusion.halos[k]
        fused = k in fusion.fused
        timed = fused or k in fusion.prepacks  # the tasks make copies: keep their share
        ran, halo_ns, news_word = fusion.ran, fusion.halo_ns, fusion.news
        waits, wait_ns = fusion.views.waits, fusion.views.wait_ns
        params = [None, None]  # (context, its params): one step's calls share them
        clock, watch, parity, returned = self.clock, self.watch, self.parity, self.returned
        perf_counter = time.perf_counter

        def task(
            todo, step: int, ctx: Context, waited: float, rows: list, thread: int,
            then: Callable[[], None] | None = None, news: int = 0,
        ):  # fmt: skip
            # Contiguous, as warm() compiled it: the threads' runs are strided views
            # (dispatch.chunks), and numba would compile the batch again for that layout,
            # inside the timed run, seconds with the workers waiting.
            positions = np.ascontiguousarray(todo, dtype=np.int64)
            stamps = np.zeros(positions.size + 1, dtype=np.int64)
            halos = by_parity[parity(step)]
            back = 0.0
            try:
                if params[0] is not ctx:
                    params[:] = (ctx, params_of(ctx))
                if news:  # batch_ends sends the messages the tasks packed
                    news_word[0] = news
                run(arrays, bases, positions, params[1], iparams, values, stamps, halos)
                back = perf_counter()
                if verdict:
                    ok, flagged = batch_verdict(positions, stamps, ran, fused, *status)
                    if not ok:
                        raise RuntimeError(
                            f"the batch of phase {name!r} must call "
                            "grapeshot.model.task_halos.task_begins before each partition and "
                            "batch_ends after the last"
                        )
                    if checked:
                        for p in local[flagged].tolist():
                            check(blocks[p], boxes[p], ctx, name)
            except BaseException as exc:  # the main thread reports it and aborts the run
                # The task that raised is the last one that began.
                begun = np.flatnonzero(stamps[: positions.size])
                at = (
                    positions[begun[-1]] if begun.size else (positions[0] if positions.size else -1)
                )
                watch.fail(int(local[at]) if at >= 0 else -1, step, name, exc)
            if then is not None and watch.failure is None:  # (a failure above is kept there)
                then()
            watch.progress_at = time.perf_counter()
            if positions.size:
                offset = clock.stamp_offset
                end = int(stamps[-1])  # a Python int: numpy scalar arithmetic costs a µs
                if back and end:  # batch_ends stamped the end: the GIL wait after it
                    returned(thread, back, end)
                # Stamps become seconds after the run.
                halo = halo_ns[: positions.size].copy() if timed else None
                waiting = None
                if waits[0]:  # tasks waited for messages before they began: no task's time
                    waiting = wait_ns[: positions.size].copy()
                    wait_ns[: positions.size] = 0
                    waits[0] = 0
                rows.append(
                    batch_row(local[positions], step, k, thread, stamps, offset, waited, halo,
                              waiting)
                )  # fmt: skip

        def warm() -> None:
            """Compile (or load) ``run`` and the checks after it on no partition, before the
            clock starts."""
            none = np.zeros(0, dtype=np.int64)
            stamps = np.zeros(1, np.int64)
            batch_verdict(none, stamps, ran, fused, *status)
            try:
                run(arrays, bases, none, np.zeros(16), iparams, values, stamps, by_parity[0])
            except NumbaError as exc:  # every rank compiles the same: each stops here
                origin = f"{program.origin}: " if program.origin else ""
                raise InputError(
                    f"{origin}phase {name!r}",
                    f"numba cannot compile its kernel: {exception_line(exc)}",
                    "a numba kernel of (its fields..., box, params) (docs/program-api.md)",
                ) from None

        task.warm = warm
        return task
