"""The user's own text files, read with the line of every value: headed CSV and one-a-line.

Files other programs write (a placement a C code reads back, the timings a user measured
with their own clock) come through here, so every refusal has one shape, naming the file,
the line and the column and what was expected::

    costs.csv: line 17, column 'seconds': got 'abc'; expected a number >= 0

Rows are split by the :mod:`csv` module (quoting, ``\\r\\n``) and turned into numpy arrays a
chunk of :data:`CHUNK_ROWS` rows at a time, so a file of millions of rows never holds
millions of Python strings at once. Integers are ASCII digits with an optional ``-`` (what
``strtol`` and Fortran's ``read`` accept alike); numbers are what Python's ``float`` reads.
A UTF-8 byte-order mark (spreadsheets write one) is skipped.

A large file of nothing but integers (a placement of 10^8 partitions) is first offered to a
compiled scanner of its bytes (:mod:`grapeshot.model.int_rows`), which reads it as this
reader would, or gives it back to this reader.
"""

from __future__ import annotations

import codecs
import csv
import io
import itertools
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from grapeshot.model.errors import InputError
from grapeshot.model.memory import TEXT_READ_BYTES_PER_BYTE, check_memory
from grapeshot.model.text_bytes import MAX_DIGITS

#: Rows converted to numpy at a time.
CHUNK_ROWS = 1 << 16
#: Characters of a file's text split into lines at a time (:func:`_lines`).
WINDOW_CHARS = 1 << 22
#: Longest field accepted as a number: longer ones are refused before numpy sizes an array
#: of strings by its longest member.
MAX_FIELD = 64
#: Files of this size and more, of plain integer rows, are read by the compiled scanner.
PLAIN_MIN_BYTES = 1 << 20
#: A line's end, in the text and in the bytes of a file: ``\n``, ``\r\n`` or a lone ``\r``
#: (what both readers take for one).
_EOL = re.compile(r"\r\n?|\n")
_EOL_BYTES = re.compile(rb"\r\n?|\n")


@dataclass(frozen=True)
class Column:
    """One column of a headed CSV file, or the one value of each line of a one-a-line file.

    Parameters
    ----------
    name
        The column's name in the header (matched without case and surrounding blanks).
    integer
        ``True``: integers (ASCII digits, optional ``-``); ``False``: finite numbers.
    expected
        What a value must be, for messages: ``"a number >= 0"``.
    minimum
        Smallest value accepted.
    maximum
        Largest value accepted, or ``None``.
    required
        Whether the header must name it.
    """

    name: str
    integer: bool
    expected: str
    minimum: float = 0
    maximum: float | None = None
    required: bool = True


@dataclass(frozen=True)
class ConsecutiveLines:
    """The lines of rows with nothing between them, row ``r`` on line ``first + r``: what
    ``np.arange(first, first + n)`` holds, without its 8 bytes a row (800 MB for a placement
    file of 10^8 partitions, read for the messages of a file that is seldom wrong).

    Indexed by a row or an int array of rows in ``[0, n)``.
    """

    first: int
    n: int

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, rows: int | np.ndarray) -> np.int64 | np.ndarray:
        at = np.asarray(rows)
        if at.dtype.kind not in "iu":
            raise TypeError(f"rows must be integers, not {at.dtype}")
        if at.size and (at.min() < 0 or at.max() >= self.n):
            raise IndexError(f"rows must be in [0, {self.n})")
        return self.first + at.astype(np.int64)


@dataclass(frozen=True, eq=False)
class Table:
    """The rows of a file, one array per column, and the line each row was read from.

    Attributes
    ----------
    where
        The file, as named to the reader.
    columns
        ``{name: values}``: int64 for integer columns, float64 for the others; only the
        columns the header named.
    lines
        int64, 1-based line of each row (where its last field ended), or the same as
        :class:`ConsecutiveLines` where no line came between rows.
    """

    where: str
    columns: dict[str, np.ndarray]
    lines: np.ndarray | ConsecutiveLines

    def __len__(self) -> int:
        return len(self.lines)

    def at(self, row: int, column: str | None = None) -> str:
        """The ``where`` of a message about ``row``: ``"file: line 7, column 'node'"``."""
        text = f"{self.where}: line {int(self.lines[row])}"
        return text if column is None else f"{text}, column '{column}'"


