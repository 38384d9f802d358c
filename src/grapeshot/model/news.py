"""The news of a message between the ranks of one node: one header word, written last.

Between the ranks of one node, a grid halo message is written straight into the receiver's
inbox (:mod:`grapeshot.runtime.mailboxes`), and no MPI message follows it: the receiver learns
that it is whole from the last word of its header, its *news*. The sender writes the news after
every other byte of the message, as a release store; the receiver reads it as an acquire load
before it reads anything else of the message. (On x86 both are plain moves; the orders are what
the compiler, and a machine with a weaker memory model, must keep.) Compiled tasks that pack a
message or wait for one, and the runtime's Python, use the same two functions,
:func:`publish` and :func:`observed`.

The news of round ``step`` is :func:`news_of` ``(step)``, ``step + 1``: never 0, which a
region holds when it is (re)allocated (the mailboxes zero their region then), and larger than
what any earlier round of the same slot wrote (steps only grow within a placement), so no stale
word reads as this round's news.

A header is :data:`HEADER` int64 words: step, phase, kind, send time (``CLOCK_REALTIME``
nanoseconds, :func:`grapeshot.model.clock.wall_ns`), number of items, news
(:mod:`grapeshot.runtime.wire`).
"""

from __future__ import annotations

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from grapeshot.model.clock import now_ns

#: Words of a message header, and each word's place in it.
HEADER = 6
STEP, PHASE, KIND, SENT, ITEMS, NEWS = range(HEADER)


def _word_pointer(context, builder, array_type, array, offset):
    """An ``i64*`` to byte ``offset`` of ``array``'s data."""
    data = context.make_array(array_type)(context, builder, array).data
    byte = builder.gep(builder.bitcast(data, ir.IntType(8).as_pointer()), [offset])
    return builder.bitcast(byte, ir.IntType(64).as_pointer())


def _contiguous(array) -> bool:
    return isinstance(array, types.Array) and array.ndim == 1 and array.layout == "C"


def _storer(ordering: str | None):
    """An intrinsic storing an int64 at a byte offset of an array, as an atomic store of
    ``ordering`` (``None``: a plain store)."""

    @intrinsic
    def store(typingctx, array, offset, value):
        if not _contiguous(array) or not isinstance(offset, types.Integer):
            return None

        def codegen(context, builder, signature, args):
            pointer = _word_pointer(context, builder, signature.args[0], args[0], args[1])
            word = context.cast(builder, args[2], signature.args[2], types.int64)
            if ordering is None:
                builder.store(word, pointer)
            else:
                builder.store_atomic(word, pointer, ordering, 8)
            return context.get_dummy_value()

        return types.none(array, offset, value), codegen

    return store


_store_release, _store_word = _storer("release"), _storer(None)


def _loader(ordering: str | None):
    """An intrinsic loading the int64 at a byte offset of an array, as an atomic load of
    ``ordering`` (``None``: a plain load)."""

    @intrinsic
    def load(typingctx, array, offset):
        if not _contiguous(array) or not isinstance(offset, types.Integer):
            return None

        def codegen(context, builder, signature, args):
            pointer = _word_pointer(context, builder, signature.args[0], args[0], args[1])
            if ordering is None:
                return builder.load(pointer)
            return builder.load_atomic(pointer, ordering, 8)

        return types.int64(array, offset), codegen

    return load


_load_acquire, _load_word = _loader("acquire"), _loader(None)


@intrinsic
def _sched_yield(typingctx):
    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.IntType(32), [])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "sched_yield")
        builder.call(fn, [])
        return context.get_dummy_value()

    return types.none(), codegen


@njit(cache=True, nogil=True, _nrt=False)
def news_of(step: int) -> int:
    """The news word of round ``step``."""
    return step + 1


@njit(cache=True, nogil=True, _nrt=False)
def step_of(news: int) -> int:
    """The round whose news is ``news`` (inverse of :func:`news_of`)."""
    return news - 1


@njit(cache=True, nogil=True, _nrt=False)
def publish(array, offset: int, value: int) -> None:
    """Store ``value`` as the int64 at byte ``offset`` of ``array`` (1-d, C-contiguous),
    after every write before it (release)."""
    _store_release(array, offset, value)


@njit(cache=True, nogil=True, _nrt=False)
def observed(array, offset: int) -> int:
    """The int64 at byte ``offset`` of ``array`` (1-d, C-contiguous); no read after it sees
    memory older than the write of it (acquire)."""
    return _load_acquire(array, offset)


@njit(cache=True, nogil=True, _nrt=False)
def get_word(array, offset: int) -> int:
    """The int64 at byte ``offset`` of ``array`` (a float64 inbox gives a header's integer
    words this way)."""
    return _load_word(array, offset)


@njit(cache=True, nogil=True, _nrt=False)
def put_word(array, offset: int, value: int) -> None:
    """Store ``value`` as the int64 at byte ``offset`` of ``array`` (a float64 outbox takes
    a header's integer words this way)."""
    _store_word(array, offset, value)


@njit(cache=True, nogil=True, _nrt=False)
def yield_core() -> None:
    """Let another thread or process have this core (``sched_yield``): between looks at a
    word a neighbour will write, which may be running on this very core."""
    _sched_yield()


@njit(cache=True, nogil=True, _nrt=False)
def first_news(space, at, news: int, timeout_ns: int) -> int:
    """The first ``j`` whose message, header at byte ``at[j]`` of ``space``, has news
    ``news``, skipping the ``at[j] < 0``; looked at again, the core yielded in between, until
    ``timeout_ns`` nanoseconds have passed (0: once), then -1. Without the GIL: a thread of
    the rank runs meanwhile."""
    start = now_ns()
    while True:
        for j in range(at.size):
            if at[j] >= 0 and _load_acquire(space, at[j] + NEWS * 8) == news:
                return j
        if now_ns() - start >= timeout_ns:
            return -1
        _sched_yield()
