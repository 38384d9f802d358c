"""Placement files for every code: ``.part``, ``.csv`` and ``.npy`` beside the JSON.

Each format is written and read back, recognised by its bytes under another extension, and
every refusal of its reader names the file and the line (field, partition) at fault.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from grapeshot.model import placement as placement_module
from grapeshot.model.atomic import check_output_path
from grapeshot.model.errors import InputError
from grapeshot.model.machine import MAX_RANKS
from grapeshot.model.placement import (
    PLACEMENT_FORMATS,
    Placement,
    load_placement,
    placement_format,
    save_placement,
)

NODES = np.array([2, 0, 0, 1, 2, 1, 0], dtype=np.int32)


def _placement(core_of: np.ndarray | None = None) -> Placement:
    return Placement(NODES, nodes=3, strategy="birdshot", seed=4, core_of=core_of)


@pytest.mark.parametrize("fmt", list(PLACEMENT_FORMATS))
def test_every_format_reads_back_the_nodes(tmp_path: Path, fmt: str, reader: str) -> None:
    path = tmp_path / f"p{PLACEMENT_FORMATS[fmt]}"
    save_placement(path, _placement(), fmt, metrics={"lif_mean": 0.5})
    back = load_placement(path)
    assert np.array_equal(back.node_of, NODES) and back.nodes == 3 and back.core_of is None
    if fmt == "json":
        assert (back.strategy, back.seed) == ("birdshot", 4)
    else:  # what these formats cannot hold
        assert (back.strategy, back.seed) == ("unknown", None)


def test_the_files_are_what_the_docs_say(tmp_path: Path) -> None:
    save_placement(tmp_path / "p.part", _placement(), "part")
    assert (tmp_path / "p.part").read_text() == "2\n0\n0\n1\n2\n1\n0\n"
    save_placement(tmp_path / "p.csv", _placement(), "csv")
    lines = (tmp_path / "p.csv").read_text().splitlines()
    assert lines[0] == "partition,node,core" and lines[1:3] == ["0,2,-1", "1,0,-1"]
    assert len(lines) == 1 + len(NODES)
    save_placement(tmp_path / "p.npy", _placement(), "npy")
    raw = (tmp_path / "p.npy").read_bytes()
    assert raw[:8] == b"\x93NUMPY\x01\x00"  # version 1.0
    array = np.load(tmp_path / "p.npy")
    assert array.dtype == np.dtype("<i4") and np.array_equal(array, NODES)
    # The data are the last 4 * P bytes, little-endian int32, as docs/formats.md says.
    start = 10 + int.from_bytes(raw[8:10], "little")
    assert np.array_equal(np.frombuffer(raw[start:], "<i4"), NODES)


@pytest.mark.parametrize("cores", [False, True])
@pytest.mark.parametrize("n", [0, 1, 7, 12])
def test_the_text_writers_write_what_str_and_json_dumps_write(
    tmp_path: Path, monkeypatch, n: int, cores: bool
) -> None:
    """The compiled writer, chunk after chunk (3 partitions a chunk here), writes the bytes
    of the plain Python writers it replaced: ``json.dumps`` of the whole document, ``str`` of
    each number."""
    monkeypatch.setattr(placement_module, "_CHUNK", 3)
    rng = np.random.default_rng(n)
    core_of = rng.integers(0, 4, n) if cores else None
    p = Placement(rng.integers(0, 5, n), nodes=5, strategy="x", seed=2, core_of=core_of)
    extra = {"metrics": {"lif": 0.5, "grid": [n, 1]}}
    want_json = json.dumps({**p.to_dict(), **extra}) + "\n"
    nodes, cores_or_none = p.node_of.tolist(), [-1] * n if core_of is None else core_of.tolist()
    want = {
        "json": want_json,
        "part": "".join(f"{v}\n" for v in nodes) or "\n",
        "csv": "partition,node,core\n"
        + "".join(
            f"{i},{v},{c}\n" for i, (v, c) in enumerate(zip(nodes, cores_or_none, strict=True))
        ),
    }
    for fmt, text in want.items():
        save_placement(tmp_path / f"p.{fmt}", p, fmt, **extra)
        assert (tmp_path / f"p.{fmt}").read_text() == text, fmt


def test_csv_keeps_the_cores(tmp_path: Path, reader: str) -> None:
    cores = np.array([3, 0, 1, 2, 5, 4, 7])
    save_placement(tmp_path / "p.csv", _placement(cores), "csv")
    assert (tmp_path / "p.csv").read_text().splitlines()[1] == "0,2,3"
    assert np.array_equal(load_placement(tmp_path / "p.csv").core_of, cores)
    save_placement(tmp_path / "p.part", _placement(cores), "part")
    assert load_placement(tmp_path / "p.part").core_of is None  # lost, as documented


def test_a_csv_in_any_row_order_without_core(tmp_path: Path, reader: str) -> None:
    path = tmp_path / "p.csv"
    path.write_text("Node , PARTITION\r\n1,2\n\n0,0\n2,1\n")
    back = load_placement(path)
    assert back.node_of.tolist() == [0, 2, 1] and back.core_of is None


@pytest.mark.parametrize("fmt", ["part", "csv", "npy"])
def test_another_extension_is_recognised_by_its_bytes(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "placement.txt"
    save_placement(path, _placement(), fmt)
    assert np.array_equal(load_placement(path).node_of, NODES)


def test_nodes_are_the_largest_named_plus_one(tmp_path: Path) -> None:
    # Fewer partitions than nodes: the empty last nodes are not in a .part file.
    save_placement(tmp_path / "p.part", Placement(np.array([0, 1]), nodes=5, strategy="x"), "part")
    assert load_placement(tmp_path / "p.part").nodes == 2


@pytest.mark.parametrize(
    ("path", "fmt", "expected"),
    [("p.json", None, "json"), ("P.PART", None, "part"), ("p.csv", None, "csv"),
     ("p.npy", None, "npy"), ("p.txt", "part", "part"), ("p.json", "csv", "csv"),
     ("p", "NPY", "npy")],
)  # fmt: skip
def test_the_format_written(path: str, fmt: str | None, expected: str) -> None:
    assert placement_format(path, fmt) == expected


@pytest.mark.parametrize(
    ("path", "fmt", "message"),
    [
        ("p.txt", None, "--out p.txt: has the extension '.txt', which names no placement "
                        "format; expected .json, .part, .csv, .npy, or --format json|part|csv|npy"),
        ("p", None, "--out p: has no extension"),
        ("p.json", "metis", "--format: got 'metis'; expected one of json, part, csv, npy"),
    ],
)  # fmt: skip
def test_an_unknown_format_is_refused(path: str, fmt: str | None, message: str) -> None:
    with pytest.raises(InputError) as err:
        placement_format(path, fmt)
    assert str(err.value).startswith(message)


PART_REFUSALS = [
    ("", "is empty"),
    ("\n\n", "is empty"),
    ("0\n\n1\n", "line 2: is blank; expected a node number in [0, 2147483646]"),
    ("0\n-1\n", "line 2: got '-1'; expected a node number"),
    ("0\n+1\n", "line 2: got '+1'"),
    ("1.0\n", "line 1: got '1.0'"),
    ("0 1\n", "line 1: got '0 1'"),
    ("0\n2147483647\n", "line 2: got '2147483647'"),
    ("0\n" + "9" * 100 + "\n", "line 2: got '999999999999999999999999…'"),
    ("0\n١\n", "line 2: got '١'"),  # an Arabic-Indic one: C's strtol would not read it
]


@pytest.mark.parametrize(("text", "message"), PART_REFUSALS)
def test_part_refusals_name_the_line(tmp_path: Path, text: str, message: str, reader: str) -> None:
    path = tmp_path / "p.part"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_placement(path)
    assert str(err.value).startswith(f"{path}: {message}"), str(err.value)


def test_part_tolerates_blanks_around_numbers_and_crlf(tmp_path: Path, reader: str) -> None:
    path = tmp_path / "p.part"
    path.write_bytes(b"\xef\xbb\xbf 1\r\n0 \r\n\t2\r\n\r\n")
    assert load_placement(path).node_of.tolist() == [1, 0, 2]


def test_bytes_that_are_not_utf8_name_their_line(tmp_path: Path) -> None:
    path = tmp_path / "p.part"
    path.write_bytes(b"0\n1\n\xff\n")
    with pytest.raises(InputError) as err:
        load_placement(path)
    assert str(err.value).startswith(f"{path}: line 3: is not UTF-8 text")


CSV_REFUSALS = [
    ("", "is empty"),
    ("partition,node\n", "has no rows; expected one row per partition"),
    ("0,1\n1,0\n", "line 1: is no header (it reads '0,1'); expected a first line naming the "
                   "columns partition,node (and optionally core)"),
    ("partition,nodes\n", "line 1: names the column 'nodes'"),
    ("partition,node,node\n", "line 1: names the column 'node' twice"),
    ("partition,core\n", "line 1: has no column 'node'"),
    ("partition,,node\n", "line 1: has an unnamed column"),
    ("partition,node\n0,1\n1\n", "line 3: has 1 field; expected 2, one per column of the header"),
    ("partition,node\n0,1\n1,x\n", "line 3, column 'node': got 'x'; expected a node number"),
    ("partition,node\n0,1\n1,\n", "line 3, column 'node': is blank"),
    ("partition,node\n0,1\n-1,0\n", "line 3, column 'partition': got '-1'"),
    ("partition,node\n0,1\n1,0\n0,0\n", "line 4, column 'partition': repeats partition 0 "
                                        "(line 2); expected each partition on one row"),
    ("partition,node\n0,1\n2,0\n", "has no row for partition 1 (its 2 rows name partitions up "
                                   "to 2); expected one row for each partition 0 to N - 1"),
    ("partition,node,core\n0,1,-1\n1,0,3\n", "line 2, column 'core': is -1 where line 3 gives "
                                             "a core; expected a core on every row, or -1"),
    ("partition,node,core\n0,1,-2\n", "line 2, column 'core': got '-2'"),
    ('partition,node\n0,"1\n', "line 2: is not CSV"),
    ("partition,node\n0,1\x00\n", "line 2: holds a NUL character"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "message"), CSV_REFUSALS)
def test_csv_refusals_name_the_line_and_column(
    tmp_path: Path, text: str, message: str, reader: str
) -> None:
    path = tmp_path / "p.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_placement(path)
    assert str(err.value).startswith(f"{path}: {message}"), str(err.value)


def _npy(path: Path, array: np.ndarray) -> Path:
    with open(path, "wb") as fh:
        np.lib.format.write_array(fh, array)
    return path


def test_npy_takes_any_1d_integers(tmp_path: Path) -> None:
    for dtype in (np.int64, np.uint16, ">i4"):
        path = _npy(tmp_path / "p.npy", NODES.astype(dtype))
        assert np.array_equal(load_placement(path).node_of, NODES)


@pytest.mark.parametrize(
    ("array", "message"),
    [
        (NODES.astype(np.float64), "holds float64 values; expected integers"),
        (NODES.reshape(1, -1), "has shape (1, 7); expected a 1-D array"),
        (np.array([0, -1, 2]), "partition 1: has node -1; expected a node number in [0, "),
        (np.array([0, 2**31]), "partition 1: has node 2147483648"),
        (np.zeros(0, np.int32), "has no partitions"),
        (np.array([True, False]), "holds bool values"),
    ],
)
def test_npy_refusals(tmp_path: Path, array: np.ndarray, message: str) -> None:
    path = _npy(tmp_path / "p.npy", array)
    with pytest.raises(InputError) as err:
        load_placement(path)
    assert str(err.value).startswith(f"{path}: {message}"), str(err.value)


def test_npy_damage(tmp_path: Path) -> None:
    path = _npy(tmp_path / "p.npy", NODES)
    whole = path.read_bytes()
    cases = {
        whole[:-3]: "is truncated: 25 bytes of data for 28; expected 7 int32",
        whole + b"\0": "is longer than its header says",
        b"PK\x03\x04" + whole: "is not a .npy file",
        whole[:20]: "has a damaged .npy header",
        b"": "is not a .npy file",
    }
    for data, message in cases.items():
        path.write_bytes(data)
        with pytest.raises(InputError) as err:
            load_placement(path)
        assert str(err.value).startswith(f"{path}: {message}"), (data[:30], str(err.value))
    np.save(tmp_path / "o.npy", np.array([object()]), allow_pickle=True)
    with pytest.raises(InputError, match="holds object values"):
        load_placement(tmp_path / "o.npy")


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    for suffix in PLACEMENT_FORMATS.values():
        path = tmp_path / f"none{suffix}"
        with pytest.raises(InputError) as err:
            load_placement(path)
        assert str(err.value).startswith(f"{path}: ") and "No such file" in str(err.value)


def test_too_many_nodes_is_refused() -> None:
    with pytest.raises(InputError, match="nodes: got 2147483648"):
        Placement(np.array([0]), nodes=MAX_RANKS + 1, strategy="x")


def test_a_failed_write_leaves_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "p.part"
    path.write_text("old\n")
    with pytest.raises(InputError):
        save_placement(path, _placement(), "metis")
    assert path.read_text() == "old\n" and list(tmp_path.iterdir()) == [path]


def test_output_paths_are_checked(tmp_path: Path) -> None:
    assert check_output_path(tmp_path / "new" / "deeper" / "p.part", "--out").name == "p.part"
    with pytest.raises(InputError, match=r"--out .*: is a folder; expected a file name"):
        check_output_path(tmp_path, "--out")
    (tmp_path / "file").write_text("")
    with pytest.raises(InputError, match=r"file is not a folder"):
        check_output_path(tmp_path / "file" / "p.part", "--out")


# Per-rank placements (place --ranks): a header line that the readers check.

#: 2x3 partitions on 2 nodes of 2 ranks each.
RANKED = Placement(
    np.array([0, 0, 1, 2, 3, 3], dtype=np.int32),
    nodes=4, strategy="geometric", seed=1, grid=(2, 3), per_rank=True,
)  # fmt: skip
HEADER = "# grapeshot placement: parts 2x3, 6 partitions, 4 ranks"


@pytest.mark.parametrize("fmt", list(PLACEMENT_FORMATS))
def test_a_per_rank_placement_reads_back(tmp_path: Path, fmt: str, reader: str) -> None:
    path = tmp_path / f"p{PLACEMENT_FORMATS[fmt]}"
    save_placement(path, RANKED, fmt, metrics={"nodes": 2})
    back = load_placement(path)
    assert np.array_equal(back.node_of, RANKED.node_of)
    if fmt == "npy":  # no room for a header: ranks read as nodes
        assert not back.per_rank and back.nodes == 4 and back.grid is None
        return
    assert back.per_rank and back.nodes == 4 and back.grid == (2, 3)
    assert (back.strategy, back.seed) == (("geometric", 1) if fmt == "json" else ("unknown", None))
    # Under another name, the bytes say what it is.
    other = tmp_path / "p.txt"
    save_placement(other, RANKED, fmt)
    assert load_placement(other).per_rank


def test_the_per_rank_files_are_what_the_docs_say(tmp_path: Path) -> None:
    save_placement(tmp_path / "p.part", RANKED, "part")
    assert (tmp_path / "p.part").read_text() == HEADER + "\n0\n0\n1\n2\n3\n3\n"
    save_placement(tmp_path / "p.csv", RANKED, "csv")
    lines = (tmp_path / "p.csv").read_text().splitlines()
    assert lines[:4] == [HEADER, "partition,rank", "0,0", "1,0"] and len(lines) == 8
    save_placement(tmp_path / "p.json", RANKED, "json")
    doc = json.loads((tmp_path / "p.json").read_text())
    assert (doc["ranks"], doc["parts"], doc["grid"]) == (4, 6, [2, 3])
    assert doc["rank_of"] == RANKED.node_of.tolist() and "node_of" not in doc
    one = Placement(np.zeros(1, dtype=int), nodes=1, strategy="x", grid=(1, 1), per_rank=True)
    save_placement(tmp_path / "one.part", one, "part")
    assert (tmp_path / "one.part").read_text().splitlines()[0] == (
        "# grapeshot placement: parts 1x1, 1 partition, 1 rank"
    )
    assert load_placement(tmp_path / "one.part").nodes == 1


def test_a_rank_without_partitions_still_counts(tmp_path: Path, reader: str) -> None:
    # The header says 4 ranks: the last one, with no partition, is still a rank of the run.
    path = tmp_path / "p.part"
    path.write_text("# grapeshot placement: parts 3, 3 partitions, 4 ranks\r\n0\r\n2\r\n1\r\n")
    back = load_placement(path)
    assert back.nodes == 4 and back.node_of.tolist() == [0, 2, 1] and back.grid == (3,)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("# 2x3\n0\n", "line 1: got '# 2x3'; expected a header '# grapeshot placement: parts "
                       "PXxPY[xPZ], P partitions, N ranks'"),
        ("# grapeshot placement: parts 2x3, 6 partitions, 4 nodes\n",
         "line 1: got '# grapeshot placement: parts 2x3, 6 partitions, 4 nodes'"),
        ("# grapeshot placement: parts 2x3x1x1, 6 partitions, 4 ranks\n", "line 1: got"),
        ("# grapeshot placement: parts 2x３, 6 partitions, 4 ranks\n", "line 1: got"),
        ("# grapeshot placement: parts 2x3, 7 partitions, 4 ranks\n0\n",
         "line 1: says parts 2x3 (6 partitions) and 7 partitions; expected a grid of positive "
         "sizes whose product is the partition count"),
        ("# grapeshot placement: parts 0x3, 0 partitions, 4 ranks\n", "line 1: says parts 0x3"),
        ("# grapeshot placement: parts 2x3, 6 partitions, 0 ranks\n", "line 1: says 0 ranks; "
                                                                       "expected 1 to 2147483647"),
        ("# grapeshot placement: parts 2x3, 6 partitions, 2147483648 ranks\n",
         "line 1: says 2147483648 ranks"),
        ("#" + "x" * 300 + "\n0\n", "line 1: is longer than 256 bytes"),
        (HEADER + "\n", "line 1: has nothing after it; expected a per-rank .part file"),
        (HEADER + "\n\n\n", "line 1: has nothing after it"),
        (HEADER + "\n0\n0\n1\n2\n3\n", "line 1: says 6 partitions, and the file has 5 lines "
                                       "after it; expected one per partition"),
        (HEADER + "\n0\n0\n1\n2\n3\n3\n0\n", "line 1: says 6 partitions, and the file has 7"),
        (HEADER + "\n0\n0\n4\n2\n3\n3\n", "line 4: got '4'; expected a rank in [0, 3] (line 1 "
                                          "says 4 ranks)"),
        (HEADER + "\n0\n\n1\n2\n3\n3\n", "line 3: is blank; expected a rank in [0, 3]"),
        (HEADER + "\n0\n0\n# x\n", "line 4: got '# x'"),
        (HEADER + "\n0\n\xff\n", "line 3: is not UTF-8 text"),
    ],
)  # fmt: skip
def test_a_header_that_disagrees_is_refused_naming_the_line(
    tmp_path: Path, text: str, message: str, reader: str
) -> None:
    for suffix in (".part", ".txt"):
        path = tmp_path / f"p{suffix}"
        # A lone byte 0xff stands for itself (not UTF-8); the rest is UTF-8 text.
        path.write_bytes(text.encode("latin-1" if "\xff" in text else "utf-8"))
        with pytest.raises(InputError) as err:
            load_placement(path)
        assert str(err.value).startswith(f"{path}: {message}"), str(err.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (HEADER + "\n", "line 1: has nothing after it; expected a per-rank placement CSV"),
        (HEADER + "\npartition,node\n0,0\n", "line 2: names the column 'node'; expected a first "
                                             "line naming the columns partition,rank"),
        (HEADER + "\npartition,rank\n", "line 1: says 6 partitions, and the file has 0 rows"),
        (HEADER + "\npartition,rank\n0,0\n1,0\n2,1\n3,2\n4,3\n5,3\n5,3\n",
         "line 1: says 6 partitions, and the file has 7 rows"),
        (HEADER + "\npartition,rank\n0,0\n1,0\n2,1\n3,2\n4,3\n9,3\n",
         "line 8, column 'partition': got '9'; expected a partition number in [0, 5]"),
        (HEADER + "\npartition,rank\n0,0\n1,0\n2,1\n3,2\n4,4\n5,3\n",
         "line 7, column 'rank': got '4'; expected a rank in [0, 3] (line 1 says 4 ranks)"),
        (HEADER + "\npartition,rank\n0,0\n1,0\n2,1\n3,2\n4,3\n4,3\n",
         "line 8, column 'partition': repeats partition 4 (line 7)"),
    ],
)  # fmt: skip
def test_a_csv_header_that_disagrees_is_refused_naming_the_line(
    tmp_path: Path, text: str, message: str, reader: str
) -> None:
    path = tmp_path / "p.csv"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_placement(path)
    assert str(err.value).startswith(f"{path}: {message}"), str(err.value)


def test_a_per_rank_csv_in_any_row_order(tmp_path: Path, reader: str) -> None:
    path = tmp_path / "p.csv"
    path.write_text(HEADER + "\n rank , partition\n0,1\n3,5\n0,0\n\n1,2\n2,3\n3,4\n")
    back = load_placement(path)
    assert back.node_of.tolist() == RANKED.node_of.tolist() and back.per_rank


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"grid": None}, "p.json: grid: missing"),
        ({"grid": [3, 3]}, "p.json: grid: is 3x3, 9 partitions; expected 1 to 3 positive "
                           "partition counts whose product is 6"),
        ({"grid": [2, "3"]}, 'p.json: grid: is [2, "3"]'),
        ({"parts": 7}, "p.json: parts: is 7; expected 6, the ranks in rank_of"),
        ({"ranks": 3}, "p.json: rank_of: has ranks out of range; expected [0, 3)"),
        ({"ranks": 4.0}, "p.json: ranks: is 4.0; expected an integer"),
        ({"ranks": None}, "p.json: ranks: missing"),
    ],
)  # fmt: skip
def test_a_per_rank_json_that_disagrees_is_refused(tmp_path: Path, change, message) -> None:
    doc = {**RANKED.to_dict(), **change}
    doc = {k: v for k, v in doc.items() if v is not None}
    (tmp_path / "p.json").write_text(json.dumps(doc))
    with pytest.raises(InputError) as err:
        load_placement(tmp_path / "p.json")
    assert str(err.value).startswith(f"{tmp_path}/{message}"), str(err.value)