def read_utf8(
    path: str | os.PathLike[str], expected: str, per_byte: int = TEXT_READ_BYTES_PER_BYTE
) -> str:
    """The text of ``path``; one :class:`InputError` naming it if unreadable or not UTF-8.

    A byte-order mark is dropped; a byte that is not UTF-8, or a NUL, is named by its line.
    A file whose reading would take more memory than the machine has (``per_byte`` bytes for
    each of its bytes, :mod:`grapeshot.model.memory`) is refused with that estimate first.
    """
    return decode_utf8(read_bytes(path, expected, per_byte), str(path), expected)


def read_bytes(path: str | os.PathLike[str], expected: str, per_byte: int) -> bytes:
    """The bytes of ``path``, after weighing what reading them will take (:func:`read_utf8`)."""
    where = str(path)
    try:
        size = os.stat(path).st_size
    except OSError as exc:
        raise InputError(where, f"cannot read ({exc.strerror or exc})", expected) from None
    check_memory(per_byte * size, where, f"to read its {size:,} bytes", expected)
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise InputError(where, f"cannot read ({exc.strerror or exc})", expected) from None


def decode_utf8(data: bytes, where: str, expected: str) -> str:
    """``data`` as text (:func:`read_utf8`)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"{where}: line {line}", f"is not UTF-8 text (byte {exc.start})", expected
        ) from None
    # No text file holds a NUL, and numpy's strings would drop or ignore it.
    nul = text.find("\x00")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        raise InputError(f"{where}: line {line}", "holds a NUL character (binary data?)", expected)
    return text


def _text_start(data: bytes) -> int:
    """Where the text of ``data`` starts: after a UTF-8 byte-order mark, if any."""
    return len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0


def _after_lines(text: str | bytes, start: int, lines: int) -> int:
    """Where the text (or bytes) ``text`` goes on after the ``lines`` lines from ``start``
    (each ended by ``\n``, ``\r\n`` or ``\r``; the end of ``text`` if it has fewer)."""
    for _ in range(lines):
        end = _EOL.search(text, start) if isinstance(text, str) else _EOL_BYTES.search(text, start)
        if end is None:
            return len(text)
        start = end.end()
    return start


def _nothing_after(where: str, start_line: int, what: str) -> InputError:
    """The refusal of a file with nothing (but blank lines) after the lines its caller read
    (a header: ``start_line > 1``), or of an empty file."""
    if start_line > 1:
        return InputError(f"{where}: line {start_line - 1}", "has nothing after it", what)
    return InputError(where, "is empty", what)


def _plain_rows(
    data: bytes, columns: Sequence[Column], start: int, first_line: int, blank: bool
) -> tuple[np.ndarray, np.ndarray | None] | None:
    """``(values (len(columns), rows), lines)`` of plain integer rows from byte ``start`` of
    a file (blank lines between them skipped if ``blank``), read by the compiled scanner
    (:mod:`grapeshot.model.int_rows`), every value within its column's bounds; None for a
    file it does not take (small, or anything unusual: the general reader then reads it and
    gives every refusal). ``lines`` is None where row ``r`` is on line ``first_line + r``."""
    if len(data) < PLAIN_MIN_BYTES or not all(c.integer for c in columns):
        return None
    from grapeshot.model.int_rows import scan_int_rows  # numba: only for files this large

    buf = np.frombuffer(data, dtype=np.uint8)
    values, lines, rows = scan_int_rows(buf, start, len(columns), first_line, blank)
    if rows <= 0:
        return None
    values, lines = values[:, :rows], (lines[:rows] if lines.size else None)
    for column, row in zip(columns, values, strict=True):
        high = column.maximum
        if row.min() < column.minimum or (high is not None and row.max() > high):
            return None
    return values, lines


def _plain_table(
    data: bytes, columns: Sequence[Column], where: str, start_line: int = 1
) -> Table | None:
    """:func:`read_table` of a file of plain integer rows under a plain header on line
    ``start_line``, by the compiled scanner (:func:`_plain_rows`); None for any other file."""
    if len(data) < PLAIN_MIN_BYTES:
        return None
    start = _after_lines(data, _text_start(data), start_line - 1)
    stop = data.find(b"\n", start)
    head = data[start:stop].removesuffix(b"\r")
    if stop < 0 or not head.isascii() or any(c in head for c in b'"\r\x00'):
        return None
    row = head.decode("ascii").split(",")
    try:
        order = [] if _blank(row) else _header(row, start_line, columns, where)
    except InputError:
        return None
    plain = _plain_rows(data, order, stop + 1, start_line + 1, blank=True) if order else None
    if plain is None:
        return None
    values, lines = plain
    columns_read = {c.name: row for c, row in zip(order, values, strict=True)}
    return Table(
        where=where,
        columns=columns_read,
        lines=ConsecutiveLines(start_line + 1, values.shape[1]) if lines is None else lines,
    )


def _lines(text: str, newline: str | None) -> Iterator[str]:
    """The lines of ``text`` as ``io.StringIO(text, newline=newline)`` gives them, a window of
    about :data:`WINDOW_CHARS` characters at a time.

    A ``StringIO`` of the whole text keeps a copy of it at four bytes a character while it is
    read: 7 GB more for a placement CSV of 10^8 rows. Windows end just after a ``\n``,
    which ends a line under every ``newline`` (a ``\r\n`` is never cut), so the lines are
    the same.
    """
    start, n = 0, len(text)
    while start < n:
        stop = text.rfind("\n", start, start + WINDOW_CHARS) + 1
        if stop <= start:  # no newline in the window: a line longer than it
            stop = text.find("\n", start + WINDOW_CHARS) + 1 or n
        yield from io.StringIO(text[start:stop], newline=newline)
        start = stop


def _shown(text: str) -> str:
    """A field as a message shows it: quoted, and cut when long."""
    return repr(text if len(text) <= 24 else text[:24] + "…")


def _parse_ints(text: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(values, ok)`` of stripped strings: ``ok`` where a string is ``-?[0-9]{1,18}``."""
    body = np.char.lstrip(text, "-")
    length = np.char.str_len(body)
    signs = np.char.str_len(text) - length
    ok = (signs <= 1) & (length > 0) & (length <= MAX_DIGITS)
    # Stripping every ASCII digit from both ends leaves nothing only for an all-digit string
    # (numpy's own cast would also take '+5', '1_0' and non-ASCII digits, which C would not).
    ok &= np.char.strip(body, "0123456789") == ""
    values = np.zeros(len(text), dtype=np.int64)
    values[ok] = body[ok].astype(np.int64)
    values[ok & (signs == 1)] *= -1
    return values, ok


