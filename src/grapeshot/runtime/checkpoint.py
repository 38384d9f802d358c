"""Checkpoints of a task run, a restart on any number of ranks, and a stop at a step boundary.

Every step's end is a *boundary* where the ranks may cut the run (as they do for a
rebalance): all ranks have finished the same step and hold their partitions' blocks whole.
:class:`Boundary` decides there, identically on every rank, whether to write a checkpoint
(every ``--checkpoint-every`` steps; or when rank 0's clock says ``--checkpoint-seconds`` have
passed) and whether to stop (a SIGTERM or SIGINT that reached *any* rank). The ranks agree
through one small non-blocking allreduce per step (a persistent one, started at a boundary and
read at the next): a signal or rank 0's clock acts one step later, and no rank waits for the
others to learn it. The same allreduce agrees on how many steps every rank may run before it
asks again (:attr:`Boundary.ahead`, the fewest any rank proposed: ranks that run several
steps in one compiled call, :mod:`grapeshot.runtime.compiled_steps`, skip the boundaries in
between, all alike, but never one where the run ends or a checkpoint falls by its number).

A checkpoint (:mod:`grapeshot.model.checkpoint_file` for the format) is written by every rank
at once, one file each, then rank 0 writes the index that names them and renames it into
place; only then are the files of the checkpoint it replaces removed. A restart
(:func:`load_blocks`) places the partitions anew, on any number of ranks, and each rank reads
its partitions' blocks from whichever files hold them.

What makes a restart bitwise: a step's reduced values live in that step's
:class:`~grapeshot.model.program.Context` alone (the next step starts with none), the
simulated time is kept as the float64 it was, and a partition's whole state is its block. The
values of the last step are stored too, for inspection.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from grapeshot.model.checkpoint_file import (
    FORMAT,
    CheckpointIndex,
    identity_differences,
    rank_file_name,
    read_blocks,
    read_index,
    verify_rank_file,
    write_index,
    write_rank_file,
)
from grapeshot.model.errors import InputError
from grapeshot.model.program import Block, Program
from grapeshot.runtime.agreement import agreed
from grapeshot.version import __version__

if TYPE_CHECKING:
    from mpi4py import MPI


class RunStopped(Exception):
    """A run stopped by a signal at a step boundary, on every rank alike.

    Attributes
    ----------
    step
        Steps done (the checkpoint's step).
    signal
        The signal's number (the exit status is ``128 + signal``).
    checkpoint
        The checkpoint written there, or ``None`` without ``--checkpoint``.
    """

    def __init__(self, step: int, signal: int, checkpoint: Path | None) -> None:
        super().__init__(f"stopped by signal {signal} at step {step}")
        self.step, self.signal, self.checkpoint = step, signal, checkpoint


@dataclass(frozen=True)
class Decision:
    """What the ranks agreed at a step boundary: write a checkpoint, and/or stop (the
    signal's number, 0 for none)."""

    checkpoint: bool
    stop: int


def decide(step: int, end: int, every: int | None, due: bool, signal: int) -> Decision | None:
    """The decision at the boundary after ``step`` steps (pure: every rank computes it from
    the same agreed ``due`` and ``signal``), or ``None`` to go on.

    A stop before the run's ``end`` writes a checkpoint (when there is a file to write); at
    the end only ``every`` does.
    """
    stop = signal if step < end else 0
    checkpoint = bool(every and step % every == 0) or (due and step < end) or bool(stop)
    if not checkpoint and not stop:
        return None
    return Decision(checkpoint, stop)


class Boundary:
    """The agreement at every step boundary of a run (see the module).

    Parameters
    ----------
    comm
        The run's communicator (duplicated: the agreement has its own).
    end
        The step the run ends at.
    writer
        Where checkpoints go (``None``: no ``--checkpoint``: a stop writes nothing).
    every
        Write one every this many steps (``--checkpoint-every``).
    seconds
        Write one when this many seconds (rank 0's clock) have passed since the last.
    pending
        The signal this rank has received and not acted on (0 for none).

    Attributes
    ----------
    stopped
        ``(step, signal)`` where the run stopped, or ``None``.
    written
        ``(step, seconds)`` of every checkpoint this rank took part in: from every rank at
        the boundary to the index in place.
    """

    def __init__(
        self,
        comm: MPI.Intracomm,
        *,
        end: int,
        writer: CheckpointWriter | None = None,
        every: int | None = None,
        seconds: float | None = None,
        pending: Callable[[], int] = lambda: 0,
    ) -> None:
        from mpi4py import MPI

        self.comm = comm.Dup()
        self.end, self.writer = end, writer
        self.every, self.seconds, self.pending = every, seconds, pending
        self.root = self.comm.Get_rank() == 0
        self.last = time.monotonic()
        #: ``(signal, checkpoint due, -steps proposed)``: the maximum is the agreement.
        self.send = np.zeros(3, dtype=np.int64)
        self.recv = np.zeros(3, dtype=np.int64)
        #: Steps this rank would run before it is asked again (the runner sets it before a
        #: call); ``ahead``, the fewest any rank proposed at the boundary before, agreed: how
        #: many steps every rank may run before the next boundary it asks (1: every one).
        self.propose = 1
        self.ahead = 1
        self.request: MPI.Request | None = None
        #: The persistent allreduce, made at the first boundary; ``persistent``: whether the
        #: MPI has them (else an MPI-3 allreduce each boundary).
        self.agreement: MPI.Prequest | None = None
        self.persistent = True
        self.op = MPI.MAX
        #: ``(signal, due)`` agreed at the boundary before, once its agreement is in.
        self.agreed = (0, False)
        self.stopped: tuple[int, int] | None = None
        self.written: list[tuple[int, float]] = []

    def settled(self) -> bool:
        """Whether :meth:`coming` would answer without waiting (the agreement it rests on is
        done)."""
        return self.request is None or self.request.Test()

    def coming(self, step: int) -> Decision | None:
        """The decision the call after ``step`` steps will make, known before it (the
        agreement it rests on began a boundary earlier): the runner sends the next step's
        first messages early only where the run goes on. Collective, as the call."""
        if self.request is not None:
            self.request.Wait()
            self.request = None
            self.agreed = (int(self.recv[0]), bool(self.recv[1]))
            self.ahead = max(1, int(-self.recv[2]))
        signal, due = self.agreed
        decision = decide(step, self.end, self.every if self.writer else None, due, signal)
        if decision is not None and not self.writer:
            decision = Decision(False, decision.stop) if decision.stop else None
        return decision

    def __call__(self, step: int) -> Decision | None:
        """The decision after ``step`` steps (collective, the same on every rank)."""
        decision = self.coming(step)
        self.agreed = (0, False)
        if decision is not None and decision.stop:
            self.stopped = (step, decision.stop)
            return decision
        if step >= self.end:
            return decision
        now = time.monotonic()
        if decision is not None and decision.checkpoint:
            self.last = now
        self.send[0] = self.pending()
        overdue = self.seconds is not None and now - self.last >= self.seconds
        self.send[1] = int(self.root and self.writer is not None and overdue)
        self.send[2] = -max(1, int(self.propose))
        if self.agreement is None and self.persistent:  # one, started at every boundary
            try:
                self.agreement = self.comm.Allreduce_init(self.send, self.recv, op=self.op)
            except NotImplementedError:  # an MPI older than 4.0 (every rank alike)
                self.persistent = False
        if self.agreement is not None:
            self.agreement.Start()
            self.request = self.agreement
        else:
            self.request = self.comm.Iallreduce(self.send, self.recv, op=self.op)
        return decision

    def forced_after(self, step: int) -> int:
        """The first boundary after ``step`` whose decision its number may force (a
        checkpoint every ``every`` steps, the run's end): one no rank may skip."""
        if self.writer is None or not self.every:
            return self.end
        return min(self.end, (step // self.every + 1) * self.every)

    def save(
        self,
        step: int,
        sim_time: float,
        values: dict[str, float],
        blocks: dict[int, Block],
        node_of: np.ndarray,
    ) -> None:
        """Write the checkpoint of this boundary (collective)."""
        if self.writer is None:
            return
        # The ranks reach the boundary at different times (a step's imbalance, which the
        # next step's halos would absorb anyway): the checkpoint's own time starts when all
        # are there.
        self.comm.Barrier()
        started = time.perf_counter()
        self.writer.write(step, sim_time, values, blocks, node_of)
        self.written.append((step, time.perf_counter() - started))
        self.last = time.monotonic()

    def close(self) -> None:
        """Complete the agreement still in flight and free its communicator."""
        if self.request is not None:
            self.request.Wait()
            self.request = None
        if self.agreement is not None:
            self.agreement.Free()
            self.agreement = None
        self.comm.Free()


class CheckpointWriter:
    """Writes a run's checkpoints to ``path`` from every rank (collective :meth:`write`).

    Parameters
    ----------
    path
        The index (``--checkpoint``); rank files go beside it.
    comm
        The run's communicator.
    identity
        :func:`program_identity` of the run.
    total_steps
        The run's ``--steps``.
    strategy
        The run's placement strategy (recorded).
    """

    def __init__(
        self,
        path: Path,
        comm: MPI.Intracomm,
        *,
        identity: dict[str, Any],
        total_steps: int,
        strategy: str,
    ) -> None:
        self.path, self.comm = Path(path), comm
        self.identity, self.total_steps, self.strategy = identity, total_steps, strategy

    def write(
        self,
        step: int,
        sim_time: float,
        values: dict[str, float],
        blocks: dict[int, Block],
        node_of: np.ndarray,
    ) -> None:
        """Every rank writes its file, then rank 0 the index; then the replaced checkpoint's
        files are removed. An error on any rank (a full disk, a block entry that is not an
        array) raises the same :class:`InputError` on every rank."""
        comm, rank = self.comm, self.comm.Get_rank()
        tag = comm.bcast(f"s{step}-{os.urandom(4).hex()}" if rank == 0 else None, root=0)
        name = rank_file_name(self.path, tag, rank)
        entry = agreed(comm, lambda: _written(self.path.parent / name, blocks))
        entries = comm.gather(entry, root=0)

        def index() -> None:
            if rank != 0:
                return
            old = _replaced_files(self.path)
            write_index(
                self.path, identity=self.identity, step=step, time=sim_time, values=values,
                node_of=node_of, files=entries, total_steps=self.total_steps,
                strategy=self.strategy,
            )  # fmt: skip
            keep = {e.name for e in entries}
            for stale in old - keep:
                with contextlib.suppress(OSError):
                    (self.path.parent / stale).unlink()

        agreed(comm, index)


def _written(path: Path, blocks: dict[int, Block]):
    try:
        return write_rank_file(path, blocks)
    except OSError as exc:
        raise InputError(
            f"--checkpoint {path}", f"cannot be written ({exc.strerror or exc})", None
        ) from None


def _replaced_files(index: Path) -> set[str]:
    """Rank files a new index at ``index`` replaces: those the old index names, and any left
    by a checkpoint whose index was never written (a run killed while writing)."""
    names = {p.name for p in index.parent.glob(f"{index.name}.s*.rank*.h5")}
    with contextlib.suppress(InputError):
        names |= {f.name for f in read_index(index, "--checkpoint").files}
    return names


def program_identity(app: str, program: Program, seed: int, *, builtin: bool) -> dict[str, Any]:
    """What a checkpoint must agree with to be restarted: the app (``builtin``: one of
    grapeshot's, named as given; else the program's origin), scene, partitions, cells,
    seed, grapeshot's version and the checkpoint format; for a program from a file, the
    file's SHA-256 (an edited program would not give the same results)."""
    identity: dict[str, Any] = {
        "app": app if builtin else (program.origin or app),
        "scene": program.scene,
        "parts": list(program.parts_shape),
        "cells": list(program.domain_shape),
        "seed": int(seed),
        "version": __version__,
        "format": FORMAT,
    }
    file = app.rsplit(":", 1)[0] if ":" in app else ""
    if file.endswith(".py") and Path(file).is_file():
        identity["app"] = f"{Path(file).name}:{app.rsplit(':', 1)[1]}"
        identity["program_sha256"] = hashlib.sha256(Path(file).read_bytes()).hexdigest()
    return identity


def app_source(app: str) -> str:
    """``app`` as a restart elsewhere finds it: a program file's path made absolute."""
    file, _, factory = app.rpartition(":")
    if file.endswith(".py") and Path(file).is_file():
        return f"{Path(file).resolve()}:{factory}"
    return app


def check_identity(index: CheckpointIndex, identity: dict[str, Any]) -> None:
    """Refuse a checkpoint of another program, grid, seed or version, in one line.

    Raises
    ------
    InputError
        ``--restart ck.h5: is for <what differs>; expected this run's``.
    """
    diffs = identity_differences(index.identity, identity)
    if diffs:
        raise InputError(
            f"--restart {index.path}",
            "differs from this run: " + "; ".join(diffs),
            "a checkpoint of the same program, grid, seed and grapeshot version",
        )


def load_blocks(index: CheckpointIndex, node_of: np.ndarray, comm: MPI.Intracomm) -> dict:
    """This rank's blocks under the new placement ``node_of``, read from the checkpoint.

    The rank files are checked first (size and checksum against the index), shared out
    among the ranks; a bad one is refused on every rank in one line.
    """
    rank, size = comm.Get_rank(), comm.Get_size()

    def verify() -> None:
        for old in range(rank, len(index.files), size):
            verify_rank_file(index, old)

    agreed(comm, verify)
    mine = np.flatnonzero(np.asarray(node_of) == rank)

    def read() -> dict[int, Block]:
        blocks: dict[int, Block] = {}
        old_of = index.node_of[mine]
        for old in np.unique(old_of):
            parts = [int(p) for p in mine[old_of == old]]
            blocks.update(read_blocks(index.rank_path(int(old)), parts))
        return blocks

    return agreed(comm, read)
