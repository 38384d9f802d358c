"""What one rank of the task runtime knows before step 0: its partitions, their links to other
ranks, the arena and the index plans of every exchange, and which phases run as batches.

Everything here follows from the program, the placement and this rank's number; building it
is pure numpy (no MPI), so a plan can be built and checked for any rank in one process.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from grapeshot.model.program import (
    Batch,
    Block,
    Box,
    Offset,
    Phase,
    Program,
    face_offsets,
    graph_targets,
    make_block,
    needs_corners,
    neighbour_offsets,
)
from grapeshot.runtime.halo_plan import (
    Arena,
    GraphPlan,
    GridPlan,
    RankLinks,
    graph_plan,
    grid_plans,
    rank_links,
)
from grapeshot.runtime.plain_batch import is_numba_kernel, plain_batch


@dataclass(frozen=True, eq=False)
class RankPlan:
    """One rank's plan, fixed for a placement (see the module docstring).

    Attributes
    ----------
    program
        The program (every rank builds the same).
    rank
        This rank.
    node_of
        int ``(P,)``: the rank of each partition.
    boxes
        Every partition's box, by partition id (``program.boxes()``).
    blocks
        ``{partition: block}`` of the local partitions; grid and batch fields are views of
        the arena.
    links
        The halo links touching this rank's partitions.
    local
        The local partitions, ascending; a partition's *position* is its index here.
    position
        ``{partition: position}``.
    offsets
        ``neighbour_offsets(ndim)``: a halo's *slot* is its offset's index here.
    outgoing
        ``(partition, offsets of every halo it sends)`` per local partition that sends one,
        ascending (custom packers pack them in one call; empty when no exchange has them).
    batches
        ``{phase: Batch}`` of every phase the runtime runs in compiled calls.
    batched
        Those phases.
    arena
        The flat arrays holding every grid-exchanged and batched field of the local partitions.
    plans
        ``{phase: GridPlan}`` of every grid exchange (no custom packers).
    graph_plans
        ``{phase: GraphPlan}`` of every graph exchange.
    sources
        Ranks this rank receives halos from, ascending.
    feeds
        ``{source rank: int positions (n,)}``: the local partitions that rank's message
        completes a part of.
    need_template
        int ``(L,)``: how many source ranks' messages each local partition waits for.
    unfed
        int positions, ascending: the local partitions that wait for no message (their tasks
        run first in a phase with an exchange).
    all_batched
        Whether every phase is batched and none has a graph exchange: then nothing ever
        rebinds a block's array, and the arena never needs a refresh.
    """

    program: Program
    rank: int
    node_of: np.ndarray
    boxes: list[Box]
    blocks: dict[int, Block]
    links: RankLinks
    local: list[int]
    position: dict[int, int]
    offsets: list[Offset]
    outgoing: list[tuple[int, tuple[Offset, ...]]]
    batches: dict[int, Batch]
    batched: frozenset[int]
    arena: Arena
    plans: dict[int, GridPlan]
    graph_plans: dict[int, GraphPlan]
    sources: list[int]
    feeds: dict[int, np.ndarray]
    need_template: np.ndarray
    unfed: np.ndarray
    all_batched: bool

    @classmethod
    def build(
        cls,
        program: Program,
        node_of: np.ndarray,
        rank: int,
        blocks: dict[int, Block] | None = None,
        previous: Arena | None = None,
    ) -> RankPlan:
        """Plan rank ``rank`` of placement ``node_of``.

        Parameters
        ----------
        program
            The program.
        node_of
            int ``(P,)``: the rank of each partition.
        rank
            The rank to plan.
        blocks
            The local partitions' state to resume from (default: ``program.init_block``);
            their grid and batch fields are moved into the arena.
        previous
            This rank's arena before a rebalance: the partitions that stay keep their
            segments in it (:class:`~grapeshot.runtime.halo_plan.Arena`).
        """
        boxes = program.boxes()
        links = rank_links(boxes, node_of, rank, _exchanged_offsets(program))
        local = [int(p) for p in links.local_parts]
        if blocks is None:
            blocks = {p: make_block(program, boxes[p]) for p in local}
        phases = program.phases
        batches = {
            k: batch
            for k, ph in enumerate(phases)
            if (batch := _batch_of(program, ph, blocks[local[0]])) is not None
        }
        grid_names = {
            name for ph in phases if _is_grid(ph) for name in ph.exchange.fields
        }  # fmt: skip
        batch_names = {n for batch in batches.values() for n in batch.fields}
        names = tuple(sorted(grid_names | batch_names))
        all_batched = len(batches) == len(phases) and all(ph.graph is None for ph in phases)
        arena = Arena(names, links.local_parts, blocks, previous, held=all_batched)
        sources = links.sources
        need = links.waits_on.sum(axis=0).astype(np.int64)
        return cls(
            program=program,
            rank=rank,
            node_of=node_of,
            boxes=boxes,
            blocks=blocks,
            links=links,
            local=local,
            position={p: i for i, p in enumerate(local)},
            offsets=neighbour_offsets(len(program.parts_shape)),
            outgoing=_outgoing(links) if any(_is_custom(ph) for ph in phases) else [],
            batches=batches,
            batched=frozenset(batches),
            arena=arena,
            plans=grid_plans(
                links,
                boxes,
                arena,
                {
                    k: (ph.exchange.fields, ph.exchange.width)
                    for k, ph in enumerate(phases)
                    if _is_grid(ph)
                },
            ),
            graph_plans={
                k: graph_plan(graph_targets(ph.graph, boxes), node_of, rank)
                for k, ph in enumerate(phases)
                if ph.graph is not None
            },
            sources=sources,
            feeds={r: np.flatnonzero(links.waits_on[j]) for j, r in enumerate(sources)},
            need_template=need,
            unfed=np.flatnonzero(need == 0),
            all_batched=all_batched,
        )


def _batchable(phase: Phase) -> bool:
    """Whether the runtime may run the phase's batch: no custom packers, no migration."""
    return phase.migrate is None and (phase.exchange is None or _is_grid(phase))