def _canonical_ints(fields: Sequence[str]) -> np.ndarray | None:
    """The integers of ``fields`` if each is exactly how Python writes its value (``-3``,
    ``0``, ``12``: no sign but a leading ``-``, no leading zero or blank, ASCII digits), read
    at C speed; None otherwise, for the general parser. Such a field is ``-?[0-9]+``."""
    try:
        ints = list(map(int, fields))
    except ValueError:
        return None
    if list(map(str, ints)) != list(fields):
        return None
    return np.array(ints, dtype=np.int64)


def convert(
    fields: Sequence[str], lines: np.ndarray, column: Column, where: str, named: bool
) -> np.ndarray:
    """One column's strings → int64 or float64, every value checked against ``column``.

    Parameters
    ----------
    fields
        The raw fields, one per row.
    lines
        int64, the line of each row.
    column
        What the values must be.
    where
        The file, for messages.
    named
        Whether messages name the column (a one-a-line file has none).

    Raises
    ------
    InputError
        ``"<where>: line <n>[, column '<name>']: got '<text>'; expected <column.expected>"``
        for the first bad value.
    """

    def refuse(i: int) -> InputError:
        label = f"{where}: line {int(lines[i])}"
        if named:
            label += f", column '{column.name}'"
        text = fields[i].strip()
        return InputError(label, f"got {_shown(text)}" if text else "is blank", column.expected)

    n = len(fields)
    width = np.fromiter(map(len, fields), dtype=np.int64, count=n)
    if n and width.max() > MAX_FIELD:
        raise refuse(int(np.argmax(width > MAX_FIELD)))
    if column.integer:
        joined = "".join(fields)
        short = not n or (width.min() >= 1 and width.max() <= MAX_DIGITS)
        plain = short and joined.isascii()
        if plain and (joined.isdigit() or not joined):
            # The common file: bare digits and nothing else, read at C speed.
            values = np.fromiter(map(int, fields), dtype=np.int64, count=n)
        elif plain and (values := _canonical_ints(fields)) is not None:
            pass
        else:
            values, ok = _parse_ints(np.char.strip(np.asarray(fields, dtype=str)))
            if not ok.all():
                raise refuse(int(np.argmin(ok)))
    else:
        try:
            values = np.fromiter(map(float, fields), dtype=np.float64, count=n)
        except ValueError:
            raise refuse(next(i for i, f in enumerate(fields) if not _is_number(f))) from None
        finite = np.isfinite(values)
        if not finite.all():
            raise refuse(int(np.argmin(finite)))
    bad = values < column.minimum
    if column.maximum is not None:
        bad |= values > column.maximum
    if bad.any():
        raise refuse(int(np.argmax(bad)))
    return values


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _blank(row: Sequence[str]) -> bool:
    return all(not field.strip() for field in row)


