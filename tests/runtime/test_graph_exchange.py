"""Graph exchanges (payloads to arbitrary partitions): serial, planned, and on MPI ranks.

``Gossip`` is the toy heat program with a graph exchange before its diffusion phase: each
partition sends a few float64 buffers to fixed, scattered partitions (one of them twice), and
each receiver folds them into its state in an order-sensitive way and into a cell of its grid
field (which the halo exchange of the same phase then carries). The serial executor is checked
against a hand-written reference; ``python -m tests.runtime.test_graph_exchange`` under
mpiexec runs it on the task runtime (grid and batched phases, one and two threads, two
placements) and the test compares digests with the serial run.
"""

from __future__ import annotations

import dataclasses
import json
import sys

import numpy as np
import pytest

from grapeshot.model.program import Block, Box, GraphExchange, graph_targets
from grapeshot.runtime.halo_plan import graph_plan
from grapeshot.runtime.serial import run_serial
from tests.mpi_harness import run_mpi
from tests.runtime.toy_programs import BatchedHeat, Heat

STEPS = 6


def _targets_of(part: int, n: int) -> tuple[int, ...]:
    out = []
    for a, b in ((5, 1), (7, 3), (5, 1)):  # the first target twice: repeats are allowed
        t = (part * a + b) % n
        out.append(t if t != part else (part + 1) % n)
    return tuple(out)


def _payload(s: float, part: int, step: int, j: int) -> np.ndarray:
    return np.array([s + step, 0.5 * part, float(j)][: 1 + (part + j) % 3])


def _fold(s: float, src: int, buf: np.ndarray) -> float:
    return 0.75 * s + (src + 1) * float(buf.sum())


def _with_graph(cls):
    class Gossip(cls):
        name = f"gossip-{cls.name}"

        def __init__(self, parts=(4, 3)):
            super().__init__(parts=parts)
            graph = GraphExchange(self._targets, self._pack, self._unpack, self._nbytes)
            speed, diffuse, mass = self.phases
            self.phases = (speed, dataclasses.replace(diffuse, graph=graph), mass)

        def _targets(self, box: Box):
            return _targets_of(box.part, self.n_parts)

        def _nbytes(self, box: Box):
            return [8 * (1 + (box.part + j) % 3) for j in range(3)]

        def _pack(self, block: Block, box: Box, j: int) -> np.ndarray:
            return _payload(float(block["s"][0]), box.part, int(block["k"][0]), j)

        def _unpack(self, block: Block, box: Box, arrived) -> None:
            s = float(block["s"][0])
            for src, buf in arrived:
                s = _fold(s, src, buf)
                block["u"][box.ghost, box.ghost] += 1e-3 * float(buf.sum())
            block["s"][0] = s
            block["k"][0] += 1

        def init_block(self, box: Box) -> Block:
            block = super().init_block(box)
            block["s"] = np.array([float(box.part)])
            block["k"] = np.zeros(1, dtype=np.int64)
            return block

        def output_fields(self, block: Block, box: Box):
            out = super().output_fields(block, box)
            out["s"] = np.full(box.shape, block["s"][0])
            return out

    return Gossip


Gossip = _with_graph(Heat)
BatchedGossip = _with_graph(BatchedHeat)


def _reference_s(n: int, steps: int) -> np.ndarray:
    """The ``s`` of every partition after ``steps`` rounds, written directly."""
    s = np.arange(n, dtype=np.float64)
    for step in range(steps):
        inbox: list[list[tuple[int, np.ndarray]]] = [[] for _ in range(n)]
        for p in range(n):
            for j, q in enumerate(_targets_of(p, n)):
                inbox[q].append((p, _payload(s[p], p, step, j)))
        for q in range(n):
            for src, buf in sorted(inbox[q], key=lambda x: x[0]):
                s[q] = _fold(s[q], src, buf)
    return s


def test_serial_graph_exchange_matches_the_reference() -> None:
    program = Gossip(parts=(4, 3))
    run = run_serial(program, STEPS)
    got = np.array([b["s"][0] for b in run.blocks])
    assert np.array_equal(got, _reference_s(12, STEPS))  # bitwise: the same order of folds
    # Halo bytes: the graph's buffers per step plus the grid halo.
    for p in range(12):
        for j, q in enumerate(_targets_of(p, 12)):
            assert run.halo_bytes[(p, q)] >= STEPS * 8 * (1 + (p + j) % 3)
    plain = run_serial(Heat(parts=(4, 3)), STEPS)
    assert run.digest() != plain.digest()  # the graph reached the grid field


