"""Graph partitioners as mapping building blocks: METIS (pymetis), KaHIP, Scotch (pyscotch).

Each is optional: importing this module never fails; calling a partitioner whose package is
missing raises :class:`~grapeshot.model.errors.InputError` naming the package to install.

- :func:`partition` splits a weighted graph into ``k`` parts of balanced vertex weight
  (METIS k-way, KaHIP ``kaffpa``) and then fixes the part sizes exactly (:func:`fix_sizes`);
- :func:`scotch_tleaf_map` maps a graph onto Scotch's ``tleaf`` target architecture (the same
  tree TreeMatch reads), Scotch's own topology-aware mapping.

Scotch and METIS take integer edge weights: bytes are scaled to integers in ``[1, 10**6]``
(:func:`integer_weights`), so relative weights survive.
"""

from __future__ import annotations

import contextlib
import importlib
import io

import numpy as np
import scipy.sparse as sp
from numba import njit

from grapeshot.model.errors import InputError
from grapeshot.model.topology import TreeTopology

#: Scotch's option number of deterministic runs (library.h, ``SCOTCH_OPTIONNUMDETERMINISTIC``).
SCOTCH_OPTIONNUMDETERMINISTIC = 0

#: Partitioner name → the Python package that provides it.
PACKAGES = {"metis": "pymetis", "kahip": "kahip", "scotch": "pyscotch"}


def require(name: str):
    """Import the package behind partitioner ``name`` or raise a clear InputError."""
    package = PACKAGES[name]
    try:
        # pyscotch announces the library it loaded on stderr; keep the CLI's output clean.
        with contextlib.redirect_stderr(io.StringIO()):
            module = importlib.import_module(package)
            if name == "scotch":
                importlib.import_module("pyscotch.libscotch")
        return module
    except (ImportError, OSError):
        raise InputError(
            "--strategy",
            f"{name!r} needs the Python package {package!r}, which is not installed",
            f"`pip install {package}` (or another --strategy)",
        ) from None


def available(name: str) -> bool:
    """Whether partitioner ``name``'s package can be imported."""
    try:
        require(name)
    except InputError:
        return False
    return True


def integer_weights(data: np.ndarray, top: int = 10**6) -> np.ndarray:
    """Positive float weights scaled to integers in ``[1, top]`` (int64)."""
    data = np.asarray(data, dtype=np.float64)
    if data.size == 0:
        return np.zeros(0, dtype=np.int64)
    scale = top / data.max() if data.max() > 0 else 1.0
    return np.maximum(1, np.rint(data * scale)).astype(np.int64)


@njit(cache=True)
def _fix_sizes(part, targets, indptr, indices, data, order):
    """Move the least attached vertices of oversized parts into undersized ones."""
    k = targets.shape[0]
    counts = np.zeros(k, dtype=np.int64)
    for v in range(part.shape[0]):
        counts[part[v]] += 1
    under = 0
    for i in range(order.shape[0]):
        v = order[i]
        p = part[v]
        if counts[p] <= targets[p]:
            continue
        # The undersized part it is most attached to, else the first undersized one.
        best = -1
        best_w = 0.0
        for e in range(indptr[v], indptr[v + 1]):
            q = part[indices[e]]
            if counts[q] < targets[q] and data[e] > best_w:
                best = q
                best_w = data[e]
        if best < 0:
            while counts[under] >= targets[under]:
                under += 1
            best = under
        part[v] = best
        counts[p] -= 1
        counts[best] += 1
    return part


def fix_sizes(part: np.ndarray, targets: np.ndarray, w: sp.csr_array) -> np.ndarray:
    """Make part ``p`` hold exactly ``targets[p]`` vertices, moving the least attached ones.

    Parameters
    ----------
    part
        int ``(n,)`` part of each vertex.
    targets
        int ``(k,)`` wanted sizes, summing to ``n``.
    w
        ``(n, n)`` symmetric affinity.
    """
    part = np.asarray(part, dtype=np.int64).copy()
    targets = np.asarray(targets, dtype=np.int64)
    n = part.shape[0]
    same = part[w.tocoo().row] == part[w.tocoo().col]
    coo = w.tocoo()
    attach = np.bincount(coo.row[same], weights=coo.data[same], minlength=n)
    order = np.lexsort((np.arange(n), attach)).astype(np.int64)
    return _fix_sizes(
        part, targets, w.indptr.astype(np.int64), w.indices.astype(np.int64), w.data, order
    )