def _header(row: list[str], line: int, columns: Sequence[Column], where: str) -> list[Column]:
    """The column each field of the header row names; refuses unknown, repeated, missing."""
    known = {c.name: c for c in columns}
    spec = ",".join(c.name for c in columns if c.required)
    optional = [c.name for c in columns if not c.required]
    expected = f"a first line naming the columns {spec}" + (
        f" (and optionally {', '.join(optional)})" if optional else ""
    )
    names = [field.strip().lower() for field in row]
    label = f"{where}: line {line}"
    if all(_is_number(name) for name in names):
        raise InputError(label, f"is no header (it reads {_shown(','.join(row))})", expected)
    order: list[Column] = []
    for name in names:
        if name not in known:
            problem = f"names the column {_shown(name)}" if name else "has an unnamed column"
            raise InputError(label, problem, expected)
        if known[name] in order:
            raise InputError(label, f"names the column {name!r} twice", expected)
        order.append(known[name])
    for c in columns:
        if c.required and c not in order:
            raise InputError(label, f"has no column {c.name!r}", expected)
    return order


def read_table(
    path: str | os.PathLike[str], columns: Sequence[Column], what: str, *, start_line: int = 1
) -> Table:
    """Read a headed CSV file: a header naming ``columns`` (any order), then rows.

    Blank lines are skipped anywhere (a row is keyed by its values, not its position).

    Parameters
    ----------
    path
        The file.
    columns
        The columns it may have; the header must name every required one.
    what
        What the file is, for messages: ``"a cost CSV file (step,partition,seconds)"``.
    start_line
        The 1-based line the CSV starts on: the lines before it (a comment header the
        caller has read) are skipped, and every message counts them.

    Raises
    ------
    InputError
        Naming the file, the line and (for a value) the column.
    """
    where = str(path)
    data = read_bytes(path, what, TEXT_READ_BYTES_PER_BYTE)
    if (table := _plain_table(data, columns, where, start_line)) is not None:
        return table
    # The whole text is decoded, so that a bad byte anywhere is named by its line.
    text = decode_utf8(data, where, what)
    del data
    text = text[_after_lines(text, 0, start_line - 1) :]
    skipped = start_line - 1  # lines before the text the csv reader counts
    # strict: a quote left open or text after a closing quote is an error, not a value.
    reader = csv.reader(_lines(text, ""), strict=True)
    order: list[Column] | None = None
    rows: list[list[str]] = []
    lines: list[int] = []
    parts: dict[str, list[np.ndarray]] = {c.name: [] for c in columns}
    line_parts: list[np.ndarray] = []

    def flush() -> None:
        at = np.asarray(lines, dtype=np.int64)
        fields = list(zip(*rows, strict=True)) or [()] * len(order or ())
        for column, values in zip(order or (), fields, strict=True):
            parts[column.name].append(convert(values, at, column, where, named=True))
        line_parts.append(at)
        rows.clear()
        lines.clear()

    def take(row: list[str], line: int) -> None:
        if len(row) != width:
            if _blank(row):  # a blank line: csv gives [] or a field of blanks
                return
            raise InputError(
                f"{where}: line {line}",
                f"has {len(row)} field{'s' if len(row) != 1 else ''}",
                f"{width}, one per column of the header",
            )
        rows.append(row)
        lines.append(line)
        if len(rows) == CHUNK_ROWS:
            flush()

    try:
        width = 0
        for row in reader:
            if not _blank(row):
                order = _header(row, skipped + reader.line_num, columns, where)
                width = len(order)
                break
        if '"' in text:  # a quoted field may span lines: row by row, with csv's line count
            for row in reader:
                take(row, skipped + reader.line_num)
        else:
            # Unquoted, a row is a line: rows a chunk at a time, and a chunk whose rows all
            # have the header's width (the common file) taken whole.
            while batch := list(itertools.islice(reader, CHUNK_ROWS)):
                first = skipped + reader.line_num - len(batch) + 1
                if set(map(len, batch)) == {width}:
                    rows.extend(batch)
                    lines.extend(range(first, first + len(batch)))
                    flush()
                else:
                    for i, row in enumerate(batch):
                        take(row, first + i)
    except csv.Error as exc:
        line = skipped + reader.line_num
        raise InputError(f"{where}: line {line}", f"is not CSV ({exc})", what) from None
    if order is None:
        raise _nothing_after(where, start_line, what)
    flush()
    kinds = {c.name: (np.int64 if c.integer else np.float64) for c in order}
    return Table(
        where=where,
        columns={name: np.concatenate(parts[name]).astype(kind) for name, kind in kinds.items()},
        lines=np.concatenate(line_parts),
    )