def _batch_of(program: Program, phase: Phase, block: Block) -> Batch | None:
    """The batch the runtime runs for ``phase``: its own, one generated around its plain numba
    kernel (whose walls the kernel fills itself: a Python ``boundary`` needs the per-task
    path), or ``None``."""
    if not _batchable(phase):
        return None
    if phase.batch is not None:
        return phase.batch
    if phase.fields is None or not is_numba_kernel(phase.kernel):
        return None
    if phase.exchange is not None and phase.exchange.boundary is not None:
        return None
    work = program.work_field
    if work not in phase.fields or type(program).work is not Program.work:
        work = None
    ndims = tuple(np.ndim(block[f]) for f in phase.fields)
    return plain_batch(phase, len(program.parts_shape), ndims, work)


def _exchanged_offsets(program: Program) -> tuple[Offset, ...]:
    """The neighbours a rank's links cover: the faces alone when no halo needs a corner."""
    ndim = len(program.parts_shape)
    return neighbour_offsets(ndim) if needs_corners(program) else face_offsets(ndim)


def _outgoing(links: RankLinks) -> list[tuple[int, tuple[Offset, ...]]]:
    """Per local partition that sends a halo (ascending), the offsets of every one it sends,
    local or not: its local links', then each rank's in message order."""
    sent: dict[int, list[Offset]] = {}
    for link in [*links.local, *itertools.chain(*links.send.values())]:
        sent.setdefault(link.src, []).append(link.offset)
    return [(p, tuple(sent[p])) for p in sorted(sent)]


def _is_custom(phase: Phase) -> bool:
    """Whether the phase's exchange packs and unpacks its halos itself."""
    return phase.exchange is not None and not _is_grid(phase)


def _is_grid(phase: Phase) -> bool:
    """Whether the phase's exchange uses the planned grid packers (no custom pack/unpack)."""
    ex = phase.exchange
    return ex is not None and ex.pack is None and ex.unpack is None
