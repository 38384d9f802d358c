"""The readers of files other programs write, fuzzed: a result or one InputError naming the file.

The placement readers (``.part``, ``.csv``, ``.npy``) and the trace importer (cost and halo
CSV files) get random bytes, random CSV-like text, and valid files with one field damaged;
valid files read back exactly what was written. Per-rank files get damaged headers over
random bodies, and one damaged line: read agreeing with their header, or refused naming the
file and the line. The importer also gets any ``--parts`` and
``--cells`` grid (empty, 1-D or 4-D, too large for int64 halo bytes), refused by the options.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from grapeshot.model.errors import InputError
from grapeshot.model.placement import (
    Placement,
    load_placement,
    save_placement,
    split_over_ranks,
)
from grapeshot.model.trace_csv import import_trace, read_halo
from grapeshot.model.workload import Workload
from tests.fuzz import example_file, fuzz

#: Every reader goes through a temporary file: a share of the cases each.
SETTINGS = fuzz(0.2)


#: Text a CSV or a one-a-line file is made of, and then some.
CSVISH = st.text(
    alphabet=st.sampled_from([*"0123456789,-.e+\n\r \t\"'x", "\x00", "١", "é"]),
    max_size=200,
)
#: Field values a damaged row may hold.
BAD_FIELDS = st.one_of(
    st.sampled_from(["", " ", "-1", "1.5", "1e3", "nan", "inf", "-0", "+1", "0x1", "1_0", '"',
                     "9" * 30, "１", "2147483647", "4", "\x00", "1,2"]),
    st.text(max_size=8),
    st.integers(-(2**64), 2**64).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)  # fmt: skip


def _placement_or_named_error(path: Path) -> Placement | None:
    try:
        placement = load_placement(path)
    except InputError as exc:
        assert str(exc).startswith(str(path)), str(exc)
        return None
    assert isinstance(placement, Placement) and placement.n_parts >= 1
    assert placement.node_of.min() >= 0 and placement.node_of.max() < placement.nodes
    return placement


@SETTINGS
@given(st.binary(max_size=300), st.sampled_from([".part", ".csv", ".npy", ".txt", ".json"]))
def test_placement_any_bytes(data: bytes, suffix: str) -> None:
    _placement_or_named_error(example_file(data, suffix))


@SETTINGS
@given(
    CSVISH, st.sampled_from(["", "partition,node\n", "partition,node,core\n", "node,partition\n"])
)
def test_placement_csvish_text(text: str, header: str) -> None:
    _placement_or_named_error(example_file(header + text, ".csv"))
    _placement_or_named_error(example_file(text, ".part"))


NODE_ARRAYS = st.lists(st.integers(0, 40), min_size=1, max_size=60).map(np.array)


@SETTINGS
@given(NODE_ARRAYS, st.sampled_from(["part", "csv", "npy", "json"]), st.booleans())
def test_placement_round_trip(nodes: np.ndarray, fmt: str, cores: bool) -> None:
    core_of = (nodes * 7) % 5 if cores else None
    placement = Placement(nodes, nodes=int(nodes.max()) + 1, strategy="x", core_of=core_of)
    path = example_file(b"", ".out")  # another extension: the reader recognises the bytes
    save_placement(path, placement, fmt)
    back = load_placement(path)
    assert np.array_equal(back.node_of, nodes) and back.nodes == placement.nodes
    if fmt in ("csv", "json"):
        assert (back.core_of is None) == (core_of is None)
        assert core_of is None or np.array_equal(back.core_of, core_of)


@SETTINGS
@given(NODE_ARRAYS, st.sampled_from(["part", "csv"]), st.data())
def test_placement_one_bad_field(nodes: np.ndarray, fmt: str, data: st.DataObject) -> None:
    path = example_file(b"", f".{fmt}")
    save_placement(path, Placement(nodes, nodes=int(nodes.max()) + 1, strategy="x"), fmt)
    lines = path.read_text().splitlines()
    i = data.draw(st.integers(0, len(lines) - 1))
    fields = lines[i].split(",")
    j = data.draw(st.integers(0, len(fields) - 1))
    fields[j] = data.draw(BAD_FIELDS)
    lines[i] = ",".join(fields)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _placement_or_named_error(path)


#: Header lines of per-rank files: the real one's pieces, each perhaps replaced or damaged.
HEADER_LINES = st.tuples(
    st.sampled_from(["# grapeshot placement: parts ", "# grapeshot placement:parts ", "#", "# ",
                     "# grapeshot placement: parts 2x", "#\x00", "# grapeshot placement: "]),
    st.lists(st.integers(0, 7).map(str) | st.sampled_from(["", "-1", "٣", "9" * 20]),
             min_size=0, max_size=5).map("x".join),
    st.sampled_from([", ", ",", ", x", " "]),
    st.integers(0, 40).map(str) | st.sampled_from(["", "-3", "1e1", "99999999999999999999"]),
    st.sampled_from([" partitions, ", " partition, ", " partitions,", " parts, ", " partitions "]),
    st.integers(0, 9).map(str) | st.sampled_from(["", "2147483648", "-1", "0x2"]),
    st.sampled_from([" ranks", " rank", " ranks ", " ranks\r", " nodes", " ranks,", ""]),
).map("".join)  # fmt: skip


def _per_rank_or_named_line(path: Path) -> None:
    """A file that opens with ``#`` reads as a per-rank placement that agrees with its
    header, or is refused naming the file and a line."""
    try:
        placement = load_placement(path)
    except InputError as exc:
        assert str(exc).startswith(f"{path}: line "), str(exc)
        return
    assert placement.per_rank and placement.grid is not None
    assert math.prod(placement.grid) == placement.n_parts >= 1
    assert placement.node_of.min() >= 0 and placement.node_of.max() < placement.nodes


@SETTINGS
@given(
    HEADER_LINES,
    st.sampled_from(["\n", "\r\n", "\r", ""]),
    CSVISH,
    st.sampled_from(["", "partition,rank\n", "rank,partition\n", "partition,node\n"]),
)
def test_placement_header_fuzz(header: str, eol: str, body: str, csv_header: str) -> None:
    _per_rank_or_named_line(example_file(header + eol + body, ".part"))
    _per_rank_or_named_line(example_file(header + eol + csv_header + body, ".csv"))


RANKED = st.tuples(
    st.sampled_from([(1,), (3,), (2, 3), (4, 1), (2, 2, 2), (1, 5, 2)]),
    st.integers(1, 4),
    st.data(),
)


@SETTINGS
@given(RANKED, st.sampled_from(["part", "csv", "json"]), st.data())
def test_placement_per_rank_round_trip_and_one_bad_line_fuzz(
    ranked: tuple, fmt: str, data: st.DataObject
) -> None:
    """Per-rank files read back what was written; with one line changed, they read as a
    placement agreeing with its header or are refused naming a line (a field, for JSON)."""
    grid, nodes, draw = ranked
    n = math.prod(grid)
    node_of = np.array(draw.draw(st.lists(st.integers(0, nodes - 1), min_size=n, max_size=n)))
    ranks = draw.draw(st.lists(st.integers(1, 3), min_size=nodes, max_size=nodes))
    placement = split_over_ranks(Placement(node_of, nodes=nodes, strategy="x"), ranks, grid)
    path = example_file(b"", ".out")  # another extension: the reader recognises the bytes
    save_placement(path, placement, fmt)
    back = load_placement(path)
    assert np.array_equal(back.node_of, placement.node_of) and back.nodes == sum(ranks)
    assert back.per_rank and back.grid == grid
    if fmt == "json":
        return
    lines = path.read_text().splitlines()
    i = data.draw(st.integers(0, len(lines) - 1))
    fields = lines[i].split(",")
    j = data.draw(st.integers(0, len(fields) - 1))
    fields[j] = data.draw(BAD_FIELDS | st.sampled_from(["#", "# grapeshot placement: parts 6"]))
    lines[i] = ",".join(fields)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    if path.read_bytes().lstrip(b"\xef\xbb\xbf").startswith(b"#"):
        _per_rank_or_named_line(path)
    else:
        _placement_or_named_error(path)


@SETTINGS
@given(NODE_ARRAYS, st.integers(0, 200), st.binary(min_size=1, max_size=4))
def test_placement_npy_damaged_bytes(nodes: np.ndarray, at: int, junk: bytes) -> None:
    path = example_file(b"", ".npy")
    save_placement(path, Placement(nodes, nodes=int(nodes.max()) + 1, strategy="x"), "npy")
    whole = path.read_bytes()
    at = min(at, len(whole))
    path.write_bytes(whole[:at] + junk + whole[at + len(junk) :])
    _placement_or_named_error(path)


# The trace importer.

GRIDS = st.sampled_from([(1, 1), (2, 1), (2, 3), (3, 2), (1, 2, 2), (2, 2, 1)])


def _workload_or_named_error(costs: Path, shape: tuple[int, ...], halo: Path | None) -> None:
    try:
        workload = import_trace(costs, shape, halo=halo)
    except InputError as exc:
        named = [str(costs)] + ([str(halo)] if halo is not None else [])
        assert any(str(exc).startswith(p) for p in named), str(exc)
    else:
        assert isinstance(workload, Workload) and workload.n_parts == math.prod(shape)


@SETTINGS
@given(st.binary(max_size=300), GRIDS)
def test_trace_any_bytes(data: bytes, shape: tuple[int, ...]) -> None:
    _workload_or_named_error(example_file(data, ".csv"), shape, None)


@SETTINGS
@given(CSVISH, CSVISH, GRIDS)
def test_trace_csvish_text(costs: str, halo: str, shape: tuple[int, ...]) -> None:
    cost_path = example_file("step,partition,seconds\n" + costs, ".csv")
    _workload_or_named_error(cost_path, shape, example_file("src,dst,bytes\n" + halo, ".csv"))


@st.composite
def traces(draw: st.DrawFn) -> tuple[tuple[int, ...], np.ndarray, dict[tuple[int, int], int]]:
    """A grid, its costs and a halo: what a valid pair of files holds."""
    shape = draw(GRIDS)
    n = math.prod(shape)
    steps = draw(st.integers(1, 4))
    seconds = st.floats(0, 1e3, allow_nan=False) | st.just(0.0)
    cost = np.array(draw(st.lists(seconds, min_size=steps * n, max_size=steps * n)))
    pairs = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda p: p[0] != p[1])
    halo = draw(st.dictionaries(pairs, st.integers(0, 2**40), max_size=8)) if n > 1 else {}
    return shape, cost.reshape(steps, n), halo


@SETTINGS
@given(traces(), st.randoms(use_true_random=False))
def test_trace_round_trip(trace, random) -> None:
    shape, cost, halo = trace
    steps, parts = cost.shape
    rows = [f"{s},{p},{float(cost[s, p])!r}" for s in range(steps) for p in range(parts)]
    random.shuffle(rows)
    cost_path = example_file("step,partition,seconds\n" + "\n".join(rows) + "\n", ".csv")
    halo_rows = [f"{s},{d},{b}" for (s, d), b in halo.items()]
    random.shuffle(halo_rows)
    halo_path = example_file("src,dst,bytes\n" + "\n".join(halo_rows) + "\n", ".csv")
    workload = import_trace(cost_path, shape, halo=halo_path)
    assert np.array_equal(workload.cost, cost)
    graph = read_halo(halo_path, shape)
    pairs = zip(graph.sources().tolist(), graph.indices.tolist(), strict=True)
    got = dict(zip(pairs, graph.nbytes.tolist(), strict=True))
    assert got == halo and workload.halo.n_messages == len(halo)


@SETTINGS
@given(traces(), st.data())
def test_trace_one_bad_field(trace, data: st.DataObject) -> None:
    shape, cost, halo = trace
    rows = [[str(s), str(p), repr(float(cost[s, p]))]
            for s in range(cost.shape[0]) for p in range(cost.shape[1])]  # fmt: skip
    halo_rows = [[str(s), str(d), str(b)] for (s, d), b in halo.items()]
    table = data.draw(st.sampled_from(["costs", "halo"] if halo_rows else ["costs"]))
    target = rows if table == "costs" else halo_rows
    row = data.draw(st.integers(0, len(target) - 1))
    col = data.draw(st.integers(0, 2))
    target[row][col] = data.draw(BAD_FIELDS)
    cost_path = example_file(
        "step,partition,seconds\n" + "\n".join(map(",".join, rows)) + "\n", ".csv"
    )
    text = "src,dst,bytes\n" + "\n".join(map(",".join, halo_rows)) + "\n"
    halo_path = example_file(text, ".csv")
    _workload_or_named_error(cost_path, shape, halo_path)


#: Grids as ``--parts`` and ``--cells`` may give them: valid, empty, 1-D or 4-D, huge.
SHAPES = st.lists(st.integers(-1, 4) | st.sampled_from([10**6, 2**40]), min_size=0, max_size=4)


@SETTINGS
@given(SHAPES, SHAPES | st.none(), st.booleans())
def test_trace_fuzz_grid_and_cells(parts: list[int], cells: list[int] | None, halo: bool) -> None:
    """Any grid with a small valid trace: the workload, or one InputError naming the grid
    options or the file (rows a grid of that size lacks), never an allocation by its size."""
    n = math.prod(parts) if parts and min(parts) > 0 else 1
    rows = [f"0,{p},1.5" for p in range(min(n, 8))]  # all of a small grid's partitions
    cost_path = example_file("step,partition,seconds\n" + "\n".join(rows) + "\n", ".csv")
    halo_path = (
        example_file("src,dst,bytes\n" + ("0,1,8\n" if n > 1 else ""), ".csv") if halo else None
    )
    try:
        grid = None if cells is None else tuple(cells)
        workload = import_trace(cost_path, tuple(parts), cells=grid, halo=halo_path)
    except InputError as exc:
        named = ("--parts/--cells", str(cost_path), str(halo_path))
        assert str(exc).startswith(named), str(exc)
    else:
        assert workload.n_parts == math.prod(parts) and workload.cost.shape == (1, len(rows))


@SETTINGS
@given(st.binary(max_size=300), GRIDS)
def test_trace_fuzz_halo_any_bytes(data: bytes, shape: tuple[int, ...]) -> None:
    n = math.prod(shape)
    rows = [f"0,{p},1" for p in range(n)]
    cost_path = example_file("step,partition,seconds\n" + "\n".join(rows) + "\n", ".csv")
    _workload_or_named_error(cost_path, shape, example_file(data, ".csv"))
