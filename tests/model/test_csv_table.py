"""The shared reader of users' text files: its quick paths read what its general ones read.

Unquoted CSV is taken a chunk of rows at a time, and a file's text is split into lines a
window at a time; a quoted field sends the file row by row through the csv module's own line
count, and one window per file is ``io.StringIO`` of the whole text. Each pair must give the
same table, or the same refusal.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grapeshot.model import csv_table
from grapeshot.model.csv_table import Column, read_lines, read_table
from grapeshot.model.errors import InputError
from tests.fuzz import fuzz

COLUMNS = (
    Column("a", True, "an integer >= -5", -5, None),
    Column("b", False, "a number >= 0", 0.0, None),
)
FIELDS = st.sampled_from(["0", "7", "-3", "-9", "12", "007", " 4", "1.5", "", "  ", "x", "-"])


def _outcome(path: Path, text: str):
    path.write_text(text)
    try:
        table = read_table(path, COLUMNS, "a test CSV file")
    except InputError as exc:
        return str(exc)
    return {k: v.tolist() for k, v in table.columns.items()}, _line_list(table)


def _line_list(table) -> list[int]:
    """Every row's line, whether the table holds them as an array or as ConsecutiveLines."""
    return table.lines[np.arange(len(table))].tolist()


@fuzz(0.5)
@given(
    st.lists(st.lists(FIELDS, min_size=0, max_size=3), max_size=12),
    st.sampled_from(["\n", "\r\n"]),
    st.integers(1, 4),
)
def test_unquoted_chunks_read_as_row_by_row(tmp_path_factory, rows, eol, chunk) -> None:
    """A file read in chunks of rows (unquoted) and row by row (one field quoted, which csv
    reads as the same string): the same columns, lines and refusals."""
    path = tmp_path_factory.mktemp("csv") / "t.csv"
    body = [",".join(row) for row in rows]
    plain = eol.join(["a,b", *body]) + eol
    at = next((i for i, row in enumerate(rows) if row), None)
    if at is None:
        return
    quoted = list(rows[at])
    quoted[0] = f'"{quoted[0]}"'
    body[at] = ",".join(quoted)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(csv_table, "CHUNK_ROWS", chunk)
        assert _outcome(path, plain) == _outcome(path, eol.join(["a,b", *body]) + eol)


@fuzz(0.5)
@given(
    st.text(alphabet="ab\r\n,1 ", max_size=60),
    st.integers(1, 8),
    st.sampled_from([None, ""]),
)
def test_lines_by_windows_are_the_lines_of_the_whole_text(text, window, newline) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(csv_table, "WINDOW_CHARS", window)
        assert list(csv_table._lines(text, newline)) == list(io.StringIO(text, newline=newline))


def test_a_placement_sized_file_round_trips_in_chunks(tmp_path) -> None:
    rng = np.random.default_rng(0)
    n = 3 * csv_table.CHUNK_ROWS + 17
    a, b = rng.integers(-5, 10**6, n), rng.integers(0, 10**6, n)
    path = tmp_path / "big.csv"
    path.write_text("b,a\n" + "".join(f"{y},{x}\n" for x, y in zip(a, b, strict=True)))
    table = read_table(path, COLUMNS, "a test CSV file")
    assert table.columns["a"].tolist() == a.tolist() and table.columns["b"].tolist() == b.tolist()
    assert _line_list(table) == list(range(2, n + 2))
    one = tmp_path / "one.part"
    one.write_text("\r\n".join(map(str, a)) + "\r\n\n")
    assert read_lines(one, COLUMNS[0], "one a line").tolist() == a.tolist()


@fuzz(0.5)
@given(st.lists(st.from_regex(r"[-+ 0-9_]{0,5}", fullmatch=True) | FIELDS, max_size=8))
def test_canonical_integers_are_what_the_general_parser_reads(fields) -> None:
    """Fields Python would write as they are take the quick path, with the general parser's
    values; every other field goes to the general parser."""
    quick = csv_table._canonical_ints(fields)
    if quick is None:
        return
    values, ok = csv_table._parse_ints(np.char.strip(np.asarray(fields, dtype=str)))
    assert ok.all() and quick.tolist() == values.tolist()


def test_a_file_too_large_to_read_is_refused_with_its_estimate(tmp_path, monkeypatch) -> None:
    from grapeshot.model import memory
    from grapeshot.model.placement import load_placement

    part, js = tmp_path / "p.part", tmp_path / "p.json"
    part.write_text("0\n1\n" * 500)  # 2,000 bytes: 12,000 to read
    js.write_text('{"format": "grapeshot-placement", "nodes": 2, "strategy": "x", "node_of": []}')
    monkeypatch.setattr(memory, "available_memory", lambda: 11_000)
    with pytest.raises(InputError) as refused:
        load_placement(part)
    assert str(refused.value).startswith(f"{part}: needs about 11.7 KiB (12,000 bytes) to read")
    assert load_placement(js).nodes == 2  # 77 bytes, 16 each: 1,232
    monkeypatch.setattr(memory, "available_memory", lambda: 1_000)
    with pytest.raises(InputError, match=r"1,232 bytes\) to read its 77 bytes"):
        load_placement(js)


