"""The runtime's message format: a fixed int64 header, then the buffer's raw bytes.

One MPI message carries one halo or emigrant buffer. The header says what it is for, so a
receiver can take messages in any order (``MPI_ANY_SOURCE``) and file each under the task it
feeds; the buffer keeps its dtype and shape so ``unpack`` sees exactly what ``pack`` made.
"""

from __future__ import annotations

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
    #: When the sender posted it: nanoseconds on the run's clock (ranks start it together).
    sent_ns: int = 0


def encode(env: Envelope, payload: np.ndarray | None) -> np.ndarray:
    """One contiguous uint8 buffer: header words, then the payload's bytes."""
    arr = np.zeros(0, dtype=np.uint8) if payload is None else np.ascontiguousarray(payload)
    if arr.ndim > _MAX_NDIM:
        raise ValueError(f"buffers of at most {_MAX_NDIM} dimensions travel; got {arr.ndim}")
    header = np.zeros(_HEADER, dtype=np.int64)
    header[:8] = (
        env.kind,
        env.step,
        env.phase,
        env.part,
        env.slot,
        int(env.present),
        ord(arr.dtype.char),
        arr.ndim,
    )
    header[8 : 8 + arr.ndim] = arr.shape
    header[12] = env.sent_ns
    return np.concatenate([header.view(np.uint8), arr.reshape(-1).view(np.uint8)])


def decode(raw: np.ndarray) -> tuple[Envelope, np.ndarray | None]:
    """Inverse of :func:`encode`."""
    header = raw[: _HEADER * 8].view(np.int64)
    kind, step, phase, part, slot, present, char, ndim = (int(x) for x in header[:8])
    env = Envelope(kind, step, phase, part, slot, bool(present), int(header[12]))
    if not present:
        return env, None
    shape = tuple(int(x) for x in header[8 : 8 + ndim])
    payload = raw[_HEADER * 8 :].view(np.dtype(chr(char))).reshape(shape)
    return env, payload
