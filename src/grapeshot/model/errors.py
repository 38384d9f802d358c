"""The one error type users see: bad input, named where it was found."""

from __future__ import annotations

import math
import numbers
import os
import sysconfig
import traceback
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


def raised_at(exc: BaseException) -> str | None:
    """``FILE line N`` where ``exc`` was raised in the user's own code: the innermost frame of
    its traceback outside grapeshot, the standard library and installed packages (else
    outside grapeshot alone); ``None`` when every frame is grapeshot's."""
    ours = str(Path(__file__).resolve().parents[1])
    paths = sysconfig.get_paths()
    theirs = tuple({str(Path(paths[k]).resolve()) for k in ("stdlib", "purelib", "platlib")})
    frames = [
        f for f in traceback.extract_tb(exc.__traceback__)
        if not str(Path(f.filename).resolve()).startswith(ours)
    ]  # fmt: skip
    if not frames:
        return None
    users = [f for f in frames if not str(Path(f.filename).resolve()).startswith(theirs)]
    frame = (users or frames)[-1]
    return f"{Path(frame.filename).name} line {frame.lineno}"


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


def check_int(
    value: int,
    where: str,
    *,
    minimum: int = 1,
    maximum: int | None = None,
    expected: str | None = None,
) -> int:
    """Return ``value`` as an int if it is an integer in ``[minimum, maximum]``, else raise.

    The one check of an integer input: Python and numpy integers pass, ``bool`` and floats
    (even whole ones) do not.

    Parameters
    ----------
    value
        What was given.
    where
        What holds it, for the message (``"--nodes"``).
    minimum, maximum
        Bounds, both included; no upper bound when ``maximum`` is None.
    expected
        What the message says would have been accepted; default ``"an integer >= minimum"``
        or ``"an integer in [minimum, maximum]"``.

    Raises
    ------
    InputError
        ``"<where>: got <value>; expected <expected>"``.
    """
    if expected is None:
        expected = (
            f"an integer >= {minimum}"
            if maximum is None
            else f"an integer in [{minimum}, {maximum}]"
        )
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InputError(where, f"got {value!r}", expected)
    if value < minimum or (maximum is not None and value > maximum):
        raise InputError(where, f"got {value}", expected)
    return int(value)


def check_number(
    value: float,
    where: str,
    *,
    low: float = -math.inf,
    high: float = math.inf,
    low_open: bool = False,
    high_open: bool = False,
    expected: str | None = None,
) -> float:
    """Return ``value`` as a float if it is a real number in the interval, else raise.

    The one check of a real-valued input (a fraction, a threshold, a duration): anything
    ``float()`` takes except ``bool`` and text; NaN is never inside an interval.

    Parameters
    ----------
    value, where
        What was given and what holds it, as for :func:`check_int`.
    low, high
        The interval's ends (infinite by default: any finite number or infinity).
    low_open, high_open
        Whether ``low`` / ``high`` themselves are refused.
    expected
        What the message says would have been accepted; default ``"a number in [low, high]"``
        with ``(`` / ``)`` for an open end.

    Raises
    ------
    InputError
        ``"<where>: got <value>; expected <expected>"``.
    """
    if expected is None:
        lo = "(" if low_open else "["
        hi = ")" if high_open else "]"
        expected = f"a number in {lo}{low}, {high}{hi}"
    if isinstance(value, bool | str | bytes):
        raise InputError(where, f"got {value!r}", expected)
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise InputError(where, f"got {value!r}", expected) from None
    above = x > low if low_open else x >= low
    below = x < high if high_open else x <= high
    if not (above and below):
        raise InputError(where, f"got {value!r}", expected)
    return x


def check_probability(value: float, where: str, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a float in (0, 1] (or [0, 1] with ``allow_zero``), else raise."""
    return check_number(value, where, low=0, high=1, low_open=not allow_zero)


def check_positive_number(value: float, where: str) -> float:
    """Return ``value`` as a float if it is a finite number ``> 0``, else raise InputError."""
    return check_number(
        value, where, low=0, low_open=True, high_open=True, expected="a positive finite number"
    )