INTEGERS = (
    Column("a", True, "an integer >= -5", -5, None),
    Column("c", True, "an integer from 0 to 99", 0, 99),
)
# Mostly values the scanner takes, so that one odd field in an otherwise plain file is common.
INT_FIELDS = st.integers(-5, 99).map(str) | st.sampled_from(
    ["-0", "007", "100", "-6", "", "-", " 4", "+5", "9" * 19, "-" + "9" * 18, "1e3"]
)
ROWS = st.lists(INT_FIELDS, min_size=2, max_size=2) | st.lists(INT_FIELDS, max_size=3)


def _read(path: Path, compiled: bool, table: bool):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(csv_table, "PLAIN_MIN_BYTES", 0 if compiled else 1 << 62)
        try:
            if not table:
                return read_lines(path, INTEGERS[0], "one a line").tolist()
            read = read_table(path, INTEGERS, "a test CSV file")
        except InputError as exc:
            return str(exc)
    return {k: (v.dtype, v.tolist()) for k, v in read.columns.items()}, _line_list(read)


@fuzz(1)
@given(
    st.just("a,c") | st.sampled_from(["c,a", " A ,c", "a", "a,a", "a,b", "", "1,2", '"a",c']),
    st.lists(ROWS, max_size=10),
    st.sampled_from(["\n", "\r\n", "\r"]),
    st.sampled_from(["", "\ufeff"]),
    st.sampled_from(["", "\n", "\r\n\n", " \n"]),
)
def test_the_compiled_scanner_reads_what_the_general_reader_reads(
    tmp_path_factory, header, rows, eol, bom, tail
) -> None:
    """Files of integers read by the compiled scanner (every file, for the test) and by the
    general reader: the same columns, lines and refusals; the scanner gives up on anything
    the general reader refuses."""
    folder = tmp_path_factory.mktemp("plain")
    body = eol.join(",".join(row) for row in rows)
    csv_path, part_path = folder / "t.csv", folder / "t.part"
    csv_path.write_bytes((bom + header + eol + body + tail).encode())
    part_path.write_bytes((bom + body + tail).encode())
    for path, table in ((csv_path, True), (part_path, False)):
        assert _read(path, True, table) == _read(path, False, table)


def test_plain_files_take_the_compiled_scanner(tmp_path, monkeypatch) -> None:
    """A placement-like file of plain integers is read by the scanner, not the general path
    (which would make the test above compare the general reader with itself)."""
    monkeypatch.setattr(csv_table, "PLAIN_MIN_BYTES", 0)
    data = b"\xef\xbb\xbfc,a\r\n3,-5\r\n\r\n0,12\n"
    table = csv_table._plain_table(data, INTEGERS, "t.csv")
    assert table is not None and _line_list(table) == [2, 4]
    assert table.columns["a"].tolist() == [-5, 12] and table.columns["c"].tolist() == [3, 0]
    table = csv_table._plain_table(b"c,a\n3,-5\n0,12\n", INTEGERS, "t.csv")
    assert table is not None and _line_list(table) == [2, 3]
    # Nothing between the rows: their lines are not stored (8 bytes a row).
    assert table.lines == csv_table.ConsecutiveLines(2, 2)
    # No empty line: no line numbers written, row r is on line 1 + r.
    values, lines = csv_table._plain_rows(b"4\n-5\n", INTEGERS[:1], 0, 1, blank=False)
    assert values.tolist() == [[4, -5]] and lines is None
    assert csv_table._plain_rows(b"4\n\n-5\n", INTEGERS[:1], 0, 1, blank=False) is None
    assert csv_table._plain_rows(b"4\n-6\n", INTEGERS[:1], 0, 1, blank=False) is None


def test_consecutive_lines_index_as_their_array_would() -> None:
    lines, array = csv_table.ConsecutiveLines(5, 4), np.arange(5, 9)
    assert len(lines) == 4 and lines[0] == 5 and lines[3] == 8
    rows = np.array([3, 0, 2, 2], dtype=np.int32)
    assert lines[rows].tolist() == array[rows].tolist() and lines[rows].dtype == np.int64
    assert lines[np.array([], dtype=np.int64)].tolist() == []
    for bad in (4, -1, np.array([0, 4])):
        with pytest.raises(IndexError):
            lines[bad]
    with pytest.raises(TypeError):
        lines[np.array([0.0])]
