"""``grapeshot map``'s inputs fuzzed: TreeMatch's tleaf text and MatrixMarket files.

Each gets random bytes (``--tleaf`` is a command-line argument: non-UTF-8 bytes arrive as
lone surrogates), near-valid input (a valid tleaf or matrix file with one word, line or byte
damaged) and valid input that must read back exactly; a tleaf and a small matrix that parse
are then mapped with TreeMatch, which must either map every task or refuse in one line. The
property: a result, or one InputError naming ``--tleaf`` and its field (``--tleaf: a2``) or
the file and its line; never another exception. tests/model/test_topology.py fuzzes both on
random text too.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

from grapeshot.model.errors import InputError
from grapeshot.model.topology import TreeTopology, parse_tleaf, read_affinity_matrix
from grapeshot.place.mapping import map_tasks
from tests.fuzz import example_file, fuzz


def _example(data: bytes | str) -> Path:
    return example_file(data, ".mtx")


#: The matrix reader goes through a temporary file and scipy: a share of the quick pass.
FILE_SETTINGS = fuzz(0.4)


def _tleaf_or_named_error(text: str) -> TreeTopology | None:
    try:
        tree = parse_tleaf(text)
    except InputError as exc:
        assert exc.where.startswith("--tleaf"), str(exc)
        return None
    assert tree.leaves == math.prod(tree.arities) >= 1
    assert all(math.isfinite(c) and c >= 0 for c in tree.costs)
    return tree


# --- tleaf --------------------------------------------------------------------------------

#: Arguments as the shell hands them over: any bytes, decoded as Python decodes argv.
ARGV_TEXT = st.binary(max_size=60).map(lambda b: b.decode("utf-8", "surrogateescape"))


@fuzz()
@given(ARGV_TEXT, st.booleans())
def test_tleaf_fuzz_any_bytes(text: str, keyword: bool) -> None:
    _tleaf_or_named_error(("tleaf " if keyword else "") + text)


#: Words a damaged tleaf may hold.
BAD_WORDS = st.one_of(
    st.sampled_from(["", "0", "-1", "1.5", "1e3", "nan", "inf", "-0", "+2", "0x10", "1_0", "٣",
                     "²", "9" * 5000, str(2**24), str(2**24 + 1), str(2**64), "tleaf", "\x00",
                     "\u00a0", "1e400", "4.9e-324"]),
    st.integers(-3, 70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=6),
)  # fmt: skip


@st.composite
def valid_trees(draw: st.DrawFn) -> TreeTopology:
    arities = draw(st.lists(st.integers(1, 6), min_size=1, max_size=5))
    costs = draw(
        st.lists(
            st.integers(0, 10**6).map(float) | st.floats(0, 1e300),
            min_size=len(arities),
            max_size=len(arities),
        )
    )
    return TreeTopology(tuple(arities), tuple(costs))


@fuzz()
@given(valid_trees(), st.data())
def test_tleaf_fuzz_one_damaged_word(tree: TreeTopology, data: st.DataObject) -> None:
    words = tree.to_tleaf().split()
    how = data.draw(st.sampled_from(["word", "drop", "extra", "swap"]))
    i = data.draw(st.integers(0, len(words) - 1))
    if how == "word":
        words[i] = data.draw(BAD_WORDS)
    elif how == "drop":
        del words[i]
    elif how == "extra":
        words.insert(i, data.draw(BAD_WORDS))
    else:
        j = data.draw(st.integers(0, len(words) - 1))
        words[i], words[j] = words[j], words[i]
    sep = data.draw(st.sampled_from([" ", "\t", "\n", "  ", "\u3000"]))
    _tleaf_or_named_error(sep.join(words))


@fuzz()
@given(valid_trees())
def test_tleaf_fuzz_round_trip(tree: TreeTopology) -> None:
    back = parse_tleaf(f"\n {tree.to_tleaf()} \n")
    assert back.arities == tree.arities and back.costs == tree.costs


@fuzz(0.3)
@given(
    st.one_of(valid_trees().map(TreeTopology.to_tleaf), st.lists(BAD_WORDS, max_size=6).map(
        lambda w: "tleaf " + " ".join(w))),
    st.integers(1, 12),
    st.integers(0, 2**32),
    st.sampled_from([None, 1, 2, 3]),
)  # fmt: skip
def test_tleaf_fuzz_maps_tasks(text: str, tasks: int, seed: int, oversub: int | None) -> None:
    """A tree that parses is one TreeMatch maps onto: every task on a leaf, or one line."""
    tree = _tleaf_or_named_error(text)
    if tree is None:
        return
    rng = np.random.default_rng(seed)
    a = sp.random(tasks, tasks, density=0.4, random_state=rng, format="csr") * 1e3
    try:
        result = map_tasks(a + a.T, tree, "treematch", oversub=oversub, seed=seed)
    except InputError as exc:
        assert "\n" not in str(exc) and exc.where, str(exc)
        return
    core_of = np.asarray(result["core_of"])
    assert core_of.shape == (tasks,) and ((core_of >= 0) & (core_of < tree.leaves)).all()


# --- MatrixMarket --------------------------------------------------------------------------


def _matrix_or_named_error(path: Path) -> sp.csr_array | None:
    try:
        a = read_affinity_matrix(path)
    except InputError as exc:
        assert exc.where.startswith(str(path)) and "\n" not in str(exc), str(exc)
        return None
    assert a.shape[0] == a.shape[1] >= 1
    assert a.nnz == 0 or (np.isfinite(a.data).all() and a.data.min() >= 0)
    return a


@FILE_SETTINGS
@given(st.binary(max_size=300))
def test_matrix_market_fuzz_any_bytes(data: bytes) -> None:
    _matrix_or_named_error(_example(data))


MATRICES = (
    st.integers(1, 7)
    .flatmap(
        lambda n: st.lists(
            st.lists(
                st.sampled_from([0.0, 0.0, 1.0, 2.5, 1e3, 7.0, 1e300]), min_size=n, max_size=n
            ),
            min_size=n,
            max_size=n,
        )
    )
    .map(np.array)
)


def _mm_text(m: np.ndarray, symmetry: str, fmt: str, field: str) -> str:
    """What scipy's mmwrite writes for ``m``."""
    path = _example(b"")
    data = sp.coo_array(m) if fmt == "coordinate" else m
    if symmetry == "symmetric":
        data = sp.coo_array(np.triu(m) + np.triu(m, 1).T) if fmt == "coordinate" else np.triu(
            m) + np.triu(m, 1).T  # fmt: skip
    scipy.io.mmwrite(path, data, symmetry=symmetry, field=field)
    return path.read_text()


