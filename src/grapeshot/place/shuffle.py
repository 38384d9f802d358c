"""A cache-aware uniform shuffle of a slot list: scatter into buckets, then shuffle each bucket.

``rng.permutation`` of 100,000,000 slots is a Fisher–Yates walk whose every swap lands at a
random place in hundreds of megabytes, so nearly every step is a cache (and TLB) miss. The
two-level shuffle here (P. Sanders, "Random permutation on parallel and external memory",
1998) touches memory in two cache-friendly passes instead:

1. every slot draws a bucket uniformly among ``2**bucket_bits`` buckets, and the slots are
   scattered, in order, into their buckets (``2**bucket_bits`` sequential write streams);
2. each bucket, small enough to stay in a core's L2 cache, is Fisher–Yates shuffled, and the
   buckets are concatenated.

The result is an exactly uniform permutation: given the bucket sizes ``n_1 .. n_B``, a given
arrangement needs its first ``n_1`` items in bucket 1 and so on (probability ``B**-P``) and
then the right order inside each bucket (``prod 1 / n_b!``); summed over all size vectors,
``B**-P * sum P! / prod n_b! / P! = 1 / P!`` by the multinomial theorem. Every random integer
is exact as well: bucket numbers are whole bit fields of 64-bit words (``B`` is a power of
two) and the in-bucket draws use Lemire's multiply-and-reject bounded integers on 32-bit
halves, rejection included.

The random words come from the caller's :class:`numpy.random.Generator` only, drawn in fixed
chunks (:func:`chunk_words`) of ``rng.integers(0, 2**64, dtype=uint64)`` (``next_uint64`` of
its bit generator, whatever that is; ``random_raw``, the same words, where the two agree), so
one seed gives one permutation, bit for bit, on every machine and run.
It is *not* the permutation ``rng.permutation`` gives for that seed.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: Most 64-bit words drawn from the generator at a time (2 MiB); fewer for a short list
#: (:func:`chunk_words`). The last chunk of each pass is partly unused.
CHUNK_WORDS = 1 << 18

#: Average bucket size aimed at: 2**17 int32 slots are 512 KiB, about one core's L2 cache
#: (in a sweep at 10**8 slots, 1,024 buckets beat 256, 2,048 and 4,096).
BUCKET_TARGET_BITS = 17

#: Most buckets: more write streams than this thrash the TLB during the scatter.
MAX_BUCKET_BITS = 12


def bucket_bits_for(n: int) -> int:
    """Bits of the bucket number for ``n`` slots: ``0`` (one bucket) up to ``2**17`` slots.

    A function of ``n`` alone, never of the machine, so the permutation is the same anywhere.
    """
    return min(MAX_BUCKET_BITS, max(0, (n - 1).bit_length() - BUCKET_TARGET_BITS))


#: Bit generators whose raw output is their ``next_uint64``: for these ``random_raw`` gives
#: the very words ``integers(0, 2**64, dtype=uint64)`` would, about 30% faster.
_RAW_IS_UINT64 = (
    np.random.PCG64,
    np.random.PCG64DXSM,
    np.random.Philox,
    np.random.SFC64,
)


def chunk_words(n: int) -> int:
    """Words drawn at a time for ``n`` slots: about what the in-bucket pass needs, at most
    :data:`CHUNK_WORDS` (a function of ``n`` alone, like the bucket count)."""
    return min(CHUNK_WORDS, n // 2 + 16)


def _words(rng: np.random.Generator, size: int) -> np.ndarray:
    """The next ``size`` uniform 64-bit words of ``rng`` (its ``next_uint64``, each)."""
    bit_generator = rng.bit_generator
    if type(bit_generator) in _RAW_IS_UINT64:
        return bit_generator.random_raw(size)
    return rng.integers(0, 1 << 64, size=size, dtype=np.uint64)


@njit(cache=True, nogil=True)
def _draw_buckets(
    bucket: np.ndarray, counts: np.ndarray, start: int, words: np.ndarray, bits: int
) -> int:
    """Fill ``bucket[start:]`` from ``words`` (``64 // bits`` fields per word, low field first).

    Counts each bucket in ``counts``; returns how far ``bucket`` is filled.
    """
    per_word = 64 // bits
    mask = np.uint64((1 << bits) - 1)
    shift = np.uint64(bits)
    i = start
    n = bucket.size
    for w in range(words.size):
        if i >= n:
            break
        word = words[w]
        for _ in range(per_word):
            if i >= n:
                break
            b = np.uint16(word & mask)
            bucket[i] = b
            counts[b] += 1
            word >>= shift
            i += 1
    return i


@njit(cache=True, nogil=True)
def _scatter(
    out: np.ndarray, values: np.ndarray, runs: np.ndarray, bucket: np.ndarray, next_free: np.ndarray
) -> None:
    """Write ``values[k]`` ``runs[k]`` times, in order, each copy at its bucket's next slot."""
    i = 0
    for k in range(runs.size):
        v = values[k]
        for _ in range(runs[k]):
            b = bucket[i]
            out[next_free[b]] = v
            next_free[b] += 1
            i += 1


@njit(cache=True, nogil=True)
def _shuffle_segments(
    out: np.ndarray, bounds: np.ndarray, state: np.ndarray, words: np.ndarray
) -> bool:
    """Fisher–Yates each ``out[bounds[s]:bounds[s + 1]]``, resuming at ``state``.

    ``state = (segment, i)``: the next swap is position ``i`` of that segment, counting down
    (``i = -1``: not started). Consumes ``words`` as 32-bit halves, low half first, and returns
    ``True`` when every segment is shuffled, ``False`` when ``words`` ran out (``state`` then
    says where to resume with the next chunk; a draw cut short is redrawn whole, which is what
    a continuous stream would do after a rejection).
    """
    half = 0
    n_halves = 2 * words.size
    seg = state[0]
    i = state[1]
    n_seg = bounds.size - 1
    while seg < n_seg:
        lo = bounds[seg]
        if i < 0:
            i = bounds[seg + 1] - lo - 1
        while i > 0:
            # j uniform in [0, i] by Lemire's method: the high word of x * range, rejecting
            # the low words below 2**32 mod range.
            r = np.uint64(i + 1)
            while True:
                if half >= n_halves:
                    state[0] = seg
                    state[1] = i
                    return False
                w = words[half >> 1]
                x = (w >> np.uint64(32)) if (half & 1) else (w & np.uint64(0xFFFFFFFF))
                half += 1
                m = x * r
                low = m & np.uint64(0xFFFFFFFF)
                if low >= r:
                    break
                threshold = (np.uint64(1 << 32) - r) % r
                if low >= threshold:
                    break
            j = np.int64(m >> np.uint64(32))
            a = lo + i
            b = lo + j
            t = out[a]
            out[a] = out[b]
            out[b] = t
            i -= 1
        seg += 1
        i = -1
    state[0] = seg
    state[1] = -1
    return True


def shuffled_runs(
    values: np.ndarray,
    runs: np.ndarray,
    rng: np.random.Generator,
    *,
    bucket_bits: int | None = None,
) -> np.ndarray:
    """A uniformly random arrangement of ``values[k]`` repeated ``runs[k]`` times.

    Parameters
    ----------
    values
        int32, shape ``(n,)``: the distinct items (a node id each, for a slot list).
    runs
        Non-negative integers, shape ``(n,)``: how many times each item appears.
    rng
        Where every random word comes from; it advances by a whole number of chunks of
        :func:`chunk_words` words.
    bucket_bits
        ``log2`` of the number of buckets; default :func:`bucket_bits_for` of the total.
        Tests set it to exercise both levels at small sizes. At most 16.

    Returns
    -------
    numpy.ndarray
        int32, shape ``(runs.sum(),)``.
    """
    values = np.ascontiguousarray(values, dtype=np.int32)
    runs = np.ascontiguousarray(runs, dtype=np.int64)
    n = int(runs.sum())
    bits = bucket_bits_for(n) if bucket_bits is None else int(bucket_bits)
    if not 0 <= bits <= 16:
        raise ValueError(f"bucket_bits must be in [0, 16], got {bits}")
    out = np.empty(n, dtype=np.int32)
    if n == 0:
        return out
    chunk = chunk_words(n)
    words = _words(rng, chunk)
    if bits == 0:
        if n > 1 << 32:
            raise ValueError(f"{n} slots in one bucket: more than 2**32 (raise bucket_bits)")
        out[:] = np.repeat(values, runs)
        bounds = np.array([0, n], dtype=np.int64)
    else:
        bucket = np.empty(n, dtype=np.uint16)
        counts = np.zeros(1 << bits, dtype=np.int64)
        filled = _draw_buckets(bucket, counts, 0, words, bits)
        while filled < n:
            words = _words(rng, chunk)
            filled = _draw_buckets(bucket, counts, filled, words, bits)
        if counts.max() > 1 << 32:
            raise ValueError(
                f"a bucket of {counts.max()} slots: more than 2**32 (raise bucket_bits)"
            )
        bounds = np.zeros(counts.size + 1, dtype=np.int64)
        np.cumsum(counts, out=bounds[1:])
        _scatter(out, values, runs, bucket, bounds[:-1].copy())
        del bucket
        # The in-bucket draws start on a fresh chunk: the bucket pass's tail is left unused.
        words = _words(rng, chunk)
    state = np.array([0, -1], dtype=np.int64)
    while not _shuffle_segments(out, bounds, state, words):
        words = _words(rng, chunk)
    return out