def read_lines(
    path: str | os.PathLike[str], column: Column, what: str, *, start_line: int = 1
) -> np.ndarray:
    """Read a file of one value a line, line ``i + start_line`` holding value ``i``.

    A line's position is its meaning, so a blank line inside the file is refused; blank
    lines at the end (an editor's last newline) are not lines of the file. The lines before
    ``start_line`` (a header the caller has read) are skipped, and messages count them.

    Returns
    -------
    numpy.ndarray
        int64 or float64 (``column.integer``), one value per line; at least one.

    Raises
    ------
    InputError
        Naming the file and the line.
    """
    where = str(path)
    data = read_bytes(path, what, TEXT_READ_BYTES_PER_BYTE)
    start = _after_lines(data, _text_start(data), start_line - 1)
    if (plain := _plain_rows(data, [column], start, start_line, blank=False)) is not None:
        return plain[0][0]
    text = decode_utf8(data, where, what)
    del data
    text = text[_after_lines(text, 0, start_line - 1) :].rstrip()
    if not text:
        raise _nothing_after(where, start_line, what)
    chunks: list[np.ndarray] = []
    start = start_line
    lines: Iterable[str] = _lines(text, None)  # \n, \r\n and \r alike
    while batch := list(itertools.islice(lines, CHUNK_ROWS)):
        # Without their newlines, bare digits take convert's C-speed path (with them, every
        # line went through the general parser: this path reads a 10^8-line .part in 54-59 s,
        # against 91 s).
        batch = [line.removesuffix("\n") for line in batch]
        at = np.arange(start, start + len(batch), dtype=np.int64)
        chunks.append(convert(batch, at, column, where, named=False))
        start += len(batch)
    return np.concatenate(chunks)
