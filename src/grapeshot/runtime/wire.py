"""The runtime's message format: buffers with self-describing headers, batched per rank.

One MPI message carries every buffer a rank had ready for another rank at that moment
(halos and emigrants of possibly many partitions): a count, then per buffer a fixed int64
header and its raw bytes, padded to 8 bytes. The header says what the buffer is for, so a
receiver can take messages in any order (``MPI_ANY_SOURCE``) and file each buffer under the
task it feeds; the buffer keeps its dtype and shape so ``unpack`` sees exactly what ``pack``
made. Batching matters: per MPI message the Python side pays tens of microseconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

HALO, MIGRANTS = 1, 2
_HEADER = 13  # int64 words: 8 of envelope, 4 of shape, the send time
_MAX_NDIM = 4


@dataclass(frozen=True)
class Envelope:
    """What a buffer is for: ``part`` (the receiver) takes it before task ``(step, phase)``;
    ``slot`` is the sender's position in the receiver's neighbour_offsets order."""

    kind: int
    step: int
    phase: int
    part: int
    slot: int
    present: bool
    #: When the sender posted it: nanoseconds of the system clock (``time.time_ns``).
    sent_ns: int = 0


def encode(items: Sequence[tuple[Envelope, np.ndarray | None]], sent_ns: int) -> np.ndarray:
    """One contiguous uint8 buffer holding every ``(envelope, payload)`` of ``items``."""
    chunks = [np.array([len(items)], dtype=np.int64).view(np.uint8)]
    for env, payload in items:
        arr = np.zeros(0, dtype=np.uint8) if payload is None else np.ascontiguousarray(payload)
        if arr.ndim > _MAX_NDIM:
            raise ValueError(f"buffers of at most {_MAX_NDIM} dimensions travel; got {arr.ndim}")
        header = np.zeros(_HEADER, dtype=np.int64)
        header[:8] = (
            env.kind, env.step, env.phase, env.part, env.slot, int(env.present),
            ord(arr.dtype.char), arr.ndim,
        )  # fmt: skip
        header[8 : 8 + arr.ndim] = arr.shape
        header[12] = sent_ns
        chunks.append(header.view(np.uint8))
        data = arr.reshape(-1).view(np.uint8)
        chunks.append(data)
        if data.nbytes % 8:
            chunks.append(np.zeros(8 - data.nbytes % 8, dtype=np.uint8))
    return np.concatenate(chunks)


def decode(raw: np.ndarray) -> list[tuple[Envelope, np.ndarray | None]]:
    """Inverse of :func:`encode`: the ``(envelope, payload)`` pairs, payloads as views."""
    count = int(raw[:8].view(np.int64)[0])
    at = 8
    items = []
    for _ in range(count):
        header = raw[at : at + _HEADER * 8].view(np.int64)
        at += _HEADER * 8
        kind, step, phase, part, slot, present, char, ndim = (int(x) for x in header[:8])
        env = Envelope(kind, step, phase, part, slot, bool(present), int(header[12]))
        if not present:
            items.append((env, None))
            continue
        dtype = np.dtype(chr(char))
        shape = tuple(int(x) for x in header[8 : 8 + ndim])
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        items.append((env, raw[at : at + nbytes].view(dtype).reshape(shape)))
        at += nbytes + (-nbytes) % 8
    return items
