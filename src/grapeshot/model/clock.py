"""A monotonic clock compiled code can read: ``now_ns()`` inside numba functions.

A batch kernel (:class:`grapeshot.model.program.Batch`) runs many tasks in one compiled call
and stamps each task's start with :func:`now_ns`, so the runtime still records every task's
time. It reads ``CLOCK_MONOTONIC``, the clock of Python's ``time.perf_counter`` and
``time.monotonic_ns`` on Linux, through a direct call to the C library's ``clock_gettime``
(about 20 ns; unlike a ctypes pointer, this keeps numba's on-disk cache usable).
"""

from __future__ import annotations

from llvmlite import ir
from numba import njit
from numba.core import cgutils, types
from numba.extending import intrinsic

#: ``CLOCK_REALTIME`` and ``CLOCK_MONOTONIC`` on Linux.
_CLOCK_REALTIME, _CLOCK_MONOTONIC = 0, 1


def _clock_reader(clock: int):
    """An intrinsic reading ``clock`` (``clock_gettime``) in nanoseconds."""

    @intrinsic
    def read(typingctx):
        def codegen(context, builder, signature, args):
            i64, i32 = ir.IntType(64), ir.IntType(32)
            timespec = ir.LiteralStructType([i64, i64])  # tv_sec, tv_nsec on 64-bit Linux
            ts = cgutils.alloca_once(builder, timespec)
            fnty = ir.FunctionType(i32, [i32, timespec.as_pointer()])
            fn = cgutils.get_or_insert_function(builder.module, fnty, "clock_gettime")
            builder.call(fn, [ir.Constant(i32, clock), ts])
            sec = builder.load(cgutils.gep_inbounds(builder, ts, 0, 0))
            nsec = builder.load(cgutils.gep_inbounds(builder, ts, 0, 1))
            return builder.add(builder.mul(sec, ir.Constant(i64, 1_000_000_000)), nsec)

        return types.int64(), codegen

    return read


_monotonic_ns = _clock_reader(_CLOCK_MONOTONIC)
_realtime_ns = _clock_reader(_CLOCK_REALTIME)


@njit(cache=True, nogil=True)
def now_ns() -> int:
    """Nanoseconds of ``CLOCK_MONOTONIC`` (``time.monotonic_ns()``), callable from numba."""
    return _monotonic_ns()


@njit(cache=True, nogil=True, _nrt=False)
def wall_ns() -> int:
    """Nanoseconds of ``CLOCK_REALTIME`` (``time.time_ns()``), callable from numba: the system
    clock, shared by a node's ranks (and NTP-aligned across nodes), that a message's send
    time and its arrival are read on."""
    return _realtime_ns()