#: Tokens a damaged line may hold.
BAD_TOKENS = st.one_of(
    st.sampled_from(["", "0", "-1", "1.5", "nan", "inf", "-inf", "1e400", "0x1", "٣", "²",
                     "9" * 400, "9" * 5000, str(2**63), str(2**24 + 1), "%", "%%MatrixMarket",
                     "complex", "hermitian", "pattern", "array", "\x00", "e", "."]),
    st.integers(-3, 10).map(str),
    st.text(max_size=5),
)  # fmt: skip


@FILE_SETTINGS
@given(
    MATRICES,
    st.sampled_from(["general", "symmetric"]),
    st.sampled_from(["coordinate", "array"]),
    st.sampled_from(["real", "integer"]),
    st.data(),
)
def test_matrix_market_fuzz_one_damaged_token(m, symmetry, fmt, field, data) -> None:
    if field == "integer":
        m = np.minimum(m, 1e9).astype(np.int64)
    lines = _mm_text(m, symmetry, fmt, field).splitlines()
    i = data.draw(st.integers(0, len(lines) - 1))
    tokens = lines[i].split(" ")
    how = data.draw(st.sampled_from(["token", "drop", "extra", "line"]))
    if how == "token":
        tokens[data.draw(st.integers(0, len(tokens) - 1))] = data.draw(BAD_TOKENS)
    elif how == "drop":
        del tokens[data.draw(st.integers(0, len(tokens) - 1))]
    elif how == "extra":
        tokens.append(data.draw(BAD_TOKENS))
    else:
        tokens = []
    lines[i] = " ".join(tokens)
    end = data.draw(st.sampled_from(["\n", "", " ", "x", "\r", "%"]))  # the last line's end
    _matrix_or_named_error(_example("\n".join(lines) + end))


@FILE_SETTINGS
@given(
    MATRICES, st.sampled_from(["general", "symmetric"]), st.sampled_from(["coordinate", "array"])
)
def test_matrix_market_fuzz_round_trip(m: np.ndarray, symmetry: str, fmt: str) -> None:
    if symmetry == "symmetric":
        m = np.triu(m) + np.triu(m, 1).T
    a = _matrix_or_named_error(_example(_mm_text(m, symmetry, fmt, "real")))
    assert a is not None and np.array_equal(a.toarray(), m)


def test_matrix_market_scipy_crashes_are_refused_or_read() -> None:
    # scipy's reader dies of SIGSEGV (found by the fuzzers above) on a NUL byte in the
    # entries, and on a last line holding anything after its number with no newline after
    # it. A NUL is refused by its line; the last line is given its newline and read.
    array = "%%MatrixMarket matrix array real general\n"
    coordinate = "%%MatrixMarket matrix coordinate real general\n"
    for text in (array + "2 2\n1\n2 \x00\n3\n4\n", coordinate + "2 2 1\n1 2 3 \x00\n"):
        path = _example(text)
        try:
            read_affinity_matrix(path)
        except InputError as exc:
            assert exc.where == f"{path} line {text.count(chr(10), 0, text.index(chr(0))) + 1}"
        else:
            raise AssertionError("a NUL byte was read")
    for text in (array + "2 2\n1\n2\n3\n4 ", array + "2 2\n1\n2\n3\n4x",
                 coordinate + "2 2 2\n1 1 2\n2 2 3 ", array + "2 2\n1\n2\n3\n4\r"):  # fmt: skip
        a = read_affinity_matrix(_example(text))
        assert a.shape == (2, 2) and a.sum() in (10.0, 5.0)
    assert _matrix_or_named_error(_example(array + "2 2\n1 ")) is None  # truncated: refused
