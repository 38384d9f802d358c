"""The topology model: TreeMatch's tleaf trees, node trees, the network's hop counts."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

from grapeshot.model.errors import InputError
from grapeshot.model.presets import PRESETS, preset
from grapeshot.model.topology import (
    TreeTopology,
    machine_topology,
    network_graph,
    node_topology,
    parse_tleaf,
    read_affinity_matrix,
)
from grapeshot.sim.network import network_model
from tests.fuzz import fuzz


def test_tleaf_of_the_issue() -> None:
    t = parse_tleaf("tleaf 3 32 1000 2 100 16 10")
    assert t.arities == (32, 2, 16) and t.leaves == 1024
    # Costs cumulate bottom-up: across nodes 1110, across sockets 110, same socket 10.
    assert t.cumulative_costs().tolist() == [1110, 110, 10, 0]
    assert t.spans().tolist() == [1024, 32, 16, 1]
    assert t.meet_depth([0, 0, 0, 0], [0, 1, 16, 32]).tolist() == [3, 2, 1, 0]
    assert t.to_tleaf() == "tleaf 3 32 1000 2 100 16 10"
    assert parse_tleaf("  tleaf 1 4 0\n").leaves == 4


def test_distances_are_bottom_up_for_non_uniform_arities() -> None:
    # Spec §2.11: arities 2, 4, 8; leaves 0 and 5 share an 8-core node: cost 1, 2 hops.
    t = parse_tleaf("tleaf 3 2 100 4 10 8 1")
    depth = int(t.meet_depth(0, 5))
    assert t.cumulative_costs()[depth] == 1
    assert 2 * (t.depth - depth) == 2
    assert int(t.meet_depth(0, 8)) == 1 and int(t.meet_depth(0, 32)) == 0


@pytest.mark.parametrize(
    ("arity", "expected"), [(16, (2, 2, 2, 2)), (12, (3, 2, 2)), (6, (3, 2)), (7, (7,)), (2, (2,))]
)
def test_arity_decomposition(arity: int, expected: tuple[int, ...]) -> None:
    assert TreeTopology((arity,), (1.0,)).decomposed() == expected


def test_oversubscription_adds_a_free_level_of_slots() -> None:
    t = node_topology(preset("plafrim").node).oversubscribed(3)
    assert t.arities == (2, 4, 3) and t.costs[-1] == 0.0
    # The slots of physical core p are 3p .. 3p + 2, in the tree order of the cores.
    assert t.physical()[:6].tolist() == [0, 1, 2, 6, 7, 8]
    with pytest.raises(InputError, match="--oversub"):
        t.oversubscribed(0)


def test_plafrim_physical_numbering_differs_from_logical() -> None:
    t = node_topology(preset("plafrim").node)
    assert t.physical().tolist() == [0, 2, 4, 6, 1, 3, 5, 7]
    # Physical cores 0 and 1 sit on different sockets; 0 and 2 on the same one.
    pos = t.position()
    assert int(t.meet_depth(pos[0], pos[1])) == 0
    assert int(t.meet_depth(pos[0], pos[2])) == 1


def test_machine_topology_puts_nodes_on_top() -> None:
    t = machine_topology(preset("plafrim").with_nodes(3))
    assert t.arities == (3, 2, 4) and t.leaves == 24
    assert t.physical()[8:16].tolist() == [8, 10, 12, 14, 9, 11, 13, 15]


@pytest.mark.parametrize("name", list(PRESETS))
@pytest.mark.parametrize("nodes", [1, 7, 64, 130])
def test_network_hops_are_the_simulators(name: str, nodes: int) -> None:
    m = preset(name).with_nodes(nodes)
    ids = np.arange(nodes)
    ours = network_graph(m).hops(ids[:, None], ids[None, :])
    sims = network_model(m).hops(ids[:, None], ids[None, :])
    np.testing.assert_array_equal(ours, sims)
    dist = network_graph(m).distance_matrix()
    assert (np.diag(dist) == 0).all() and (dist[~np.eye(nodes, dtype=bool)] >= 1).all()


def test_bluewaters_keeps_gemini_weights_and_two_nodes_per_router() -> None:
    g = network_graph(preset("bluewaters-xe6").with_nodes(16))
    assert g.link_weights == (2.0, 1.0, 2.0)
    assert g.params["npr"] == 2
    assert int(g.distance(0, 1)) == 1  # same router, different nodes


# --- the tleaf parser ------------------------------------------------------------------------

BAD_TLEAF = {
    "": "keyword",
    "tree 1 4 1": "keyword",
    "tleaf": "L",
    "tleaf x 4 1": "L",
    "tleaf 0": "L",
    "tleaf 2 4 1": "levels",
    "tleaf 1 4 1 5": "levels",
    "tleaf 1 0 1": "a1",
    "tleaf 2 4 1 -3 1": "a2",
    "tleaf 1 4.5 1": "a1",
    "tleaf 1 4 -1": "c1",
    "tleaf 1 4 nan": "c1",
    "tleaf 2 4 1 8 inf": "c2",
    "tleaf 2 100000 1 100000 1": "a2",
}


@pytest.mark.parametrize("text", sorted(BAD_TLEAF))
def test_bad_tleaf_names_the_field(text: str) -> None:
    with pytest.raises(InputError) as info:
        parse_tleaf(text)
    assert info.value.where == f"--tleaf: {BAD_TLEAF[text]}"


@fuzz()
@given(st.text(max_size=40))
def test_tleaf_parser_fuzz_text(text: str) -> None:
    try:
        t = parse_tleaf(text)
    except InputError as exc:
        assert exc.where.startswith("--tleaf")
    else:
        assert t.leaves >= 1


@fuzz()
@given(
    st.lists(
        st.one_of(
            st.integers(-5, 50),
            st.floats(allow_nan=True),
            st.sampled_from(["x", "1e3", "-0", "٣", "+2"]),
        ),
        max_size=9,
    )
)
def test_tleaf_parser_fuzz_words(words: list) -> None:
    text = "tleaf " + " ".join(str(w) for w in words)
    try:
        t = parse_tleaf(text)
    except InputError as exc:
        assert exc.where.startswith("--tleaf: ")
    else:
        assert len(t.arities) == int(words[0])


# --- the MatrixMarket reader ------------------------------------------------------------------


def test_reads_symmetric_and_general_matrices(tmp_path) -> None:
    a = sp.coo_matrix(np.array([[0, 3, 0], [3, 0, 1], [0, 1, 0]], dtype=float))
    scipy.io.mmwrite(tmp_path / "s.mtx", a, symmetry="symmetric")
    scipy.io.mmwrite(tmp_path / "g.mtx", a)
    for name in ("s.mtx", "g.mtx"):
        got = read_affinity_matrix(tmp_path / name)
        np.testing.assert_array_equal(got.toarray(), a.toarray())


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("", "line 1"),
        ("hello\n", "line 1"),
        ("%%MatrixMarket matrix coordinate complex general\n2 2 0\n", "line 1 (field)"),
        ("%%MatrixMarket matrix coordinate real hermitian\n2 2 0\n", "line 1 (symmetry)"),
        ("%%MatrixMarket matrix coordinate real general\n", "line 2"),
        ("%%MatrixMarket matrix coordinate real general\n% c\n2 3 0\n", "line 3"),
        ("%%MatrixMarket matrix coordinate real general\n2 x 0\n", "line 2"),
        ("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 -4\n", "entries"),
        ("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 9 4\n", "entries"),
        ("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 2 4\n", "entries"),
    ],
)
def test_bad_matrix_files_name_the_line(tmp_path, text: str, where: str) -> None:
    path = tmp_path / "bad.mtx"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        read_affinity_matrix(path)
    assert info.value.where == f"{path} {where}"


def test_missing_matrix_file(tmp_path) -> None:
    with pytest.raises(InputError, match="cannot read"):
        read_affinity_matrix(tmp_path / "nope.mtx")


HEADERS = [
    "%%MatrixMarket matrix coordinate real general\n",
    "%%MatrixMarket matrix coordinate integer symmetric\n",
    "%%MatrixMarket matrix array real general\n",
    "%%MatrixMarket matrix coordinate pattern general\n",
]


@fuzz(0.3)
@given(st.sampled_from(HEADERS), st.text(alphabet="0123456789 .-e\n%x", max_size=60))
def test_matrix_reader_fuzz(tmp_path_factory, header: str, body: str) -> None:
    path = tmp_path_factory.mktemp("mm") / "f.mtx"
    path.write_text(header + body)
    try:
        a = read_affinity_matrix(path)
    except InputError as exc:
        assert exc.where.startswith(str(path))
    else:
        assert a.shape[0] == a.shape[1] >= 1
        assert a.nnz == 0 or a.data.min() >= 0


@fuzz(0.1)
@given(st.binary(max_size=80))
def test_matrix_reader_fuzz_bytes(tmp_path_factory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("mmb") / "f.mtx"
    path.write_bytes(b"%%MatrixMarket matrix coordinate real general\n" + data)
    try:
        read_affinity_matrix(path)
    except InputError as exc:
        assert exc.where.startswith(str(path))
