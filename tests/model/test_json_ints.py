"""The compiled reader of a JSON document's integer lists reads what ``json.loads`` reads.

:func:`grapeshot.model.json_ints.loads_with_int_lists` either gives up (None: the caller then
reads the file with ``json.loads``, for its messages) or gives ``json.loads``'s document
with the named top-level lists as int64 arrays. Documents of odd items, blanks, escapes,
duplicate and nested keys and broken text are fuzzed against ``json.loads`` itself.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grapeshot.model.json_ints import loads_with_int_lists
from tests.fuzz import fuzz

KEYS = ("node_of", "core_of")
#: List items as written: JSON integers and everything that is not one.
ITEMS = st.sampled_from(
    ["0", "7", "-3", "-0", "12", "007", "-", "1.5", "1e3", "true", '"4"', "null", "[1]", ""]
) | st.integers(-(10**20), 10**20).map(str)
BLANKS = st.sampled_from(["", " ", "\n", "\r\n ", "\t"])


def _arrays_as_lists(doc, taken: list[str]):
    """The document with its top-level arrays back as lists, and the keys that were arrays."""
    if not isinstance(doc, dict):
        return doc
    out = {}
    for key, value in doc.items():
        if isinstance(value, np.ndarray):
            assert value.dtype == np.int64 and key in KEYS
            taken.append(key)
            value = value.tolist()
        out[key] = value
    return out


def _check(text: str) -> list[str]:
    """Compare with json.loads; return the keys read as arrays."""
    data = text.encode("utf-8")
    got = loads_with_int_lists(data, KEYS)
    try:
        want = json.loads(text.removeprefix("\ufeff"))
    except (json.JSONDecodeError, RecursionError):
        assert got is None
        return []
    if got is None:
        return []
    taken: list[str] = []
    assert _arrays_as_lists(got, taken) == want
    if isinstance(want, dict):
        assert list(got) == list(want)
    return taken


@fuzz(0.5)
@given(
    st.lists(st.tuples(BLANKS, ITEMS, BLANKS), max_size=6),
    st.sampled_from((*KEYS, "other")),
    st.sampled_from(
        [
            "",
            ', "nodes": 3',
            ', "core_of": [1, 2], "m": {"node_of": [5]}',
            ', "s": "\\u0041"',
            ', "node_of": "s"',
        ]
    ),
    st.sampled_from(["", "\ufeff"]),
    st.sampled_from(["", " ", " x", "]"]),
    st.integers(0, 3),
)
def test_fuzz_integer_lists_read_as_json_loads_reads_them(
    items, key, rest, bom, after, cut
) -> None:  # fmt: skip
    body = ",".join(f"{a}{item}{b}" for a, item, b in items)
    text = f'{bom}{{"format": "x", "{key}" : [{body}]{rest}}}{after}'
    _check(text[: len(text) - cut])


@pytest.mark.parametrize(
    ("text", "taken"),
    [
        ('{"node_of": [0, 1, 2]}', ["node_of"]),
        ('{"node_of" :\n[ 0 ,\n-0,\r\n 12 ],"core_of":[]}', ["node_of", "core_of"]),
        ('{"node_of": [0, 1], "node_of": [3]}', ["node_of"]),  # the last one counts
        ('{"node_of": [0, 1.5]}', []),
        ('{"node_of": [01]}', []),  # invalid JSON
        ('{"node_of": [1,]}', []),  # invalid JSON
        ('{"node_of": [1, 2]', []),  # no closing brace
        ('{"node_of": [1234567890123456789]}', []),  # 19 digits: json.loads's ints
        ('{"m": {"node_of": [1, 2]}, "core_of": [3]}', ["core_of"]),  # nested: a list
        ('{"s": "\\"node_of\\": [1, 2]", "node_of": [4]}', ["node_of"]),
        ('{"node_of": [1], "s": "\\u0040grapeshot-ints-0@"}', []),  # could spell a marker
        ('{"node_of": [1], "s": "@grapeshot-ints-0@"}', []),
        ('{"node_of": [1], "s": "a\x00b"}', []),  # a NUL: json.loads refuses it
        ("[1, 2]", []),
    ],
)
def test_what_is_read_as_an_array(text: str, taken: list[str]) -> None:
    assert _check(text) == taken


def test_a_placement_sized_list() -> None:
    values = np.random.default_rng(0).integers(-(10**12), 10**12, 200_000)
    text = json.dumps({"format": "grapeshot-placement", "node_of": values.tolist(), "n": 1})
    doc = loads_with_int_lists(text.encode(), KEYS)
    assert doc is not None and np.array_equal(doc["node_of"], values) and doc["n"] == 1
