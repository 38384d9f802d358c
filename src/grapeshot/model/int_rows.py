"""Rows of plain integers read straight from a file's bytes, and written to them, at C speed.

A placement of 10^8 partitions written by a C or Fortran code is 10^8 lines of digits; read
as Python strings it takes a minute or more (:mod:`grapeshot.model.csv_table`'s general
reader). This scanner reads the common shape of such files — every line ``width`` fields of
``-?[0-9]{1,18}`` separated by commas, ended by ``\\n`` or ``\\r\\n`` — in one compiled pass,
and gives up (``rows = -1``) on any other byte, so the general reader, which knows every
refusal, reads the file instead. It never refuses anything itself: for a file it accepts,
the values and lines are the ones the general reader gives (checked by
``tests/model/test_csv_table.py``).

The same files are written by :func:`format_int_rows`: the bytes Python's ``str`` of each
value would give (checked by ``tests/model/test_int_rows.py``), without a string per value
(``str`` and a join took 3 s per 10^7 values of a ``.part`` file, 8 s of a ``.csv``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from grapeshot.model.text_bytes import COMMA, CR, MAX_DIGITS, MINUS, NINE, NL, ZERO


@njit(cache=True, nogil=True)
def scan_int_rows(
    buf: np.ndarray, start: int, width: int, first_line: int, blank_lines: bool
) -> tuple[np.ndarray, np.ndarray, int]:
    """The integer rows of ``buf[start:]``.

    Parameters
    ----------
    buf
        uint8, the file's bytes.
    start
        Where the rows begin (after a header or a byte-order mark).
    width
        Fields a row.
    first_line
        The 1-based line number of the line at ``start``.
    blank_lines
        Whether an empty line may stand between rows (skipped); otherwise one gives up.
        Empty lines at the end are never rows.

    Returns
    -------
    values, lines, rows
        int64 ``(width, capacity)``: the first ``rows`` columns are the values (a column a
        row, so that each field is contiguous); ``rows = -1`` where the text is not plain
        rows. ``lines``: int64 ``(capacity,)``, the line of each row, where an empty line
        came between rows; else empty, row ``r`` being on line ``first_line + r`` (not
        written: 8 bytes a row, a quarter of a ``.part`` file's reading).
    """
    end = len(buf)
    while end > start and (buf[end - 1] == NL or buf[end - 1] == CR):
        end -= 1
    capacity = 1
    for i in range(start, end):
        if buf[i] == NL:
            capacity += 1
    # Allocated here rather than by numpy, whose large arrays ask for huge pages: on a
    # machine short of free huge pages that made first touching 3.2 GB (10^8 rows of a
    # placement CSV) take 4.3-8.7 s, against 2.2-2.5 s for these.
    values = np.empty((width, capacity), dtype=np.int64)
    lines = np.empty(0, dtype=np.int64)
    rows, line, i = 0, first_line, start
    while i < end:
        field = 0
        while True:  # the fields of a row; i < end here
            c = np.int64(buf[i])
            negative = False
            # A digit is by far the most common first byte: tested first, the other cases
            # took half the scan's time (10^7 lines: 0.24 s against 0.42 s).
            if c < ZERO or c > NINE:
                if c == MINUS:
                    negative = True
                    i += 1
                elif field == 0 and (c == NL or c == CR):  # an empty line
                    if not blank_lines:
                        return values, lines, -1
                    if lines.size == 0:  # the first: from here on each row's line is written
                        lines = np.empty(capacity, dtype=np.int64)
                        for r in range(rows):
                            lines[r] = first_line + r
                    break
            first = i
            value = 0
            while i < end:
                d = np.int64(buf[i]) - ZERO
                if d < 0 or d > 9:
                    break
                value = value * 10 + d
                i += 1
            digits = i - first
            if digits == 0 or digits > MAX_DIGITS:
                return values, lines, -1
            values[field, rows] = -value if negative else value
            field += 1
            if field == width:
                if lines.size:
                    lines[rows] = line
                rows += 1
                break
            if i >= end or buf[i] != COMMA:
                return values, lines, -1
            i += 1
            if i == end:  # a comma last: an empty field
                return values, lines, -1
        if i == end:
            break
        # the line's end: \n or \r\n (a lone \r is a line end too for others: give up)
        if buf[i] == CR:
            i += 1
            if i >= end or buf[i] != NL:
                return values, lines, -1
        elif buf[i] != NL:
            return values, lines, -1
        i += 1
        line += 1
    return values, lines, rows


#: Most bytes of one int64 written in decimal: a sign and 19 digits.
_INT_BYTES = 20


@njit(cache=True, nogil=True)
def format_int_rows(values: np.ndarray, sep: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The text of rows of integers, as bytes.

    Parameters
    ----------
    values
        int64 ``(width, rows)``: a row of the text is a column of this (each field
        contiguous, as :func:`scan_int_rows` gives them).
    sep
        uint8, the bytes between two fields of a row (``,``).
    end
        uint8, the bytes after each row (``\\n``; ``, `` for the items of a JSON list).

    Returns
    -------
    uint8 ``(n,)``: each value in decimal as Python's ``str`` writes it (``-`` then the
    digits, no leading zero), fields joined by ``sep``, every row followed by ``end``.
    """
    width, rows = values.shape
    size = rows * (width * _INT_BYTES + max(width - 1, 0) * len(sep) + len(end))
    out = np.empty(size, dtype=np.uint8)
    digits = np.empty(_INT_BYTES, dtype=np.uint8)
    n = 0
    for r in range(rows):
        for f in range(width):
            if f > 0:
                for b in sep:
                    out[n] = b
                    n += 1
            v = values[f, r]
            if v < 0:
                out[n] = MINUS
                n += 1
            # The magnitude as unsigned, so that -2**63 has one too.
            m = np.uint64(-(v + 1)) + np.uint64(1) if v < 0 else np.uint64(v)
            k = 0
            while True:
                digits[k] = ZERO + np.uint8(m % np.uint64(10))
                m //= np.uint64(10)
                k += 1
                if m == 0:
                    break
            while k > 0:
                k -= 1
                out[n] = digits[k]
                n += 1
        for b in end:
            out[n] = b
            n += 1
    return out[:n]