def test_graph_plan_covers_every_buffer_once() -> None:
    boxes = Gossip(parts=(4, 3)).boxes()
    targets = graph_targets(Gossip(parts=(4, 3)).phases[1].graph, boxes)
    node_of = np.array([0, 2, 1, 1, 0, 2, 2, 0, 1, 0, 0, 2])
    seen = []
    for rank in range(3):
        plan = graph_plan(targets, node_of, rank)
        for src, j, dst in plan.local:
            assert node_of[src] == node_of[dst] == rank
            seen.append((src, j, dst))
        for r, entries in plan.send.items():
            assert r != rank
            assert entries == sorted(entries)
            for src, j, dst in entries:
                assert node_of[src] == rank and node_of[dst] == r
                seen.append((src, j, dst))
        senders = {int(node_of[s]) for s, ts in enumerate(targets) for t in ts}
        expected = sorted(
            {int(node_of[s]) for s, ts in enumerate(targets) for t in ts if node_of[t] == rank}
            - {rank}
        )
        assert plan.sources == expected and set(expected) <= senders
    assert sorted(seen) == sorted(
        (s, j, t) for s, ts in enumerate(targets) for j, t in enumerate(ts)
    )


def test_graph_targets_are_checked() -> None:
    program = Gossip(parts=(2, 2))
    bad = GraphExchange(lambda box: (box.part,), program._pack, program._unpack, program._nbytes)
    with pytest.raises(ValueError, match="other partitions"):
        graph_targets(bad, program.boxes())


def test_halo_comm_sees_the_graph_and_keeps_grid_programs_unchanged() -> None:
    from grapeshot.apps.commbench import SMALL_CHUNK_BYTES, commbench_matrix, make_program
    from grapeshot.model.workload import grid_halo
    from grapeshot.runtime.driver import halo_comm

    m = commbench_matrix(12, chunk_bytes=SMALL_CHUNK_BYTES, seed=4).toarray()
    got = halo_comm(make_program("small", (3, 4), seed=4)).toarray()
    assert np.array_equal(got, m + m.T)
    heat = Heat(parts=(4, 3))
    halo = grid_halo(heat.domain_shape, heat.parts_shape, ghost=1, cell_bytes=8)
    grid = np.zeros((12, 12))
    for p in range(12):
        for k in range(halo.indptr[p], halo.indptr[p + 1]):
            grid[p, halo.indices[k]] = halo.nbytes[k]
    assert np.array_equal(halo_comm(heat).toarray(), grid + grid.T)
    gossip = halo_comm(Gossip(parts=(4, 3))).toarray()
    extra = np.zeros((12, 12))
    for p in range(12):
        for j, q in enumerate(_targets_of(p, 12)):
            extra[p, q] += 8 * (1 + (p + j) % 3)
    assert np.array_equal(gossip, grid + grid.T + extra + extra.T)


# --- on MPI ranks ---------------------------------------------------------------------------

CASES = [  # program, strategy, threads
    ("gossip", "birdshot", 1),
    ("gossip", "cyclic", 2),
    ("gossip-batched", "cyclic", 1),
    ("gossip-batched", "geometric", 2),
]
PROGRAMS = {"gossip": Gossip, "gossip-batched": BatchedGossip}


def main() -> None:
    from mpi4py import MPI

    from grapeshot.runtime.driver import run_program

    for name, strategy, threads in CASES:
        outcome = run_program(
            PROGRAMS[name](parts=(4, 3)),
            steps=STEPS,
            strategy=strategy,
            seed=1,
            comm=MPI.COMM_WORLD,
            threads=threads,
            timeout=60.0,
        )
        if outcome is not None:
            row = {"program": name, "strategy": strategy, "threads": threads}
            print(json.dumps({**row, **outcome.summary}), flush=True)


@pytest.mark.mpi
def test_task_runtime_graph_exchange_equals_serial() -> None:
    serial = {name: run_serial(cls(parts=(4, 3)), STEPS).digest() for name, cls in PROGRAMS.items()}
    proc = run_mpi(3, ["-m", "tests.runtime.test_graph_exchange"], work=10)
    rows = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
    assert [(r["program"], r["strategy"], r["threads"]) for r in rows] == CASES
    for row in rows:
        assert row["fields_digest"] == serial[row["program"]], row
        assert row["messages"] > 0


if __name__ == "__main__" and len(sys.argv) == 1:
    main()
