"""The one error type users see: bad input, named where it was found."""

from __future__ import annotations

import math
import numbers
import os
from pathlib import Path


class GrapeshotError(Exception):
    """Base class of every error grapeshot raises on purpose."""


class InputError(GrapeshotError, ValueError):
    """Invalid user input: a file, a field, a command-line value.

    The message follows one template, ``"<where>: <what is wrong>; expected <what>"``, so a
    command line can print it on one line and exit with status 2.

    Parameters
    ----------
    where
        What holds the bad value: ``"machine.toml line 4"``, ``"--busy"``, ``"cost"``.
    problem
        What is wrong with it, e.g. ``"got -1"``.
    expected
        What would have been accepted, e.g. ``"a number in (0, 1]"``. Omitted when
        ``problem`` already says it.
    """

    def __init__(self, where: str, problem: str, expected: str | None = None) -> None:
        self.where = where
        self.problem = problem
        self.expected = expected
        message = f"{where}: {problem}"
        if expected:
            message += f"; expected {expected}"
        super().__init__(message)

    def __reduce__(self):
        # Pickled as its three fields (it crosses MPI ranks and processes): the default would
        # call InputError(message) and fail.
        return (InputError, (self.where, self.problem, self.expected))


def exception_line(exc: BaseException, *, lines: int = 3, limit: int = 400) -> str:
    """``Type: message`` on one line: the message's first ``lines`` non-empty lines, at most
    ``limit`` characters (a numba typing error runs to dozens of lines; its first three say
    what failed and for which types)."""
    kept: list[str] = []
    for line in str(exc).splitlines():
        line = " ".join(line.split())
        if line and line not in kept:  # numba repeats a line per nested pipeline
            kept.append(line)
    text = " / ".join(kept[:lines])
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def read_input_text(path: str | os.PathLike[str], expected: str, *, errors: str = "strict") -> str:
    """The UTF-8 text of an input file; one :class:`InputError` naming it if it cannot be read.

    ``expected`` says what the file should be (``"an SWF file"``); ``errors`` is passed to the
    decoder (``"replace"`` for logs that may hold stray bytes).
    """
    try:
        return Path(path).read_text(encoding="utf-8", errors=errors)
    except OSError as exc:
        raise InputError(str(path), f"cannot read ({exc.strerror or exc})", expected) from None
    except UnicodeDecodeError as exc:  # errors="strict": a byte that is not UTF-8
        line = exc.object.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"{path} line {line}", f"is not UTF-8 text (byte {exc.start})", expected
        ) from None


def check_positive_int(value: int, where: str, *, minimum: int = 1) -> int:
    """Return ``value`` as an int if it is an integer ``>= minimum``, else raise InputError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InputError(where, f"got {value!r}", f"an integer >= {minimum}")
    if value < minimum:
        raise InputError(where, f"got {value}", f"an integer >= {minimum}")
    return int(value)


def check_probability(value: float, where: str, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a float in (0, 1] (or [0, 1] with ``allow_zero``), else raise."""
    lo = "[0" if allow_zero else "(0"
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise InputError(where, f"got {value!r}", f"a number in {lo}, 1]") from None
    ok = (0.0 <= x <= 1.0) if allow_zero else (0.0 < x <= 1.0)
    if not ok:
        raise InputError(where, f"got {value!r}", f"a number in {lo}, 1]")
    return x


def check_positive_number(value: float, where: str) -> float:
    """Return ``value`` as a float if it is a finite number ``> 0``, else raise InputError."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise InputError(where, f"got {value!r}", "a positive number") from None
    if not (math.isfinite(x) and x > 0.0):
        raise InputError(where, f"got {value!r}", "a positive finite number")
    return x
