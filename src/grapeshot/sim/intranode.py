"""Inside one node: what a step costs when chares are pinned to cores (TreeMatchLB figure 8).

The event simulator (:mod:`grapeshot.sim.engine`) models nodes and the network; on one node it
charges a copy at ``memcpy_bandwidth`` whatever the two cores are. TreeMatchLB's figure 8 is
about the cores: on one PlaFRIM node, whether two talking chares share a socket (its L3) or
not. This model charges that, per step, bulk-synchronously:

- every chare computes its load on its core; every message to a chare on another core is
  copied by the sender's core at the bandwidth of the level where the two cores meet
  (:data:`LEVEL_BANDWIDTH`: through the shared L3 of a socket, or across the sockets' link);
  messages between chares of one core cost nothing (a pointer hand-over);
- the link between two subtrees (the sockets' QPI) is shared: all bytes crossing it in a step
  take at least ``bytes / link_bandwidth``;
- the step ends when the busiest core and the busiest link are done:
  ``max(max_core (compute + copies), max_link (bytes / bandwidth))``.

The bandwidths are assumptions for a Nehalem X5550 node (a core copies ~6 GB/s through its
socket's L3, ~3 GB/s from the other socket's memory; the QPI carries ~10 GB/s per direction)
and are parameters.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from grapeshot.model.errors import InputError
from grapeshot.model.topology import TreeTopology

#: Bytes per second a core copies to a core meeting it at each depth of a 2-level node tree
#: (depth 0: across sockets, depth 1: same socket), assumption for PlaFRIM's Xeon X5550.
LEVEL_BANDWIDTH = (3e9, 6e9)
#: Bytes per second of the link between the root's children (QPI), per direction pair.
LINK_BANDWIDTH = 10e9


def node_step_time(
    core_of: np.ndarray,
    loads: np.ndarray,
    comm: sp.csr_array,
    tree: TreeTopology,
    *,
    level_bandwidth: Sequence[float] = LEVEL_BANDWIDTH,
    link_bandwidth: float = LINK_BANDWIDTH,
) -> dict[str, float]:
    """Seconds of one step of chares pinned on one node's cores (see the module docstring).

    Parameters
    ----------
    core_of
        int ``(P,)``: physical core of each chare.
    loads
        float ``(P,)``: compute seconds of each chare.
    comm
        ``(P, P)`` bytes chare ``i`` sends chare ``j`` per step (row = sender).
    tree
        The node's core tree (its physical numbering matters).
    level_bandwidth
        Copy bandwidth by meeting depth ``0 .. L-1`` (bytes/s).
    link_bandwidth
        Bandwidth of the link between two children of the root (bytes/s).

    Returns
    -------
    dict
        ``step`` (seconds), ``core_max`` (busiest core), ``link_max`` (busiest root link),
        ``cross_bytes`` (bytes between the root's children).
    """
    core_of = np.asarray(core_of, dtype=np.int64)
    loads = np.asarray(loads, dtype=np.float64)
    n = loads.shape[0]
    if core_of.shape != (n,) or (n and (core_of.min() < 0 or core_of.max() >= tree.leaves)):
        raise InputError(
            "core_of", "has the wrong shape or cores out of range", f"({n},) in [0, {tree.leaves})"
        )
    if len(level_bandwidth) != tree.depth:
        raise InputError(
            "level_bandwidth", f"has {len(level_bandwidth)} values", f"{tree.depth} (one per level)"
        )
    coo = sp.coo_array(comm)
    pos = tree.position()[core_of]
    depth = tree.meet_depth(pos[coo.row], pos[coo.col])
    bw = np.append(np.asarray(level_bandwidth, dtype=np.float64), np.inf)
    copy = coo.data / bw[depth]
    core_time = np.bincount(pos, weights=loads, minlength=tree.leaves)
    core_time += np.bincount(pos[coo.row], weights=copy, minlength=tree.leaves)
    span = tree.spans()[1]
    src_top, dst_top = pos[coo.row] // span, pos[coo.col] // span
    cross = src_top != dst_top
    k = tree.arities[0]
    link = np.bincount(
        src_top[cross] * k + dst_top[cross], weights=coo.data[cross], minlength=k * k
    )
    link_time = link / link_bandwidth
    core_max = float(core_time.max()) if len(core_time) else 0.0
    link_max = float(link_time.max()) if len(link_time) else 0.0
    return {
        "step": max(core_max, link_max),
        "core_max": core_max,
        "link_max": link_max,
        "cross_bytes": float(coo.data[cross].sum()),
    }
