"""Rows of plain integers read straight from a file's bytes, at C speed.

A placement of 10^8 partitions written by a C or Fortran code is 10^8 lines of digits; read
as Python strings it takes a minute or more (:mod:`grapeshot.model.csv_table`'s general
reader). This scanner reads the common shape of such files — every line ``width`` fields of
``-?[0-9]{1,18}`` separated by commas, ended by ``\\n`` or ``\\r\\n`` — in one compiled pass,
and gives up (``rows = -1``) on any other byte, so the general reader, which knows every
refusal, reads the file instead. It never refuses anything itself: for a file it accepts,
the values and lines are the ones the general reader gives (checked by
``tests/model/test_csv_table.py``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from grapeshot.model.csv_table import MAX_DIGITS

_NL, _CR, _COMMA, _MINUS, _ZERO, _NINE = 10, 13, 44, 45, 48, 57


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
        int64 ``(width, capacity)`` and ``(capacity,)``: the first ``rows`` of each are the
        values (a column a row, so that each column is contiguous) and the line of each;
        ``rows = -1`` where the text is not plain rows.
    """
    end = len(buf)
    while end > start and (buf[end - 1] == _NL or buf[end - 1] == _CR):
        end -= 1
    capacity = 1
    for i in range(start, end):
        if buf[i] == _NL:
            capacity += 1
    # Allocated here rather than by numpy, whose large arrays ask for huge pages: on a
    # machine short of free huge pages that made first touching 3.2 GB (10^8 rows of a
    # placement CSV) take 4.3-8.7 s, against 2.2-2.5 s for these.
    values = np.empty((width, capacity), dtype=np.int64)
    lines = np.empty(capacity, dtype=np.int64)
    rows, line, i = 0, first_line, start
    while i < end:
        c = buf[i]
        if c == _NL or c == _CR:  # an empty line
            if not blank_lines:
                return values, lines, -1
        else:
            for field in range(width):
                negative = i < end and buf[i] == _MINUS
                if negative:
                    i += 1
                value, digits = 0, 0
                while i < end and _ZERO <= buf[i] <= _NINE:
                    value = value * 10 + (buf[i] - _ZERO)
                    digits += 1
                    i += 1
                if digits == 0 or digits > MAX_DIGITS:
                    return values, lines, -1
                values[field, rows] = -value if negative else value
                if field < width - 1:
                    if i >= end or buf[i] != _COMMA:
                        return values, lines, -1
                    i += 1
            lines[rows] = line
            rows += 1
            if i == end:
                break
        # the line's end: \n or \r\n (a lone \r is a line end too for others: give up)
        if buf[i] == _CR:
            i += 1
            if i >= end or buf[i] != _NL:
                return values, lines, -1
        elif buf[i] != _NL:
            return values, lines, -1
        i += 1
        line += 1
    return values, lines, rows
