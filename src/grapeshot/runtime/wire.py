"""The runtime's messages: one per rank pair and round, a fixed int64 header, raw payloads.

Every message starts with :data:`HEADER` int64 words: the round it belongs to (step, phase,
kind), the system-clock nanoseconds when it was sent (what the simulator's network is
calibrated on), the number of items and the news (:mod:`grapeshot.model.news`). A *grid*
message (a planned halo exchange) carries after the header only the gathered cells, in the
order both ends derive from the plan (between ranks of one node, header and cells are written
straight into the receiver's inbox, and the news word, written last, tells it the message is
whole: no MPI message follows; :mod:`grapeshot.runtime.mailboxes`). An
*item* message (custom packers, emigrants, graph exchanges) carries a table of ``n_items`` rows of
:data:`ITEM` words ``(part, slot, dtype, ndim, shape[4])`` and then each item's raw bytes
padded to 8, so an item keeps its dtype and shape (for a graph exchange, ``part`` is the
receiving partition and ``slot`` the sending one). Encoding and decoding touch Python once
per item only to build or return the arrays; a header is packed and read in one
:class:`struct.Struct` call (a numpy view of it costs microseconds, every message).
"""

from __future__ import annotations

import math
import struct
import time
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from grapeshot.model.news import HEADER, NEWS, SENT

HALO, MIGRANTS, GRAPH = 1, 2, 3
ITEM = 8  # part, slot, dtype char, ndim, shape[4]
_MAX_NDIM = 4
#: The header's words before the news (grapeshot.model.news: step, phase, kind, send time,
#: number of items), native int64 as numpy's ``view(np.int64)`` reads them.
_WORDS = struct.Struct(f"={NEWS}q")
_SENT = struct.Struct("=q")


class Header(NamedTuple):
    """What a message is for: the round ``(step, phase, kind)``, when it left, how many items."""

    step: int
    phase: int
    kind: int
    sent_ns: int
    n_items: int

    @property
    def round(self) -> tuple[int, int, int]:
        """``(step, phase, kind)``."""
        return (self.step, self.phase, self.kind)


def new_message(step: int, phase: int, kind: int, n_items: int, payload_bytes: int) -> np.ndarray:
    """An uninitialised uint8 message with its header written (send time still 0)."""
    raw = np.empty(HEADER * 8 + payload_bytes, dtype=np.uint8)
    _WORDS.pack_into(raw, 0, step, phase, kind, 0, n_items)
    raw[NEWS * 8 : HEADER * 8] = 0  # (an MPI message's news is not read)
    return raw


def stamp(raw: np.ndarray) -> None:
    """Write the send time (``time.time_ns``) into the header, just before sending."""
    _SENT.pack_into(raw, SENT * 8, time.time_ns())


def write_header(raw: np.ndarray, step: int, phase: int, kind: int) -> None:
    """Write a message's header, of no items, stamped with the send time now; all but its
    news (:func:`grapeshot.model.news.publish` writes that, last)."""
    _WORDS.pack_into(raw, 0, step, phase, kind, time.time_ns(), 0)


def read_header(raw: np.ndarray) -> Header:
    """The header of a received message."""
    return Header(*_WORDS.unpack_from(raw))


def check_grid_round(header: Header, step: int, phase: int, source: int) -> None:
    """Refuse a grid message from ``source`` whose round is not ``(step, phase, HALO)``: the
    ranks' plans disagree on where it lies."""
    if header.round != (step, phase, HALO):
        raise RuntimeError(
            f"grid message from rank {source} is of round {header.round}, expected "
            f"{(step, phase, HALO)}: the ranks' plans disagree"
        )


def payload(raw: np.ndarray) -> np.ndarray:
    """The bytes after the header (a view)."""
    return raw[HEADER * 8 :]


def encode_items(
    step: int, phase: int, kind: int, items: Sequence[tuple[int, int, np.ndarray]]
) -> np.ndarray:
    """One message holding ``(part, slot, array)`` items (arrays of at most 4 dimensions)."""
    arrays = [np.ascontiguousarray(a) for _, _, a in items]
    table = np.zeros((len(items), ITEM), dtype=np.int64)
    sizes = np.zeros(len(items), dtype=np.int64)
    for i, ((part, slot, _), a) in enumerate(zip(items, arrays, strict=True)):
        if a.ndim > _MAX_NDIM:
            raise ValueError(f"buffers of at most {_MAX_NDIM} dimensions travel; got {a.ndim}")
        table[i, :4] = (part, slot, ord(a.dtype.char), a.ndim)
        table[i, 4 : 4 + a.ndim] = a.shape
        sizes[i] = a.nbytes
    padded = sizes + (-sizes) % 8
    raw = new_message(step, phase, kind, len(items), table.nbytes + int(padded.sum()))
    body = payload(raw)
    body[: table.nbytes] = table.view(np.uint8).ravel()
    at = table.nbytes
    for a, size, pad in zip(arrays, sizes, padded, strict=True):
        body[at : at + size] = a.reshape(-1).view(np.uint8)
        at += int(pad)
    return raw


def decode_items(raw: np.ndarray) -> list[tuple[int, int, np.ndarray]]:
    """Inverse of :func:`encode_items`: ``(part, slot, array)`` with arrays as views."""
    n = read_header(raw).n_items
    body = payload(raw)
    table = body[: n * ITEM * 8].view(np.int64).reshape(n, ITEM)
    at = n * ITEM * 8
    items = []
    for part, slot, char, ndim, *shape in table.tolist():
        dtype = np.dtype(chr(char))
        shape = tuple(shape[:ndim])
        size = math.prod(shape) * dtype.itemsize
        items.append((part, slot, body[at : at + size].view(dtype).reshape(shape)))
        at += size + (-size) % 8
    return items