def balanced_targets(n: int, k: int) -> np.ndarray:
    """``k`` sizes summing to ``n``, ``floor`` or ``ceil(n / k)``, larger ones first."""
    out = np.full(k, n // k, dtype=np.int64)
    out[: n % k] += 1
    return out


def partition(
    w: sp.csr_array,
    k: int,
    *,
    method: str = "metis",
    vweights: np.ndarray | None = None,
    targets: np.ndarray | None = None,
    seed: int = 0,
) -> np.ndarray:
    """Split the graph ``w`` into ``k`` parts of balanced weight, sizes fixed to ``targets``.

    Parameters
    ----------
    w
        Symmetric ``(n, n)`` affinity, zero diagonal.
    k
        Number of parts.
    method
        ``"metis"`` (pymetis k-way) or ``"kahip"`` (kaffpa, eco mode).
    vweights
        Vertex weights (loads), default 1; scaled to integers.
    targets
        Exact part sizes (default balanced counts); ``None`` with ``vweights`` keeps the
        partitioner's weight balance instead.
    seed
        The partitioner's seed.

    Returns
    -------
    numpy.ndarray
        int64 ``(n,)``: part of each vertex.
    """
    n = w.shape[0]
    if k <= 1 or n == 0:
        return np.zeros(n, dtype=np.int64)
    if k >= n:
        return np.arange(n, dtype=np.int64)
    xadj = w.indptr.astype(np.int64)
    adjncy = w.indices.astype(np.int64)
    ew = integer_weights(w.data)
    vw = None if vweights is None else integer_weights(vweights, top=10**4)
    if method == "metis":
        pymetis = require("metis")
        options = pymetis.Options(seed=int(seed))
        _, parts = pymetis.part_graph(
            int(k),
            adjacency=pymetis.CSRAdjacency(xadj, adjncy),
            vweights=None if vw is None else vw.tolist(),
            eweights=ew.tolist(),
            options=options,
        )
        part = np.asarray(parts, dtype=np.int64)
    elif method == "kahip":
        kahip = require("kahip")
        vwl = [1] * n if vw is None else vw.tolist()
        _, blocks = kahip.kaffpa(
            vwl, xadj.tolist(), ew.tolist(), adjncy.tolist(), int(k), 0.03, True, int(seed), 1
        )
        part = np.asarray(blocks, dtype=np.int64)
    else:
        raise InputError("partitioner", f"got {method!r}", "metis or kahip")
    if targets is None and vweights is None:
        targets = balanced_targets(n, k)
    if targets is not None:
        part = fix_sizes(part, targets, w)
    return part


def scotch_tleaf_map(w: sp.csr_array, tree: TreeTopology, *, seed: int = 0) -> np.ndarray:
    """Map the graph onto Scotch's ``tleaf`` architecture of ``tree``: leaf position of each.

    Scotch balances the load of the leaves (within its default 5 %), so the counts are not
    exact; callers fix them with :func:`fix_sizes`.
    """
    require("scotch")
    from pyscotch import Architecture, Context, Graph

    n = w.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    weights = integer_weights(w.data).astype(np.float64)
    g = Graph.from_scipy_sparse(
        sp.csr_array((weights, w.indices, w.indptr), shape=w.shape), use_edge_weights=True
    )
    arch = Architecture()
    # Scotch's tleaf link values are the cost of communicating through each level.
    links = np.maximum(1, np.rint(tree.cumulative_costs()[:-1])).astype(np.int64)
    arch.tree_leaf(tree.depth, np.asarray(tree.arities, dtype=np.int64), links)
    # A context of its own: deterministic (Scotch's threads otherwise race), seeded, so the
    # same inputs and seed give the same mapping whatever ran before in the process.
    ctx = Context()
    ctx.option_set(SCOTCH_OPTIONNUMDETERMINISTIC, 1)
    ctx.random_seed(int(seed))
    ctx.random_reset()
    bound = ctx.bind_graph(g)
    try:
        return np.asarray(bound.map(arch), dtype=np.int64)
    finally:
        bound.close()
        ctx.close()
