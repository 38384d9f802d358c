"""Every text input parser, fuzzed: a result or one InputError naming the file or field.

The SWF and sacct readers are fuzzed in tests/jobs, ``--pattern`` in tests/exchange, the
tleaf text and MatrixMarket files in tests/model/test_fuzz_topology.py, the user's CSV files
in tests/model/test_fuzz_user_files.py; this covers the machine TOML, the placement JSON and
the ``--synthetic`` SPEC. Each gets random bytes, near-valid input (a valid file or SPEC with
one field damaged, so the fuzzing reaches past the first syntax check) and valid input that
must read back exactly.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from grapeshot.model.errors import InputError
from grapeshot.model.machine import Machine
from grapeshot.model.machine_file import load_machine_file
from grapeshot.model.placement import Placement, load_placement
from grapeshot.model.synthetic import (
    KINDS,
    MAX_CELL_BYTES,
    MAX_COST,
    parse_spec,
    synthetic_workload,
)
from grapeshot.model.workload import Workload
from tests.fuzz import example_file, fuzz


def _example(data: bytes | str) -> Path:
    return example_file(data, ".toml")


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


@SETTINGS
@given(st.text(max_size=300))
def test_machine_toml_any_text(text: str) -> None:
    _check(load_machine_file, _example(text))


@SETTINGS
@given(st.integers(0, len(MACHINE_TOML.splitlines()) - 1), BAD_VALUES)
def test_machine_toml_one_bad_field(line_no: int, value: object) -> None:
    lines = MACHINE_TOML.splitlines()
    if "=" not in lines[line_no]:
        return
    key = lines[line_no].split("=")[0].strip()
    lines[line_no] = f"{key} = {_toml_value(value)}"
    path = _example("\n".join(lines) + "\n")
    try:
        machine = load_machine_file(path)
    except InputError as exc:
        assert str(path) in str(exc) and (key in str(exc) or "line" in str(exc)), str(exc)
    else:
        assert isinstance(machine, Machine)


def test_machine_toml_valid_one_loads() -> None:
    machine = load_machine_file(_example(MACHINE_TOML))
    assert machine.nodes == 4 and machine.cores_per_node == 8


@SETTINGS
@given(st.binary(max_size=300), st.booleans())
def test_machine_toml_fuzz_any_bytes(data: bytes, after_valid: bool) -> None:
    # Bytes alone, and bytes after a valid file (past the parser's first line).
    _check(load_machine_file, _example((MACHINE_TOML.encode() if after_valid else b"") + data))


#: What a key or section may be renamed to.
RENAMES = ["node", "network", "torus3d", "fat_tree", "nodes", "levels", "dims", "x",
           "[network.fat_tree]"]  # fmt: skip


@SETTINGS
@given(st.data())
def test_machine_toml_fuzz_damaged_lines(data: st.DataObject) -> None:
    """A valid file with a line dropped, repeated, moved, or a key or section renamed."""
    lines = MACHINE_TOML.splitlines()
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(lines) - 1))
        how = data.draw(st.sampled_from(["drop", "repeat", "move", "rename", "junk"]))
        if how == "drop" and len(lines) > 1:
            del lines[i]
        elif how == "repeat":
            lines.insert(i, lines[i])
        elif how == "move":
            lines.insert(data.draw(st.integers(0, len(lines) - 1)), lines.pop(i))
        elif how == "rename":
            word = data.draw(st.sampled_from(RENAMES))
            lines[i] = lines[i].replace(lines[i].strip("[] ").split("=")[0].strip(), word, 1)
        else:
            lines.insert(i, data.draw(st.text(max_size=20)))
    path = _example("\n".join(lines) + "\n")
    try:
        machine = load_machine_file(path)
    except InputError as exc:
        assert str(exc).startswith(str(path)), str(exc)
    else:
        assert isinstance(machine, Machine) and machine.total_cores >= machine.nodes


@st.composite
def machine_descriptions(draw: st.DrawFn) -> dict:
    """A valid machine file's content: what the TOML says, to be read back exactly."""
    nodes = draw(st.integers(1, 12))
    levels = draw(st.lists(st.tuples(st.sampled_from(["socket", "numa", "core", "pu"]),
                                     st.integers(1, 4)), min_size=1, max_size=3))  # fmt: skip
    cores = math.prod(a for _, a in levels)
    topology = draw(st.sampled_from(["flat", "fat-tree", "torus3d"]))
    params: dict = {}
    if topology == "fat-tree" and draw(st.booleans()):
        params["arity"] = draw(st.integers(2, 8))
        params["levels"] = max(1, math.ceil(math.log(nodes, params["arity"]) - 1e-9))
        while params["arity"] ** params["levels"] < nodes:
            params["levels"] += 1
    if topology == "torus3d" and draw(st.booleans()):
        params["nodes_per_router"] = draw(st.integers(1, 3))
        params["dims"] = [-(-nodes // params["nodes_per_router"]), 1, draw(st.integers(1, 2))]
        params["link_weights"] = draw(st.lists(st.floats(0.25, 4.0), min_size=3, max_size=3))
    return {
        "name": draw(st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=8)),
        "nodes": nodes,
        "node_cores": draw(
            st.none() | st.lists(st.integers(1, 64), min_size=nodes, max_size=nodes)
        ),
        "levels": levels,
        "numbering": draw(st.none() | st.permutations(list(range(cores)))),
        "topology": topology,
        "latency": draw(st.floats(0.0, 1.0)),
        "bandwidth": draw(st.floats(1.0, 1e12)),
        "contention": draw(st.booleans()),
        "params": params,
    }


def _toml(d: dict) -> str:
    name = json.dumps(d["name"], ensure_ascii=False).replace("\x7f", "\\u007f")  # TOML's escapes
    lines = [f"name = {name}", f"nodes = {d['nodes']}"]
    if d["node_cores"] is not None:
        lines.append(f"node_cores = {d['node_cores']}")
    lines += ["[node]", f"levels = {json.dumps([list(level) for level in d['levels']])}"]
    if d["numbering"] is not None:
        lines.append(f"core_numbering = {list(d['numbering'])}")
    lines += ["[network]", f'topology = "{d["topology"]}"', f"latency = {d['latency']!r}",
              f"bandwidth = {d['bandwidth']!r}",
              f"node_contention = {str(d['contention']).lower()}"]  # fmt: skip
    if d["params"]:
        lines.append(f"[network.{d['topology'].replace('-', '_')}]")
        lines += [f"{k} = {v!r}" for k, v in d["params"].items()]
    return "\n".join(lines) + "\n"


@SETTINGS
@given(machine_descriptions())
def test_machine_toml_fuzz_round_trip(d: dict) -> None:
    m = load_machine_file(_example(_toml(d)))
    assert m.name == d["name"] and m.nodes == d["nodes"]
    assert m.node.levels == tuple(d["levels"])
    assert m.node.core_numbering == (None if d["numbering"] is None else tuple(d["numbering"]))
    want = d["node_cores"] or [math.prod(a for _, a in d["levels"])] * d["nodes"]
    assert m.cores().tolist() == want
    net = m.network
    assert (net.topology, net.latency, net.bandwidth) == (
        d["topology"], d["latency"], d["bandwidth"])  # fmt: skip
    assert net.node_contention == d["contention"]
    got = {k: list(v) if isinstance(v, tuple) else v for k, v in net.params.items()}
    assert got == d["params"]


@SETTINGS
@given(st.text(max_size=300))
def test_placement_any_text(text: str) -> None:
    _check(load_placement, _example(text))


@SETTINGS
@given(
    st.sampled_from(["node_of", "nodes", "strategy", "seed", "core_of", "format"]),
    st.one_of(BAD_VALUES, st.none(), st.dictionaries(st.text(max_size=3), st.integers())),
)
def test_placement_one_bad_field(key: str, value: object) -> None:  # fmt: skip
    doc = {"format": "grapeshot-placement", "node_of": [0, 1, 1, 0], "nodes": 2,
           "strategy": "birdshot", "seed": 1}  # fmt: skip
    doc[key] = value
    path = _example(json.dumps(doc))
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


#: Arguments as the shell hands them over: any bytes, decoded as Python decodes argv.
ARGV_TEXT = st.binary(max_size=60).map(lambda b: b.decode("utf-8", "surrogateescape"))


@SPEC_SETTINGS
@given(ARGV_TEXT)
def test_synthetic_spec_fuzz_any_bytes(spec: str) -> None:
    try:
        parse_spec(spec)
    except InputError as exc:
        assert str(exc).startswith("--synthetic"), str(exc)


#: Values of a small workload's keys: the sizes stay small (the workload is built), the
#: numbers reach the edges of what each key takes.
SMALL_VALUES = {
    "parts": st.sampled_from(
        [
            "1x1",
            "2x3",
            "3,2",
            "2x2x2",
            "4x1",
            "1x1x1",
            "0x2",
            "2",
            "2x2x2x2",
            "-1x2",
            "2x",
            "x",
            "2X3",
            "١x2",
        ]
    ),
    "cells": st.sampled_from(
        [
            "1",
            "2",
            "3x2",
            "2x2x2",
            "1x1",
            "0",
            "2x2x2x2",
            "3,1",
            "5",
            "1048576",
            "1073741824",
            "2x1073741824x1073741824",
        ]
    ),
    "steps": st.sampled_from(["1", "2", "5", "0", "-1"]),
    "ghost": st.sampled_from(["1", "2", "3", "7", "0"]),
    "cell_bytes": st.sampled_from(["1", "8", str(2**40), str(2**62), "0"]),
    "seed": st.sampled_from(["0", "7", str(2**63), str(2**64 + 1), "-1"]),
    "busy": st.sampled_from(["1", "0.5", "1e-300", "5e-324", "0", "1.0000001", "nan"]),
    "busy_cost": st.sampled_from(["0", "1", "1e12", "1.0000001e12", "1.7e308", "inf", "-0.0"]),
    "mode": st.sampled_from(["redraw", "move", "Move", ""]),
    "a": st.sampled_from(["0", "50", "1e308", "1e-320"]),
    "b": st.sampled_from(["0", "100", "1e12", "1e308", "1.7976931348623157e308"]),
    "width": st.sampled_from(["1", "0.25", "1e-300", "5e-324", "0.999999999"]),
    "height": st.sampled_from(["1", "0.8", "1e-300", "5e-324"]),
    "cell_cost": st.sampled_from(["0", "1e-6", "1e12", "1e308", "1.7e308"]),
    "floor": st.sampled_from(["0", "1", "1e12", "1e308", "1.7e308"]),
}


@st.composite
def small_specs(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(list(KINDS)))
    keys = [k for k in KINDS[kind].keys if k in SMALL_VALUES]
    values = {"parts": draw(SMALL_VALUES["parts"]), "steps": draw(SMALL_VALUES["steps"])}
    for key in draw(st.lists(st.sampled_from(keys), max_size=4, unique=True)):
        values[key] = draw(SMALL_VALUES[key])
    return kind + ":" + ",".join(f"{k}={v}" for k, v in values.items())


@fuzz(0.3)
@given(small_specs())
def test_synthetic_spec_fuzz_builds(spec: str) -> None:
    """A SPEC whose values reach the edges builds a workload of finite costs, or is refused
    naming ``--synthetic``: never a cost of inf or NaN, never another exception."""
    try:
        w = synthetic_workload(spec)
    except InputError as exc:
        assert str(exc).startswith("--synthetic"), str(exc)
    else:
        assert isinstance(w, Workload) and w.cost.shape[1] == math.prod(w.parts_shape)
        assert np.isfinite(w.cost).all() and (w.cost >= 0).all()


def _spec_text(kind: str, params: dict) -> str:
    def text(v: object) -> str:
        return "x".join(map(str, v)) if isinstance(v, tuple) else repr(v) if isinstance(
            v, float) else str(v)  # fmt: skip

    return kind + ":" + ",".join(f"{k}={text(v)}" for k, v in params.items())


@SPEC_SETTINGS
@given(st.sampled_from(list(KINDS)), st.data())
def test_synthetic_spec_fuzz_round_trip(kind: str, data: st.DataObject) -> None:
    """Every key given a valid value: parsed, written back as a SPEC, parsed to the same."""
    keys = KINDS[kind].keys
    valid = {
        "parts": st.lists(st.integers(1, 10**6), min_size=2, max_size=3).map(tuple),
        "cells": st.lists(st.integers(1, 10**6), min_size=1, max_size=3).map(tuple),
        "mode": st.sampled_from(["redraw", "move"]),
        "cell_bytes": st.integers(1, MAX_CELL_BYTES),
    }
    params = {}
    for key, spec in keys.items():
        if key in valid:
            params[key] = data.draw(valid[key])
        elif isinstance(spec.default, float):
            hi = 1.0 if key in ("busy", "width", "height") else MAX_COST
            params[key] = data.draw(st.floats(5e-324, hi))
        else:
            params[key] = data.draw(st.integers(1, 2**63))
    text = _spec_text(kind, params)
    assert parse_spec(text) == (kind, params)
    assert parse_spec(_spec_text(*parse_spec(text))) == (kind, params)
