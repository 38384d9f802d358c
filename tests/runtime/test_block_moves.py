"""Blocks changing rank at a rebalance (``runtime/block_moves.py``): on 3 real ranks, every
block arrives equal to what left, arrays of numbers as aligned, writable views of one receive
buffer in their dtype, shape and memory order, anything else as it was pickled.

``python -m tests.runtime.test_block_moves`` under mpiexec moves made-up blocks and prints
what each rank received as JSON; the test compares it with the blocks every rank can make.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.mpi_harness import run_mpi

PARTS, RANKS = 7, 3


def _block(p: int) -> dict:
    """A block with arrays of several dtypes, shapes and orders, and one value that is not
    an array of numbers."""
    rng = np.random.default_rng(p)
    return {
        "u": rng.random((3 + p, 5)),
        "f": np.asfortranarray(rng.random((4, 2 + p))),
        "ids": np.arange(p, dtype=np.int32),  # p = 0: empty
        "flag": np.array(p % 2 == 0),  # 0-d bool
        "odd": rng.integers(0, 9, size=(p + 1,)).astype(np.int8),  # not a multiple of 8 bytes
        "note": {"part": p, "tags": ["x"] * p},
    }


def _described(block: dict) -> dict:
    out = {}
    for name, value in block.items():
        if isinstance(value, np.ndarray):
            out[name] = {
                "dtype": value.dtype.str, "shape": list(value.shape),
                "fortran": bool(value.flags.f_contiguous and not value.flags.c_contiguous),
                "values": value.ravel().tolist(), "aligned": bool(value.flags.aligned),
                "writeable": bool(value.flags.writeable),
            }  # fmt: skip
        else:
            out[name] = value
    return out


def main() -> None:
    from mpi4py import MPI

    from grapeshot.runtime.block_moves import move_blocks

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    before = np.arange(PARTS) % RANKS
    after = (before + 1 + np.arange(PARTS) % 2) % RANKS  # every block moves, some two ranks on
    after[0] = before[0]  # one stays
    mine = {p: _block(p) for p in range(PARTS) if before[p] == rank}
    got, moved = move_blocks(mine, after, comm)
    mine_now = {"rank": rank, "moved": moved, "blocks": {p: _described(b) for p, b in got.items()}}
    for line in comm.gather(mine_now, root=0) or []:
        print(json.dumps(line), flush=True)


@pytest.mark.mpi
def test_moved_blocks_arrive_equal_aligned_and_in_their_order() -> None:
    proc = run_mpi(RANKS, ["-m", "tests.runtime.test_block_moves"], work=1)
    lines = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
    assert sorted(line["rank"] for line in lines) == list(range(RANKS))
    before = np.arange(PARTS) % RANKS
    after = (before + 1 + np.arange(PARTS) % 2) % RANKS
    after[0] = before[0]
    nbytes = 0
    for line in lines:
        assert (
            sorted(int(p) for p in line["blocks"]) == np.flatnonzero(after == line["rank"]).tolist()
        )
        for p, block in line["blocks"].items():
            expected = json.loads(json.dumps(_described(_block(int(p)))))
            assert block == expected, p
    # Every rank reports the bytes of the arrays that moved, all ranks together.
    nbytes = sum(
        a.nbytes
        for p in np.flatnonzero(after != before)
        for a in _block(int(p)).values()
        if isinstance(a, np.ndarray)
    )
    assert [line["moved"] for line in lines] == [nbytes] * RANKS


if __name__ == "__main__":
    main()
