"""Test payloads, per-pair checksums and message chunking (pure; no MPI).

MPI counts are 32-bit ``int``: one message of more than ``2**31 - 1`` elements overflows. Every
message grapeshot sends is cut by :func:`chunks` into pieces of at most ``max_chunk`` bytes
(default :data:`MAX_CHUNK`, 1 GiB), sent in order on one (source, tag) so MPI's non-overtaking
rule puts them back in order.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping

import numpy as np

#: Largest piece of a message sent in one MPI call, bytes (below 2**31 - 1 with room to spare).
MAX_CHUNK = 1 << 30


def chunks(offset: int, nbytes: int, max_chunk: int = MAX_CHUNK) -> list[tuple[int, int]]:
    """Pieces ``(start, length)`` covering ``[offset, offset + nbytes)``, each ``<= max_chunk``.

    Computed with Python integers, so sizes beyond 2**31 (or 2**63 / 8) never overflow.
    """
    if max_chunk < 1:
        raise ValueError(f"max_chunk must be >= 1, got {max_chunk}")
    offset, nbytes = int(offset), int(nbytes)
    return [
        (offset + start, min(max_chunk, nbytes - start)) for start in range(0, nbytes, max_chunk)
    ]


def payload(src: int, dst: int, nbytes: int, seed: int = 0) -> np.ndarray:
    """Deterministic bytes of the message ``src -> dst`` (uint8, ``(nbytes,)``).

    A linear congruence per pair: cheap to make and to check, different for every pair and
    position, so a byte delivered to the wrong place or twice changes the checksum.
    """
    k = np.arange(int(nbytes), dtype=np.uint64)
    mult = np.uint64(2 * (src * 7919 + dst * 104729 + seed * 1299709) + 1)
    return ((k * mult + np.uint64(src + 3 * dst + seed)) >> np.uint64(3)).astype(np.uint8)


def checksum(buf: np.ndarray) -> int:
    """CRC-32 of a byte buffer."""
    return zlib.crc32(memoryview(np.ascontiguousarray(buf)).cast("B"))


def make_sends(com: np.ndarray, rank: int, seed: int = 0) -> dict[int, np.ndarray]:
    """``{dst: payload}`` of ``rank``'s row of ``com``."""
    return {
        int(j): payload(rank, int(j), int(com[rank, j]), seed) for j in np.flatnonzero(com[rank])
    }


def verify_received(
    com: np.ndarray, rank: int, received: Mapping[int, np.ndarray], seed: int = 0
) -> dict[str, int]:
    """Check ``rank`` got exactly its column of ``com`` with the right bytes.

    Returns ``{"pairs": .., "bytes": ..}``; raises AssertionError naming the first bad pair.
    """
    expected = {int(i): int(com[i, rank]) for i in np.flatnonzero(com[:, rank])}
    if set(received) != set(expected):
        raise AssertionError(
            f"rank {rank}: sources {sorted(received)} differ from expected {sorted(expected)}"
        )
    total = 0
    for src, size in expected.items():
        got = received[src]
        if got.size != size:
            raise AssertionError(f"rank {rank}: {got.size} bytes from {src}, expected {size}")
        if checksum(got) != checksum(payload(src, rank, size, seed)):
            raise AssertionError(f"rank {rank}: checksum of the message from {src} differs")
        total += size
    return {"pairs": len(expected), "bytes": total}
