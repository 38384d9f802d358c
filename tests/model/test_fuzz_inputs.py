"""Every text input parser, fuzzed: a result or one InputError naming the file or field.

The SWF and sacct readers are fuzzed in tests/jobs; this covers the machine TOML, the
placement JSON and the synthetic SPEC. Machine and placement files are also built from valid
ones with one field damaged, so the fuzzing reaches past the first syntax check.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from grapeshot.model.errors import InputError
from grapeshot.model.machine import Machine
from grapeshot.model.machine_file import load_machine_file
from grapeshot.model.placement import Placement, load_placement
from grapeshot.model.synthetic import parse_spec
from tests.fuzz import fuzz

#: The file readers go through a temporary file each: a third of the cases; the SPEC
#: parser is pure and fast: all of them.
SETTINGS = fuzz(0.35)
SPEC_SETTINGS = fuzz()

MACHINE_TOML = """\
name = "fuzz"
nodes = 4
[node]
levels = [["socket", 2], ["core", 4]]
core_numbering = [0, 2, 4, 6, 1, 3, 5, 7]
[network]
topology = "torus3d"
latency = 1e-6
bandwidth = 1e9
node_contention = false
memcpy_bandwidth = 5e9
[network.torus3d]
dims = [2, 1, 1]
nodes_per_router = 2
link_weights = [2.0, 1.0, 2.0]
"""

#: Values a damaged field may take: wrong types, signs, sizes and shapes.
BAD_VALUES = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.booleans(),
    st.lists(st.integers(-3, 3), max_size=3),
)


def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return {"nan": "nan", "inf": "inf", "-inf": "-inf"}.get(repr(v), repr(v))
    if isinstance(v, str | list):
        return json.dumps(v)
    return str(v)


def _check(fn, path: Path) -> None:
    try:
        fn(path)
    except InputError as exc:
        assert str(path) in str(exc), str(exc)


def _write(text: str) -> Path:
    # One file per example (hypothesis reuses a test's fixtures across examples).
    handle = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False, dir=_DIR)
    with handle:
        handle.write(text)
    return Path(handle.name)


_DIR = tempfile.mkdtemp(prefix="grapeshot-fuzz-")


@SETTINGS
@given(st.text(max_size=300))
def test_machine_toml_any_text(text: str) -> None:
    _check(load_machine_file, _write(text))


@SETTINGS
@given(st.integers(0, len(MACHINE_TOML.splitlines()) - 1), BAD_VALUES)
def test_machine_toml_one_bad_field(line_no: int, value: object) -> None:
    lines = MACHINE_TOML.splitlines()
    if "=" not in lines[line_no]:
        return
    key = lines[line_no].split("=")[0].strip()
    lines[line_no] = f"{key} = {_toml_value(value)}"
    path = _write("\n".join(lines) + "\n")
    try:
        machine = load_machine_file(path)
    except InputError as exc:
        assert str(path) in str(exc) and (key in str(exc) or "line" in str(exc)), str(exc)
    else:
        assert isinstance(machine, Machine)


def test_machine_toml_valid_one_loads() -> None:
    machine = load_machine_file(_write(MACHINE_TOML))
    assert machine.nodes == 4 and machine.cores_per_node == 8


@SETTINGS
@given(st.text(max_size=300))
def test_placement_any_text(text: str) -> None:
    _check(load_placement, _write(text))


@SETTINGS
@given(
    st.sampled_from(["node_of", "nodes", "strategy", "seed", "core_of", "format"]),
    st.one_of(BAD_VALUES, st.none(), st.dictionaries(st.text(max_size=3), st.integers())),
)
def test_placement_one_bad_field(key: str, value: object) -> None:  # fmt: skip
    doc = {"format": "grapeshot-placement", "node_of": [0, 1, 1, 0], "nodes": 2,
           "strategy": "birdshot", "seed": 1}  # fmt: skip
    doc[key] = value
    path = _write(json.dumps(doc))
    try:
        placement = load_placement(path)
    except InputError as exc:
        assert str(path) in str(exc), str(exc)
    else:
        assert isinstance(placement, Placement)


@SPEC_SETTINGS
@given(st.text(max_size=80))
def test_synthetic_spec_any_text(spec: str) -> None:
    try:
        parse_spec(spec)
    except InputError as exc:
        assert str(exc).startswith("--synthetic"), str(exc)


@SPEC_SETTINGS
@given(
    st.sampled_from(["binary", "uniform", "dambreak"]),
    st.lists(
        st.tuples(
            st.sampled_from(
                [
                    "parts",
                    "cells",
                    "steps",
                    "seed",
                    "ghost",
                    "busy",
                    "a",
                    "b",
                    "width",
                    "floor",
                    "mode",
                    "zz",
                ]
            ),
            st.text(st.characters(codec="ascii", exclude_characters=",:"), max_size=8),
        ),
        max_size=4,
    ),
)
def test_synthetic_spec_bad_values(kind: str, items: list[tuple[str, str]]) -> None:  # fmt: skip
    spec = kind + ":" + ",".join(f"{k}={v}" for k, v in items)
    try:
        parse_spec(spec)
    except InputError as exc:
        assert str(exc).startswith(f"--synthetic {kind}"), str(exc)
