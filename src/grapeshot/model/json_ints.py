"""Large JSON lists of plain integers read straight from a document's bytes, at C speed.

A placement JSON of 10^8 partitions is two lists of 10^8 integers; :func:`json.loads` makes a
Python int of each (about a minute and 9 GiB measured). :func:`loads_with_int_lists` reads
each list that is the value of a named key and holds nothing but JSON integers with a
compiled scanner (:func:`scan_json_ints`), as an int64 array, and gives the rest of the
document, now small, to :func:`json.loads`.

It never refuses anything itself: on any doubt it returns None and the caller reads the file
with :func:`json.loads`, which gives every refusal with its line. For a document it accepts,
the result is :func:`json.loads`'s, with those lists as arrays (checked by
``tests/model/test_json_ints.py``). Why that holds: a list is taken only where its key's
quoted name, a colon and ``[`` follow each other (blanks between), which in valid JSON is
always a key and its value, never text inside a string; the list is replaced by a marker
string, a valid value in its place, so the document stays valid or invalid as it was; and a
document holding the marker's text or any ``\\u`` escape (which could spell it) is not taken.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import njit

from grapeshot.model.text_bytes import COMMA, CR, MAX_DIGITS, MINUS, NINE, NL, SPACE, TAB, ZERO

#: The text that stands for a list taken out (then its number and ``@``).
_MARK = "@grapeshot-ints-"
#: What follows a key's quoted name for its value to be a list: a colon, then ``[``.
_COLON_LIST = re.compile(rb"[ \t\n\r]*:[ \t\n\r]*\[")


@njit(cache=True, inline="always")
def _blanks(buf: np.ndarray, i: int, end: int) -> int:
    """The first index from ``i`` that is not JSON whitespace."""
    while i < end and (buf[i] == SPACE or buf[i] == NL or buf[i] == CR or buf[i] == TAB):
        i += 1
    return i


@njit(cache=True, nogil=True)
def scan_json_ints(buf: np.ndarray, start: int, close: int, items: int) -> tuple[np.ndarray, int]:
    """The JSON list of integers ``buf[start:close + 1]``.

    Parameters
    ----------
    buf
        uint8, the document's bytes.
    start, close
        Index of the list's ``[`` and of the first ``]`` after it.
    items
        Its commas + 1 (at most that many items).

    Returns
    -------
    values, stop
        int64 ``(n,)``, the list's items, and the index just past its ``]``; ``stop = -1``
        where the list is anything but JSON integers (``-?(0|[1-9][0-9]*)``, at most 18
        digits) between commas and blanks.
    """
    values = np.empty(items, dtype=np.int64)
    i = _blanks(buf, start + 1, close)
    if i == close:  # []
        return values[:0], close + 1
    n = 0
    while True:
        negative = buf[i] == MINUS
        if negative:
            i += 1
        first = i
        value = 0
        while i < close and ZERO <= buf[i] <= NINE:
            value = value * 10 + (buf[i] - ZERO)
            i += 1
        digits = i - first
        if digits == 0 or digits > MAX_DIGITS or (digits > 1 and buf[first] == ZERO):
            return values, -1
        values[n] = -value if negative else value
        n += 1
        i = _blanks(buf, i, close)
        if i == close:
            break
        if buf[i] != COMMA:
            return values, -1
        i = _blanks(buf, i + 1, close)  # a ] next is no item: the loop gives up
    return values[:n], close + 1


def _key_lists(data: bytes, buf: np.ndarray, key: str) -> list[tuple[int, int, np.ndarray]]:
    """``(start, stop, values)`` of every plain integer list that follows ``"key":``."""
    name = json.dumps(key).encode("utf-8")
    found = []
    at = data.find(name)
    while at >= 0:
        colon = _COLON_LIST.match(data, at + len(name))
        if colon is not None:
            start = colon.end() - 1
            # The list's bounds by bytes' own searches, which run at memory speed.
            close = data.find(b"]", start)
            items = data.count(b",", start, close) + 1
            values, stop = scan_json_ints(buf, start, close, items) if close > 0 else (None, -1)
            if stop > 0:
                found.append((start, int(stop), values))
        at = data.find(name, at + len(name))
    return found


def _restore(obj: Any, lists: dict[str, np.ndarray]) -> Any:
    """``obj`` with every marker left below the top level back as a list."""
    if isinstance(obj, str) and obj in lists:
        return lists[obj].tolist()
    if isinstance(obj, dict):
        return {k: _restore(v, lists) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_restore(v, lists) for v in obj]
    return obj


def loads_with_int_lists(data: bytes, keys: Sequence[str]) -> Any | None:
    """:func:`json.loads` of ``data`` (UTF-8, an optional byte-order mark), where the value of
    each top-level key of ``keys`` that is a list of plain JSON integers is an int64 array.

    None where the document is not read so (invalid, not UTF-8, holding a ``\\u`` escape or
    the marker, or no such list): the caller reads it with :func:`json.loads`,
    whose messages name the line.
    """
    if _MARK.encode("ascii") in data or b"\\u" in data:
        return None
    buf = np.frombuffer(data, dtype=np.uint8)
    spans = sorted((s for key in keys for s in _key_lists(data, buf, key)), key=lambda s: s[0])
    if not spans:
        return None
    pieces, lists, done = [], {}, 0
    for k, (start, stop, values) in enumerate(spans):
        mark = f"{_MARK}{k}@"
        pieces += [data[done:start], json.dumps(mark).encode("ascii")]
        lists[mark] = values
        done = stop
    pieces.append(data[done:])
    try:
        # json.loads refuses a NUL too, in a string or out of one.
        doc = json.loads(b"".join(pieces).decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None
    if not isinstance(doc, dict):
        return _restore(doc, lists)
    return {
        k: lists[v] if k in keys and isinstance(v, str) and v in lists else _restore(v, lists)
        for k, v in doc.items()
    }
