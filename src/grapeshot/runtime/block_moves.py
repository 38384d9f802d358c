"""Partitions changing rank at a rebalance: their blocks' arrays travel as raw bytes.

Pickling every moving block through ``alltoall`` cost a copy of its bytes into the pickle
and another out of it (5 ms of a call moving 100 partitions of the front, 16×16 on 2 ranks,
3.6 MB). Here the numeric arrays of the blocks leaving for one rank are laid one after the
other in one buffer (each at a multiple of 8 bytes, so the views made of them on arrival are
aligned), sent by one ``Alltoallv``, and arrive as views of the receive buffer; what else a
block holds (and where each array lies) goes by a small pickled ``alltoall``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from grapeshot.model.program import Block
from grapeshot.runtime import populated

#: How a block travels: per field, in the block's order, ``(name, value)`` for a value that
#: is pickled, or ``(name, dtype, shape, order, offset)`` for an array sent as raw bytes: its
#: dtype string, shape, memory order (``"C"``, or ``"F"`` for a Fortran-ordered array: a
#: kernel compiled for it keeps its type) and byte offset in its sender's message. Plain
#: tuples: named ones cost the pickling of a call's layouts four times as much.
Entry = tuple


def _raw(value: Any) -> bool:
    """Whether ``value`` travels as raw bytes: a plain numpy array of numbers."""
    return type(value) is np.ndarray and value.dtype.kind in "biufc"


def move_blocks(blocks: dict[int, Block], new: np.ndarray, comm) -> tuple[dict[int, Block], int]:
    """Send every block of ``blocks`` (``{partition: block}``) whose rank changes in ``new``
    (int ``(P,)``) to its new rank (collective); ``(this rank's blocks under new, bytes of
    the arrays moved by all ranks)``."""
    from mpi4py import MPI

    rank, size = comm.Get_rank(), comm.Get_size()
    layouts: list[list[tuple[int, list[Entry]]]] = [[] for _ in range(size)]
    arrays: list[list[np.ndarray]] = [[] for _ in range(size)]
    nbytes = np.zeros(size, dtype=np.int64)
    moved = 0
    parts = np.fromiter(blocks, np.int64, len(blocks))
    goes = new[parts] if parts.size else parts
    for p, r in zip(parts[goes != rank].tolist(), goes[goes != rank].tolist(), strict=True):
        block = blocks[p]
        entry: list[Entry] = []
        for name, value in block.items():
            if _raw(value):
                order = "F" if value.flags.f_contiguous and not value.flags.c_contiguous else "C"
                a = value.ravel(order=order)  # a view where it is contiguous already
                entry.append((name, a.dtype.str, value.shape, order, int(nbytes[r])))
                arrays[r].append(a.view(np.uint8))
                pad = -a.nbytes % 8
                if pad:
                    arrays[r].append(np.zeros(pad, dtype=np.uint8))
                nbytes[r] += a.nbytes + pad
            else:
                entry.append((name, value))
        moved += sum(v.nbytes for v in block.values() if isinstance(v, np.ndarray))
        layouts[r].append((p, entry))
    # One exchange of the layouts, their bytes and what each rank sends in all (the run's
    # total moved), then the bytes themselves: two collectives in a rebalance's pause.
    told = comm.alltoall([(layouts[r], int(nbytes[r]), moved) for r in range(size)])
    layouts_in = [layout for layout, _, _ in told]
    nbytes_in = np.array([n for _, n, _ in told], dtype=np.int64)
    total = sum(sent for _, _, sent in told)  # every rank's own, this one's included
    # Fresh buffers of a few megabytes at a large move: their pages mapped at once (written
    # once, read once: the arrivals' grid fields are copied into the arena).
    send = populated.zeros(int(nbytes.sum()), np.uint8)
    if send.size:
        np.concatenate([x for r in range(size) for x in arrays[r]], out=send)
    recv = populated.zeros(int(nbytes_in.sum()), np.uint8)
    starts_out = (np.cumsum(nbytes) - nbytes).tolist()
    starts_in = (np.cumsum(nbytes_in) - nbytes_in).tolist()
    comm.Alltoallv(
        [send, (nbytes.tolist(), starts_out), MPI.BYTE],
        [recv, (nbytes_in.tolist(), starts_in), MPI.BYTE],
    )
    mine = {p: blocks[p] for p in parts[goes == rank].tolist()}
    for r in range(size):
        base = starts_in[r]
        for p, entry in layouts_in[r]:
            block = {}
            for item in entry:
                if len(item) == 2:
                    block[item[0]] = item[1]
                    continue
                name, dtype, shape, order, offset = item
                dtype = np.dtype(dtype)
                at = base + offset
                view = recv[at : at + math.prod(shape) * dtype.itemsize].view(dtype)
                block[name] = view.reshape(shape, order=order)
            mine[p] = block
    return mine, int(total)
