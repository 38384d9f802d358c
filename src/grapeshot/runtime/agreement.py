"""Set-up steps every rank takes on its own, ended together when one fails; checks rank 0
makes for all; how much of a program this node holds.

Each rank builds its own partitions and plans; one whose user code raises (an
``init_block`` that fails on one partition) would leave the others waiting for it in the next
collective for ever. :func:`agreed` ends the step with one small collective: every rank
learns whether any failed, and all raise the first failure's error, so the command line
prints one line (rank 0) and every rank exits together.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from grapeshot.model.errors import GrapeshotError, InputError

if TYPE_CHECKING:
    from mpi4py import MPI

T = TypeVar("T")


class RankFailed(GrapeshotError):
    """Another rank's set-up failed; the message is its error, prefixed with its rank."""


def agreed(comm: MPI.Comm, build: Callable[[], T]) -> T:
    """``build()`` on every rank of ``comm``, collectively: its result, or on every rank the
    error of the lowest rank whose ``build`` raised a :class:`GrapeshotError`.

    On one rank the error is raised as it is; on more, every rank raises a
    :class:`RankFailed` of its words prefixed with ``rank R:``. Errors of other types are not
    caught (a failing rank then ends the job on its own:
    :func:`grapeshot.runtime.watch.abort_run`).
    """
    from mpi4py import MPI

    try:
        result, failure = build(), None
    except GrapeshotError as exc:
        result, failure = None, exc
    # The lowest failed rank, or the size for none: one small allreduce (a re-plan's every
    # rebalance passes here; the words travel only where something failed).
    size = comm.Get_size()
    first = np.array([size if failure is None else comm.Get_rank()], dtype=np.int64)
    comm.Allreduce(MPI.IN_PLACE, first, op=MPI.MIN)
    lowest = int(first[0])
    if lowest == size:
        return result  # type: ignore[return-value]
    if size == 1 and failure is not None:
        raise failure
    words = comm.bcast(None if failure is None else str(failure), root=lowest)
    raise RankFailed(f"rank {lowest}: {words}")


def node_share(comm: MPI.Comm) -> float:
    """The part of a program spread evenly over ``comm``'s ranks that this node holds:
    ``L / N`` for ``L`` of the ``N`` ranks on this node (what a memory check weighs)."""
    from mpi4py import MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    on_this_node = node.Get_size()
    node.Free()
    return on_this_node / comm.Get_size()


def rank_zero_decides(comm: MPI.Comm, check: Callable[[], None]) -> None:
    """Run ``check`` on rank 0 of ``comm`` (under ``mpiexec``) and raise its refusal on
    every rank.

    For checks made before any work (output paths, memory): one rank probes the folders
    (rank 0 writes the files), every rank takes its verdict, so all stop together, none waits
    in a collective for a rank that gave up, and the error is printed once (by rank 0).

    Raises
    ------
    InputError
        The one ``check`` raised on rank 0, on every rank.
    """
    refusal: InputError | None = None
    if comm.Get_rank() == 0:
        try:
            check()
        except InputError as exc:
            refusal = exc
    refusal = comm.bcast(refusal, root=0)
    if refusal is not None:
        raise refusal
