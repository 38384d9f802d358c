"""Bit-level helpers for the kernel's radix heap (:mod:`grapeshot.sim.event_heap`), as LLVM
instructions: a float64's bits as an int64 and back, and the position of an int64's highest
and lowest set bits (one instruction each, ``lzcnt`` and ``tzcnt`` on x86-64).

A non-negative float64's bits, read as an integer, are in the same order as the floats (the
exponent above the mantissa), so the heap keys on a time's bits; nothing here rounds.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

_I64 = ir.IntType(64)
_FALSE = ir.Constant(ir.IntType(1), 0)


@intrinsic
def float_bits(typingctx, x):
    """The bits of float64 ``x`` as an int64 (a reinterpretation, not a conversion)."""
    if not isinstance(x, types.Float) or x.bitwidth != 64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], _I64)

    return types.int64(x), codegen


@intrinsic
def bits_float(typingctx, k):
    """The float64 whose bits are int64 ``k``: the inverse of :func:`float_bits`."""
    if not isinstance(k, types.Integer) or k.bitwidth != 64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(k), codegen


@intrinsic
def bit_length(typingctx, k):
    """The number of bits of int64 ``k >= 0`` (0 for 0): its highest set bit, plus one."""
    if not isinstance(k, types.Integer) or k.bitwidth != 64:
        return None

    def codegen(context, builder, signature, args):
        return builder.sub(_I64(64), builder.ctlz(args[0], _FALSE))

    return types.int64(k), codegen


@intrinsic
def lowest_bit(typingctx, k):
    """The position of the lowest set bit of int64 ``k != 0``."""
    if not isinstance(k, types.Integer) or k.bitwidth != 64:
        return None

    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], _FALSE)

    return types.int64(k), codegen
