"""A dynamic strategy replayed over a trace's loads, without a machine model.

``grapeshot place`` with a dynamic strategy answers "where would my partitions be, step by
step, and how balanced" from the trace alone: the strategy starts from its static placement,
is called every ``interval`` steps (or at the steps it asks for) with the trace's costs of
the steps since its last call as the measured loads, and its proposal holds from that step
on. No time passes between steps here: what a migration costs in run time is the
simulator's question (``grapeshot simulate``); this replay counts what moved.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from grapeshot.model.errors import InputError
from grapeshot.model.machine import Machine
from grapeshot.model.placement import PlacementMetrics, load_imbalance
from grapeshot.model.workload import Workload, partition_bounds
from grapeshot.place.dynamic import DynamicStrategy, call_steps


@dataclass(frozen=True)
class RebalanceStep:
    """One call of the strategy that moved partitions: at ``step``, ``parts`` partitions of
    ``bytes`` bytes of state (a real run's are ``grapeshot.runtime.driver.Rebalanced``; an
    app's :class:`grapeshot.model.program.Migration` moves particles, not partitions)."""

    step: int
    parts: int
    bytes: int


@dataclass(frozen=True, eq=False)
class DynamicReplay:
    """Where every partition was at every step.

    Attributes
    ----------
    node_of
        int32, ``(steps, P)``: the node of each partition in each step.
    migrations
        The calls that moved something, in step order.
    """

    node_of: np.ndarray
    migrations: tuple[RebalanceStep, ...]

    @property
    def migrated_bytes(self) -> int:
        """State bytes moved over the whole trace."""
        return sum(m.bytes for m in self.migrations)


def cells_per_part(workload: Workload) -> np.ndarray:
    """int64, ``(P,)``: cells each partition owns (C order over the partition grid)."""
    sizes = [np.diff(b) for b in partition_bounds(workload.domain_shape, workload.parts_shape)]
    return np.prod(np.meshgrid(*sizes, indexing="ij"), axis=0).ravel().astype(np.int64)


def halo_bytes_matrix(workload: Workload) -> sparse.csr_array:
    """``(P, P)`` symmetric: halo bytes two partitions exchange per step, both directions."""
    halo, n = workload.halo, workload.n_parts
    m = sparse.csr_array(
        (halo.nbytes.astype(np.float64), (halo.sources(), halo.indices)), shape=(n, n)
    )
    return (m + m.T).tocsr()


def replay_dynamic(
    workload: Workload,
    machine: Machine,
    strategy: DynamicStrategy,
    initial: np.ndarray,
    state_bytes: np.ndarray,
) -> DynamicReplay:
    """Run ``strategy`` over ``workload``'s steps from the placement ``initial``.

    Parameters
    ----------
    workload
        The trace: its costs are the loads the strategy is shown.
    machine
        Nodes and cores (the strategy's ``cores``; topology-aware ones read the rest).
    strategy
        A dynamic strategy (:mod:`grapeshot.place.dynamic`).
    initial
        int, ``(P,)``: the placement of step 0 (the strategy's ``initial`` static one).
    state_bytes
        int64, ``(P,)``: bytes a move of each partition carries.
    """
    steps, n_parts = workload.cost.shape
    current = np.asarray(initial, dtype=np.int64).copy()
    if current.shape != (n_parts,):
        raise InputError("initial placement", f"has shape {current.shape}", f"({n_parts},)")
    cores = machine.cores().astype(np.int64)
    comm = halo_bytes_matrix(workload)
    node_of = np.empty((steps, n_parts), dtype=np.int32)
    migrations: list[RebalanceStep] = []
    start = 0
    for cut in [*call_steps(strategy, steps), steps]:
        node_of[start:cut] = current
        if cut == steps:
            break
        proposal = strategy.rebalance(
            step=cut,
            loads=workload.cost[start:cut].copy(),
            node_of=current.copy(),
            cores=cores.copy(),
            state_bytes=np.asarray(state_bytes, dtype=np.int64).copy(),
            comm=comm,
            machine=machine,
        )
        if proposal is not None:
            new = np.asarray(proposal, dtype=np.int64)
            if new.shape != (n_parts,) or (n_parts and (new.min() < 0 or new.max() >= len(cores))):
                raise InputError(
                    f"dynamic strategy {strategy.name!r}",
                    f"proposed {new.shape} nodes in [{new.min()}, {new.max()}]",
                    f"({n_parts},) nodes in [0, {len(cores)})",
                )
            moved = new != current
            if moved.any():
                migrations.append(
                    RebalanceStep(cut, int(moved.sum()), int(np.asarray(state_bytes)[moved].sum()))
                )
            current = new
        start = cut
    return DynamicReplay(node_of=node_of, migrations=tuple(migrations))


def replay_metrics(replay: DynamicReplay, workload: Workload, machine: Machine) -> PlacementMetrics:
    """:class:`PlacementMetrics` of a replay: per-step loads under the placement of that step.

    ``bytes_cut`` is the mean over steps of the halo bytes crossing nodes; ``neighbour_nodes``
    is that of the last step's placement.
    """
    steps = workload.cost.shape[0]
    n = machine.nodes
    flat = (replay.node_of + (np.arange(steps) * n)[:, None]).ravel()
    node_load = np.bincount(flat, weights=workload.cost.ravel(), minlength=steps * n)
    node_load = node_load.reshape(steps, n)
    lif = load_imbalance(node_load, machine.cores().astype(np.float64))
    halo = workload.halo
    src, dst = halo.sources(), halo.indices
    cut = replay.node_of[:, src] != replay.node_of[:, dst]  # (steps, messages)
    bytes_cut = float((cut * halo.nbytes[None, :]).sum(axis=1).mean())
    last = replay.node_of[-1]
    pairs = np.unique(np.stack([last[src][cut[-1]], last[dst][cut[-1]]]), axis=1)
    neighbours = np.bincount(pairs[0], minlength=n) if pairs.size else np.zeros(n, np.int64)
    return PlacementMetrics(
        node_load=node_load,
        lif=lif,
        bytes_cut=round(bytes_cut),
        bytes_total=int(halo.nbytes.sum()),
        neighbour_nodes=neighbours.astype(np.int64),
    )
