"""Topologies for mapping: the inside of a node as a tree, the network between nodes as a graph.

:class:`TreeTopology` is TreeMatch's view of a machine (spec ``placement-algorithms.md``
§2.1–2.2): a balanced tree given by its arities from the root down, a cost per level, and the
physical (OS) id of every leaf in tree order. It comes from

- TreeMatch's ``tleaf`` text, ``"tleaf L a1 c1 a2 c2 ... aL cL"`` (:func:`parse_tleaf`): ``L``
  levels, level ``i`` has arity ``ai`` and cost ``ci``; leaves are numbered in breadth order;
- a machine's :class:`~grapeshot.model.machine.NodeTree` (:func:`node_topology`), whose
  ``core_numbering`` gives the physical ids (PlaFRIM's differ from the logical ones);
- a whole machine (:func:`machine_topology`): one more level of the nodes on top.

Costs follow the reference: the cost of a pair that meets at depth ``d`` (0 = root) is the sum
of the level costs from ``d`` down (``cumulative_costs``), the leaves' own level costing 0.
Distances divide leaf *positions* by the spans below each depth, bottom-up, so they are right
for non-uniform arity lists (the C reference's evaluator divides top-down, §2.11).

:class:`NetworkGraph` is the network between a machine's nodes: the hop counts of
:mod:`grapeshot.sim.network` (same routing, same torus box, checked by a test) plus one for
leaving the node; the torus keeps Blue Waters' Gemini link weights (x = z = 2 y).
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from grapeshot.model.errors import InputError, check_int
from grapeshot.model.machine import DEFAULT_ARITY, MAX_CORES, Machine, NodeTree

#: Largest tree TreeMatch text may describe (leaves), to refuse memory bombs in one line: the
#: most cores a machine may have, so that every machine's tree of cores is one.
MAX_LEAVES = MAX_CORES

#: Default per-level costs of a node tree by depth (hwloc XML table of the reference, §2.2).
_DEPTH_COSTS = (1024.0, 512.0, 256.0, 128.0, 64.0, 32.0, 16.0, 8.0, 4.0, 2.0, 1.0)


@dataclass(frozen=True)
class TreeTopology:
    """A balanced tree of cores, TreeMatch style.

    Parameters
    ----------
    arities
        Children of a node at each depth, from the root down; ``prod(arities)`` leaves.
    costs
        Cost of communicating through a common ancestor at each depth (own value, not
        cumulated), same length as ``arities``.
    numbering
        Physical id of each leaf in tree order (a permutation of ``0..leaves-1``), or ``None``
        for the identity.
    names
        A name per level (``"node"``, ``"socket"``, ``"core"``, ``"slot"``...).
    """

    arities: tuple[int, ...]
    costs: tuple[float, ...]
    numbering: tuple[int, ...] | None = None
    names: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        arities = tuple(self.arities)
        if not arities:
            raise InputError("tree.arities", "is empty", "at least one level")
        arities = tuple(check_int(a, f"tree.arities[{i}]") for i, a in enumerate(arities))
        costs = tuple(self.costs)
        if len(costs) != len(arities):
            raise InputError("tree.costs", f"has {len(costs)} entries", f"{len(arities)}")
        for i, c in enumerate(costs):
            if isinstance(c, bool) or not isinstance(c, int | float | np.number):
                raise InputError(f"tree.costs[{i}]", f"got {c!r}", "a number >= 0")
            if not (math.isfinite(float(c)) and float(c) >= 0):
                raise InputError(f"tree.costs[{i}]", f"got {c!r}", "a finite number >= 0")
        leaves = math.prod(arities)
        if leaves > MAX_LEAVES:
            raise InputError("tree.arities", f"give {leaves} leaves", f"at most {MAX_LEAVES}")
        object.__setattr__(self, "arities", arities)
        object.__setattr__(self, "costs", tuple(float(c) for c in costs))
        if self.numbering is not None:
            numbering = tuple(int(x) for x in self.numbering)
            if sorted(numbering) != list(range(leaves)):
                raise InputError(
                    "tree.numbering",
                    f"got {len(numbering)} ids",
                    f"a permutation of 0..{leaves - 1}",
                )
            object.__setattr__(self, "numbering", numbering)
        if self.names is not None:
            if len(self.names) != len(arities):
                raise InputError("tree.names", f"has {len(self.names)}", f"{len(arities)}")
            object.__setattr__(self, "names", tuple(str(n) for n in self.names))

    @property
    def depth(self) -> int:
        """Number of levels ``L`` (leaves are at depth ``L``)."""
        return len(self.arities)

    @property
    def leaves(self) -> int:
        """Number of leaves (cores, or slots when oversubscribed)."""
        return math.prod(self.arities)

    def spans(self) -> np.ndarray:
        """Leaves under one node at each depth ``0..L``, int64 ``(L + 1,)`` (``spans[L] == 1``)."""
        out = np.ones(self.depth + 1, dtype=np.int64)
        for d in range(self.depth - 1, -1, -1):
            out[d] = out[d + 1] * self.arities[d]
        return out

    def cumulative_costs(self) -> np.ndarray:
        """Cost of a pair meeting at depth ``0..L``, float64 ``(L + 1,)``; depth ``L`` is 0."""
        out = np.zeros(self.depth + 1)
        for d in range(self.depth - 1, -1, -1):
            out[d] = out[d + 1] + self.costs[d]
        return out

    def physical(self) -> np.ndarray:
        """Physical id of each leaf position, int64 ``(leaves,)``."""
        if self.numbering is None:
            return np.arange(self.leaves, dtype=np.int64)
        return np.asarray(self.numbering, dtype=np.int64)

    def position(self) -> np.ndarray:
        """Leaf position of each physical id (inverse of :meth:`physical`), int64."""
        phys = self.physical()
        out = np.empty_like(phys)
        out[phys] = np.arange(len(phys))
        return out

    def meet_depth(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Depth of the lowest common ancestor of leaf *positions* ``a`` and ``b`` (vectorised).

        ``L`` when ``a == b``; 0 when they only meet at the root.
        """
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        out = np.zeros(np.broadcast(a, b).shape, dtype=np.int64)
        for span in self.spans()[1:]:
            out += (a // span) == (b // span)
        return out

    def oversubscribed(self, r: int) -> TreeTopology:
        """This tree with ``r`` slots under every leaf (a level of cost 0, §2.2).

        The slots of physical core ``p`` are ``p * r .. p * r + r - 1``.
        """
        r = check_int(r, "--oversub")
        if r == 1:
            return self
        phys = self.physical()
        numbering = (phys[:, None] * r + np.arange(r)[None, :]).ravel()
        names = None if self.names is None else (*self.names, "slot")
        return TreeTopology((*self.arities, r), (*self.costs, 0.0), tuple(numbering), names)

    def decomposed(self) -> tuple[int, ...]:
        """Arities after TreeMatch's decomposition (§2.2): 16 → 2,2,2,2; 12 → 3,2,2; 6 → 3,2.

        From the deepest level up, an arity ``a > 3`` divisible by 3 becomes ``(3, a/3)``, else
        an even ``a > 2`` becomes ``(2, a/2)``, recursively; primes stay. Only the grouping
        uses it; costs are evaluated on the tree itself.
        """
        out: list[int] = []
        for a in self.arities:
            out.extend(_split(a))
        return tuple(out)

    def to_tleaf(self) -> str:
        """The ``tleaf`` text of this tree (costs as given, numbering not included)."""
        body = " ".join(f"{a} {_fmt(c)}" for a, c in zip(self.arities, self.costs, strict=True))
        return f"tleaf {self.depth} {body}"


def _fmt(c: float) -> str:
    return str(int(c)) if float(c).is_integer() else repr(float(c))


def _split(a: int) -> list[int]:
    if a > 3 and a % 3 == 0:
        return [3, *_split(a // 3)]
    if a > 2 and a % 2 == 0:
        return [2, *_split(a // 2)]
    return [a]


def parse_tleaf(text: str, where: str = "--tleaf") -> TreeTopology:
    """Read TreeMatch's ``tleaf`` text: ``"tleaf L a1 c1 ... aL cL"``.

    Parameters
    ----------
    text
        The line (surrounding whitespace and newlines allowed; a ``.tgt`` file's content).
    where
        What to name in errors (an option or a file name).

    Raises
    ------
    InputError
        Naming the field (``L``, ``a2``, ``c1``...) and what was expected.
    """
    if not isinstance(text, str):
        raise InputError(where, f"got {type(text).__name__}", "text 'tleaf L a1 c1 ...'")
    words = text.split()
    if not words or words[0] != "tleaf":
        got = repr(words[0]) if words else "nothing"
        raise InputError(f"{where}: keyword", f"got {got}", "'tleaf' first")
    if len(words) < 2:
        raise InputError(f"{where}: L", "missing", "the number of levels, an integer >= 1")
    levels = _int_word(words[1], f"{where}: L", 1, 64)
    if len(words) != 2 + 2 * levels:
        raise InputError(
            f"{where}: levels",
            f"{len(words) - 2} values after L={levels}",
            f"{2 * levels} (an arity and a cost per level)",
        )
    arities, costs = [], []
    leaves = 1
    for i in range(levels):
        a = _int_word(words[2 + 2 * i], f"{where}: a{i + 1}", 1, MAX_LEAVES)
        leaves *= a
        if leaves > MAX_LEAVES:
            raise InputError(f"{where}: a{i + 1}", f"gives {leaves} leaves", f"<= {MAX_LEAVES}")
        arities.append(a)
        word = words[3 + 2 * i]
        try:
            c = float(word)
        except ValueError:
            raise InputError(f"{where}: c{i + 1}", f"got {word!r}", "a number >= 0") from None
        if not (math.isfinite(c) and c >= 0):
            raise InputError(f"{where}: c{i + 1}", f"got {word!r}", "a finite number >= 0")
        costs.append(c)
    return TreeTopology(tuple(arities), tuple(costs))


def _int_word(word: str, where: str, lo: int, hi: int) -> int:
    # Past 18 digits it is out of range anyway, and int() refuses 4,300 digits and more.
    if not word.isascii() or not word.isdigit() or len(word.lstrip("0")) > 18:
        raise InputError(where, f"got {word[:40]!r}", f"an integer in [{lo}, {hi}]")
    value = int(word)
    if not lo <= value <= hi:
        raise InputError(where, f"got {word!r}", f"an integer in [{lo}, {hi}]")
    return value


def node_topology(node: NodeTree, costs: tuple[float, ...] | None = None) -> TreeTopology:
    """The tree of one node: its levels, costs by depth, its physical core numbering.

    Parameters
    ----------
    node
        The node's hardware tree (levels from the root down).
    costs
        Own cost per level; default the reference's hwloc table by depth shifted so the
        deepest level costs 1 (e.g. socket 2, core 1: cores on one socket cost 1, on two 3).
    """
    arities = tuple(a for _, a in node.levels)
    names = tuple(n for n, _ in node.levels)
    if costs is None:
        costs = tuple(float(2 ** (len(arities) - 1 - d)) for d in range(len(arities)))
    numbering = None if node.core_numbering is None else node.core_numbering
    return TreeTopology(arities, tuple(costs), numbering, names)


def machine_topology(machine: Machine, node_cost: float = 100.0) -> TreeTopology:
    """The whole machine as one tree: a level of ``machine.nodes`` nodes above the node tree.

    Leaf ``node * cores + core_physical`` is core ``core_physical`` of node ``node``. The
    network level costs ``node_cost`` (own value); the network's shape is not in a tree, see
    :class:`NetworkGraph` for it.
    """
    inner = node_topology(machine.node)
    if machine.node_cores is not None and len(set(machine.node_cores)) > 1:
        raise InputError("machine.node_cores", "differ between nodes", "identical nodes")
    phys = inner.physical()
    cores = inner.leaves
    numbering = (np.arange(machine.nodes)[:, None] * cores + phys[None, :]).ravel()
    names = ("node", *(inner.names or ()))
    return TreeTopology(
        (machine.nodes, *inner.arities), (float(node_cost), *inner.costs), tuple(numbering), names
    )


# --- the network -----------------------------------------------------------------------------


def fat_tree_shape(nodes: int, params: Mapping[str, Any]) -> tuple[int, int]:
    """``(arity, levels)`` of a fat tree over ``nodes`` nodes with network ``params``.

    ``arity`` defaults to :data:`~grapeshot.model.machine.DEFAULT_ARITY`; ``levels`` to the
    fewest switch levels whose ``arity ** levels`` leaves hold the nodes (at least 1). The
    simulator's network model and the mapping's network graph both size the tree so.
    """
    arity = int(params.get("arity", DEFAULT_ARITY))
    levels = int(params.get("levels", 0))
    if levels == 0:
        levels, reach = 1, arity
        while reach < nodes:
            levels += 1
            reach *= arity
    return arity, levels


@njit(cache=True, inline="always")
def fat_tree_level(arity: int, levels: int, a: int, b: int) -> int:
    """Fat tree: the level (1 = leaf switch) of the lowest switch above nodes ``a`` and ``b``.

    Scalars only, inlined: the simulator calls it once per message inside compiled code.
    """
    span = arity
    for lv in range(1, levels):
        if a // span == b // span:
            return lv
        span *= arity
    return levels


@njit(cache=True)
def _fat_tree_levels(arity: int, levels: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`fat_tree_level` of every pair ``(a[i], b[i])``, int64."""
    out = np.empty(a.shape[0], dtype=np.int64)
    for i in range(a.shape[0]):
        out[i] = fat_tree_level(arity, levels, a[i], b[i])
    return out


def torus_box(routers: int) -> tuple[int, int, int]:
    """The smallest near-cubic ``(X, Y, Z)``, ``X >= Y >= Z``, with ``X * Y * Z >= routers``.

    Among boxes of the least volume, the one with the smallest ``X - Z`` wins. The simulator's
    network model (``sim.network``) and the mapping's network graph both lay routers out so.
    """
    best: tuple[int, int, int, int, int] | None = None
    top = max(1, math.ceil(routers ** (1 / 3)) + 1)
    for z in range(1, top + 1):
        for y in range(z, max(z, math.isqrt(max(routers // z, 1)) + 2) + 1):
            x = max(y, -(-routers // (y * z)))
            key = (x * y * z, x - z, x, y, z)
            if best is None or key < best:
                best = key
    assert best is not None
    return best[2], best[3], best[4]


@dataclass(frozen=True, eq=False)
class NetworkGraph:
    """The network between a machine's nodes, for mapping.

    Attributes
    ----------
    nodes
        Number of compute nodes.
    topology
        ``flat``, ``fat-tree`` or ``torus3d``.
    params
        int parameters: ``arity``/``levels`` (fat tree), ``dims``/``npr`` (torus).
    link_weights
        Torus link capacities per axis (x, y, z), relative; Gemini: (2, 1, 2).
    """

    nodes: int
    topology: str
    params: dict
    link_weights: tuple[float, float, float] = (1.0, 1.0, 1.0)

    def hops(self, a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
        """Switch or router hops beyond the nearest pair (``sim.network``'s count), int64."""
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        if self.topology == "flat":
            return np.zeros(np.broadcast(a, b).shape, dtype=np.int64)
        if self.topology == "fat-tree":
            a, b = np.broadcast_arrays(a, b)
            h = _fat_tree_levels(
                int(self.params["arity"]), int(self.params["levels"]), a.ravel(), b.ravel()
            ).reshape(a.shape)
            return np.where(a == b, 0, 2 * (h - 1))
        nx, ny, nz = self.params["dims"]
        npr = self.params["npr"]
        ra, rb = a // npr, b // npr
        out = np.zeros(np.broadcast(a, b).shape, dtype=np.int64)
        for ca, cb, size in (
            (ra // (ny * nz), rb // (ny * nz), nx),
            ((ra // nz) % ny, (rb // nz) % ny, ny),
            (ra % nz, rb % nz, nz),
        ):
            d = (cb - ca) % size
            out += np.minimum(d, size - d)
        return out

    def distance(self, a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
        """Hops a message makes between nodes: 0 on one node, else ``hops + 1``, int64."""
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        return np.where(a == b, 0, self.hops(a, b) + 1)

    def distance_matrix(self) -> np.ndarray:
        """``distance`` between every pair of nodes, int64 ``(nodes, nodes)``."""
        ids = np.arange(self.nodes)
        return self.distance(ids[:, None], ids[None, :])


def network_graph(machine: Machine) -> NetworkGraph:
    """The :class:`NetworkGraph` of ``machine`` (same defaults as the simulator's model)."""
    net = machine.network
    n = machine.nodes
    if net.topology == "flat":
        return NetworkGraph(n, "flat", {})
    if net.topology == "fat-tree":
        arity, levels = fat_tree_shape(n, net.params)
        return NetworkGraph(n, "fat-tree", {"arity": arity, "levels": levels})
    npr = int(net.params.get("nodes_per_router", 1))
    routers = -(-n // npr)
    # Machine's own check has refused dims too small for its nodes.
    dims = tuple(int(d) for d in net.params.get("dims", torus_box(routers)))
    weights = tuple(float(w) for w in net.params.get("link_weights", (1.0, 1.0, 1.0)))
    return NetworkGraph(n, "torus3d", {"dims": dims, "npr": npr}, weights)  # type: ignore[arg-type]


# --- the affinity matrix file ------------------------------------------------------------------

_MM_FORMATS = {"coordinate", "array"}
_MM_FIELDS = {"real", "integer", "pattern", "double"}
_MM_SYMMETRY = {"general", "symmetric"}


def _scan_bytes(path: str | os.PathLike[str]) -> tuple[int | None, bool]:
    """``(line of the first NUL byte or None, whether the file ends with a newline)``, read a
    megabyte at a time: scipy's MatrixMarket reader dies of SIGSEGV on a NUL byte, and on a
    last line holding anything after its number with no newline after it."""
    line, last = 1, b"\n"
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(1 << 20):
                at = chunk.find(b"\x00")
                if at >= 0:
                    return line + chunk.count(b"\n", 0, at), True
                line += chunk.count(b"\n")
                last = chunk[-1:]
    except OSError:
        pass  # the reader says what is wrong with the file
    return None, last == b"\n"


def read_affinity_matrix(path: str | os.PathLike[str]):
    """Read a square affinity matrix (bytes or messages between tasks) from a MatrixMarket file.

    The header (line 1) must be ``%%MatrixMarket matrix coordinate|array
    real|integer|pattern general|symmetric``; the size line must give a square matrix; the
    entries are read with :func:`scipy.io.mmread`.

    Returns
    -------
    scipy.sparse.csr_array
        float64 ``(n, n)``, entries ``>= 0`` and finite.

    Raises
    ------
    InputError
        Naming the file and the line or field that is wrong.
    """
    import scipy.io
    import scipy.sparse as sp

    name = str(path)
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError as exc:
        raise InputError(
            name, f"cannot read ({exc.strerror or exc})", "a MatrixMarket file"
        ) from None
    text = head.decode("utf-8", errors="replace")
    lines = text.splitlines()
    if not lines:
        raise InputError(f"{name} line 1", "is empty", "'%%MatrixMarket matrix coordinate ...'")
    words = lines[0].lower().split()
    if len(words) != 5 or words[0] != "%%matrixmarket" or words[1] != "matrix":
        raise InputError(
            f"{name} line 1",
            f"got {lines[0][:60]!r}",
            "'%%MatrixMarket matrix <coordinate|array> <real|integer|pattern> <general|symmetric>'",
        )
    for value, allowed, field in (
        (words[2], _MM_FORMATS, "format"),
        (words[3], _MM_FIELDS, "field"),
        (words[4], _MM_SYMMETRY, "symmetry"),
    ):
        if value not in allowed:
            raise InputError(
                f"{name} line 1 ({field})", f"got {value!r}", f"one of {', '.join(sorted(allowed))}"
            )
    size_line = next(
        (i for i, line in enumerate(lines[1:], start=2) if line.strip() and line[0] != "%"), None
    )
    if size_line is None:
        raise InputError(f"{name} line 2", "no size line", "'rows cols [entries]'")
    sizes = lines[size_line - 1].split()
    expected_sizes = 3 if words[2] == "coordinate" else 2
    # At most 18 digits: past them int() may refuse (4,300 digits), and no size is that large.
    if len(sizes) != expected_sizes or not all(
        s.isascii() and s.isdigit() and len(s) <= 18 for s in sizes
    ):
        raise InputError(
            f"{name} line {size_line}",
            f"got {lines[size_line - 1][:60]!r}",
            "rows cols entries" if expected_sizes == 3 else "rows cols",
        )
    rows, cols = int(sizes[0]), int(sizes[1])
    if rows != cols or rows == 0:
        raise InputError(
            f"{name} line {size_line}", f"is {rows} x {cols}", "a square n x n, n >= 1"
        )
    if rows > MAX_LEAVES:
        raise InputError(f"{name} line {size_line}", f"has {rows} rows", f"at most {MAX_LEAVES}")
    nul, newline_at_end = _scan_bytes(path)
    if nul is not None:
        raise InputError(f"{name} line {nul}", "holds a NUL byte", "MatrixMarket text")
    source: str | os.PathLike[str] | io.BytesIO = path
    if not newline_at_end:  # given one, scipy reads the last line like any other
        with open(path, "rb") as fh:
            source = io.BytesIO(fh.read() + b"\n")
    try:
        matrix = scipy.io.mmread(source)
    except (ValueError, IndexError, TypeError, OverflowError, UnicodeError, OSError) as exc:
        problem = str(exc).splitlines()[0][:100] if str(exc) else type(exc).__name__
        raise InputError(
            f"{name} entries", f"cannot be read ({problem})", "valid entries"
        ) from None
    a = sp.csr_array(matrix) if sp.issparse(matrix) else sp.csr_array(np.asarray(matrix))
    if a.shape != (rows, cols):
        raise InputError(f"{name} entries", f"give shape {a.shape}", f"({rows}, {cols})")
    if np.issubdtype(a.dtype, np.complexfloating):
        raise InputError(f"{name} line 1 (field)", "is complex", "real numbers")
    a = a.astype(np.float64)
    if a.nnz and (not np.all(np.isfinite(a.data)) or a.data.min() < 0):
        raise InputError(f"{name} entries", "hold negative or non-finite values", "numbers >= 0")
    return a
