"""Global reductions over point-to-point messages: linear, binomial tree, or MPI's own.

Birdshot §6.2 compares a linear reduction (every rank talks to one root) with a tree.
grapeshot's reductions are *ordered*: every rank contributes ``{partition: value}``, and the
values are combined in partition-id order, so a sum gives the same bits whatever the
placement, the rank count or the algorithm. ``min``/``max`` with the ``mpi`` algorithm use
``MPI_Allreduce`` directly (order cannot change their result).

The tree schedule is pure (:func:`binomial_children`, :func:`binomial_parent`) and tested in
one process; the protocols take the communicator as a keyword.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

ALGORITHMS = ("mpi", "linear", "binomial")
_TAG = 7_000


def binomial_parent(rank: int) -> int | None:
    """Parent of ``rank`` in a binomial tree rooted at 0 (clear the lowest set bit)."""
    return None if rank == 0 else rank & (rank - 1)


def binomial_children(rank: int, size: int) -> list[int]:
    """Children of ``rank`` in a binomial tree rooted at 0 over ``size`` ranks, ascending."""
    children = []
    bit = 1
    while bit < size and not rank & bit:
        if rank + bit < size:
            children.append(rank + bit)
        bit <<= 1
    return children


def _merge(parts: Sequence[Mapping[int, float]]) -> dict[int, float]:
    merged: dict[int, float] = {}
    for p in parts:
        merged.update(p)
    return merged


def ordered_allreduce(
    local: Mapping[int, float],
    combine: Callable[[Sequence[float]], float],
    *,
    comm,
    algorithm: str = "mpi",
    op: str | None = None,
) -> float:
    """Combine every rank's ``{partition: value}`` in partition order; every rank gets it.

    Parameters
    ----------
    local
        This rank's contributions (may be empty).
    combine
        Combines values given in partition-id order (e.g. ``Reduction.combine``).
    comm
        An mpi4py communicator reserved for collectives (not used for other traffic).
    algorithm
        ``"mpi"``, ``"linear"`` or ``"binomial"``.
    op
        ``"min"``/``"max"`` let ``"mpi"`` use ``MPI_Allreduce`` on the local combination.
    """
    from mpi4py import MPI

    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown reduction algorithm {algorithm!r}; one of {ALGORITHMS}")
    size, rank = comm.Get_size(), comm.Get_rank()
    if size == 1:
        return combine([local[k] for k in sorted(local)])
    if algorithm == "mpi":
        if op in ("min", "max") and local:
            mine = combine([local[k] for k in sorted(local)])
            return float(comm.allreduce(mine, op=MPI.MIN if op == "min" else MPI.MAX))
        merged = _merge(comm.allgather(dict(local)))
        return combine([merged[k] for k in sorted(merged)])
    if algorithm == "linear":
        if rank == 0:
            merged = _merge([local, *(comm.recv(source=r, tag=_TAG) for r in range(1, size))])
            value = combine([merged[k] for k in sorted(merged)])
            for r in range(1, size):
                comm.send(value, dest=r, tag=_TAG + 1)
            return value
        comm.send(dict(local), dest=0, tag=_TAG)
        return comm.recv(source=0, tag=_TAG + 1)
    # Binomial tree: gather the contributions up, combine at the root, broadcast down.
    gathered = dict(local)
    for child in binomial_children(rank, size):
        gathered.update(comm.recv(source=child, tag=_TAG))
    parent = binomial_parent(rank)
    if parent is None:
        value = combine([gathered[k] for k in sorted(gathered)])
    else:
        comm.send(gathered, dest=parent, tag=_TAG)
        value = comm.recv(source=parent, tag=_TAG + 1)
    for child in binomial_children(rank, size):
        comm.send(value, dest=child, tag=_TAG + 1)
    return value
