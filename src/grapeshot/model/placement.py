"""Placements (partition → node) and the metrics that judge them on a workload.

LIF, the load imbalance factor, is the source paper's: ``max / mean − 1`` over nodes of one
step's load. On machines whose nodes differ in cores the load compared is per core (a node
with twice the cores is expected to carry twice the work); on equal nodes that is the same
number as the paper's.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from grapeshot.model.atomic import write_text_atomic
from grapeshot.model.errors import InputError, read_input_text
from grapeshot.model.machine import Machine
from grapeshot.model.workload import Workload


@dataclass(frozen=True, eq=False)
class Placement:
    """Which node (and optionally which core) each partition runs on.

    Parameters
    ----------
    node_of
        int32, shape ``(P,)``: node of each partition.
    nodes
        Number of nodes of the machine placed on.
    strategy
        Name of the strategy that made it.
    seed
        Seed it was made with (``None`` for deterministic strategies given no seed).
    core_of
        Optional int32, shape ``(P,)``: core within the node, where a strategy decides it.
    """

    node_of: np.ndarray
    nodes: int
    strategy: str
    seed: int | None = None
    core_of: np.ndarray | None = None

    def __post_init__(self) -> None:
        node_of = np.asarray(self.node_of)
        if node_of.ndim != 1 or not np.issubdtype(node_of.dtype, np.integer):
            raise InputError("node_of", f"has shape {node_of.shape}", "a 1-D integer array")
        if self.nodes < 1:
            raise InputError("nodes", f"got {self.nodes}", "an integer >= 1")
        if len(node_of) and (node_of.min() < 0 or node_of.max() >= self.nodes):
            raise InputError("node_of", "has nodes out of range", f"[0, {self.nodes})")
        object.__setattr__(self, "node_of", node_of.astype(np.int32, copy=False))
        if self.core_of is not None:
            core_of = np.asarray(self.core_of)
            if core_of.shape != node_of.shape or not np.issubdtype(core_of.dtype, np.integer):
                raise InputError(
                    "core_of", f"has shape {core_of.shape}", f"{node_of.shape} integers"
                )
            if len(core_of) and (core_of.min() < 0 or core_of.max() > np.iinfo(np.int32).max):
                raise InputError("core_of", "has cores out of range", "indices >= 0")
            object.__setattr__(self, "core_of", core_of.astype(np.int32, copy=False))

    @property
    def n_parts(self) -> int:
        """Number of partitions placed."""
        return len(self.node_of)

    def counts(self) -> np.ndarray:
        """Partitions per node, shape ``(nodes,)``."""
        return np.bincount(self.node_of, minlength=self.nodes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the placement file)."""
        out: dict[str, Any] = {
            "format": "grapeshot-placement",
            "version": 1,
            "strategy": self.strategy,
            "seed": self.seed,
            "nodes": self.nodes,
            "parts": self.n_parts,
            "node_of": self.node_of.tolist(),
        }
        if self.core_of is not None:
            out["core_of"] = self.core_of.tolist()
        return out


def save_placement(path: str | os.PathLike[str], placement: Placement, **extra: Any) -> None:
    """Write the placement file (JSON) atomically; ``extra`` adds fields such as metrics."""
    write_text_atomic(path, json.dumps({**placement.to_dict(), **extra}) + "\n")


def load_placement(path: str | os.PathLike[str]) -> Placement:
    """Read a placement file written by :func:`save_placement`."""
    where = str(path)
    text = read_input_text(path, "a placement JSON file")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where} line {exc.lineno}", f"invalid JSON: {exc.msg}", None) from None
    if not isinstance(data, dict) or data.get("format") != "grapeshot-placement":
        raise InputError(where, "is not a grapeshot placement", '"format": "grapeshot-placement"')
    for key in ("node_of", "nodes", "strategy"):
        if key not in data:
            raise InputError(f"{where}: {key}", "missing", None)
    try:
        return Placement(
            node_of=np.asarray(data["node_of"], dtype=np.int64),
            nodes=int(data["nodes"]),
            strategy=str(data["strategy"]),
            seed=data.get("seed"),
            core_of=None if data.get("core_of") is None else np.asarray(data["core_of"]),
        )
    except (TypeError, ValueError, OverflowError) as exc:
        if isinstance(exc, InputError):
            raise InputError(f"{where}: {exc.where}", exc.problem, exc.expected) from None
        raise InputError(where, f"malformed placement ({exc})", None) from None


@dataclass(frozen=True, eq=False)
class PlacementMetrics:
    """How a placement does on a workload.

    Attributes
    ----------
    node_load
        float64, ``(steps, nodes)``: summed partition cost per node per step (workload units).
    lif
        float64, ``(steps,)``: load imbalance factor per step, ``max/mean − 1`` of the per-core
        load (0 for a step with no load).
    bytes_cut
        Bytes per step of halo messages whose ends are on different nodes.
    bytes_total
        Bytes per step of all halo messages.
    neighbour_nodes
        int64, ``(nodes,)``: how many other nodes each node exchanges halos with.
    """

    node_load: np.ndarray
    lif: np.ndarray
    bytes_cut: int
    bytes_total: int
    neighbour_nodes: np.ndarray

    @property
    def lif_mean(self) -> float:
        """Mean of the per-step LIF."""
        return float(self.lif.mean())

    @property
    def lif_max(self) -> float:
        """Largest per-step LIF."""
        return float(self.lif.max())


def load_imbalance(load: np.ndarray, cores: np.ndarray | None = None) -> np.ndarray:
    """LIF of each row of ``load`` (``(..., nodes)``): ``max/mean − 1`` of load per core."""
    per_core = load if cores is None else load / cores
    mean = per_core.mean(axis=-1)
    peak = per_core.max(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(mean > 0, peak / np.where(mean > 0, mean, 1.0) - 1.0, 0.0)


def placement_metrics(
    placement: Placement, workload: Workload, machine: Machine | None = None
) -> PlacementMetrics:
    """Evaluate ``placement`` on ``workload`` (and the cores of ``machine``, if given)."""
    if placement.n_parts != workload.n_parts:
        raise InputError(
            "placement",
            f"places {placement.n_parts} partitions",
            f"{workload.n_parts}, the workload's",
        )
    n = placement.nodes
    if machine is not None and machine.nodes != n:
        raise InputError("placement", f"is for {n} nodes", f"{machine.nodes}, the machine's")
    assign = sp.csr_matrix(
        (np.ones(placement.n_parts), (np.arange(placement.n_parts), placement.node_of)),
        shape=(placement.n_parts, n),
    )
    node_load = np.asarray((assign.T @ workload.cost.T).T)
    cores = None if machine is None else machine.cores().astype(np.float64)
    lif = load_imbalance(node_load, cores)
    halo = workload.halo
    src_node = placement.node_of[halo.sources()]
    dst_node = placement.node_of[halo.indices]
    cut = src_node != dst_node
    pairs = np.unique(np.stack([src_node[cut], dst_node[cut]]), axis=1)
    neighbours = np.bincount(pairs[0], minlength=n) if pairs.size else np.zeros(n, np.int64)
    return PlacementMetrics(
        node_load=node_load,
        lif=lif,
        bytes_cut=int(halo.nbytes[cut].sum()),
        bytes_total=int(halo.nbytes.sum()),
        neighbour_nodes=neighbours.astype(np.int64),
    )
