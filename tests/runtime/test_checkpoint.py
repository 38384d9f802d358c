"""The checkpoint's pure parts, in one process: when the ranks checkpoint or stop, the files
read back bitwise, and what a restart refuses (the MPI runs: tests/cli/test_checkpoint_restart.py).
"""

from __future__ import annotations

import dataclasses

import h5py
import numpy as np
import pytest

import grapeshot
from grapeshot.model.checkpoint_file import (
    FORMAT,
    read_blocks,
    read_index,
    verify_rank_file,
    write_index,
    write_rank_file,
)
from grapeshot.model.errors import InputError
from grapeshot.runtime.checkpoint import Boundary, Decision, check_identity, decide


def test_decide_checkpoints_every_n_steps_and_stops_on_a_signal() -> None:
    assert decide(10, 100, 10, due=False, signal=0) == Decision(True, 0)
    assert decide(11, 100, 10, due=False, signal=0) is None
    assert decide(11, 100, None, due=True, signal=0) == Decision(True, 0)
    # A signal stops the run where it is, with a checkpoint; at the end the run is done.
    assert decide(13, 100, 10, due=False, signal=15) == Decision(True, 15)
    assert decide(100, 100, 10, due=False, signal=15) == Decision(True, 0)
    assert decide(100, 100, 7, due=True, signal=2) is None


class _Mpi3:
    """A communicator of an MPI older than 4.0: no persistent collectives."""

    def __init__(self, comm) -> None:
        self.comm = comm

    def Dup(self):
        return _Mpi3(self.comm.Dup())

    def Allreduce_init(self, *args, **kwargs):
        raise NotImplementedError("MPI_Allreduce_init")

    def __getattr__(self, name):
        return getattr(self.comm, name)


def _decisions(peek: bool, mpi3: bool = False) -> list[Decision | None]:
    """A boundary's decisions along a run of 12 steps whose rank gets a signal at step 5;
    ``peek``: each one asked before, as the runner does to send the next step's messages
    early (Boundary.coming); ``mpi3``: on an MPI without persistent collectives."""
    from mpi4py import MPI

    at = {"step": 0}
    comm = _Mpi3(MPI.COMM_SELF) if mpi3 else MPI.COMM_SELF
    boundary = Boundary(comm, end=12, pending=lambda: 15 if at["step"] >= 5 else 0)
    made: list[Decision | None] = []
    for step in range(1, 13):
        at["step"] = step
        coming = boundary.coming(step) if peek else None
        decision = boundary(step)
        if peek:
            assert coming == decision
        made.append(decision)
        if decision is not None and decision.stop:
            break
    boundary.close()
    return made


@pytest.mark.parametrize("mpi3", [False, True])
def test_the_coming_decision_is_the_one_the_boundary_makes(mpi3) -> None:
    made = _decisions(peek=True, mpi3=mpi3)
    # The signal seen at step 5 stops the run a boundary later, whether peeked at or not,
    # with a persistent allreduce or an MPI-3 one each boundary.
    assert made == _decisions(peek=False, mpi3=mpi3)
    assert made[-1] == Decision(False, 15) and len(made) == 6
    assert all(d is None for d in made[:-1])


def _blocks() -> dict[int, dict]:
    rng = np.random.default_rng(4)
    return {
        3: {
            "h": rng.random((6, 7)),
            "ids": np.arange(5, dtype=np.int64),
            "empty": np.zeros((0, 3), dtype=np.float32),  # a partition without particles
            "flag": np.array(True),
            "t": np.float32(0.25),
            "n": 7,
            "x": 0.1,
        },
        8: {"h": -np.ones((2, 2)), "ids": np.zeros(0, dtype=np.int64)},
    }


def test_blocks_read_back_bitwise_with_their_types(tmp_path) -> None:
    blocks = _blocks()
    entry = write_rank_file(tmp_path / "r.h5", blocks)
    assert entry.size == (tmp_path / "r.h5").stat().st_size
    back = read_blocks(tmp_path / "r.h5", [8, 3])
    assert sorted(back) == [3, 8]
    for p, block in blocks.items():
        assert sorted(back[p]) == sorted(block)
        for key, value in block.items():
            got = back[p][key]
            assert type(got) is type(value), key
            if isinstance(value, np.ndarray):
                assert got.dtype == value.dtype and got.shape == value.shape
                assert got.tobytes() == value.tobytes()
            else:
                assert got == value


def test_a_block_entry_that_is_not_an_array_is_refused(tmp_path) -> None:
    with pytest.raises(InputError, match=r"partition 2, block entry 'names'.*is list"):
        write_rank_file(tmp_path / "r.h5", {2: {"u": np.zeros(3), "names": ["a"]}})
    assert not (tmp_path / "r.h5").exists()  # nothing torn left behind


def _index(tmp_path, identity=None):
    entry = write_rank_file(tmp_path / "ck.h5.s4-x.rank0.h5", _blocks())
    write_index(
        tmp_path / "ck.h5", identity=identity or {"app": "swe", "cells": [8, 8]}, step=4,
        time=0.1 + 0.2, values={"dt": 1e-3}, node_of=np.array([0, 0]), files=[entry],
        total_steps=9, strategy="sfc",
    )  # fmt: skip
    return read_index(tmp_path / "ck.h5"), entry


def test_the_index_reads_back_and_checks_its_files(tmp_path) -> None:
    index, entry = _index(tmp_path)
    assert (index.step, index.time, index.total_steps, index.strategy) == (4, 0.1 + 0.2, 9, "sfc")
    assert index.values == {"dt": 1e-3} and index.files == (entry,)
    verify_rank_file(index, 0)
    # A rank file of another checkpoint (or rewritten since): refused before reading.
    other = dataclasses.replace(index, files=(dataclasses.replace(entry, crc32=entry.crc32 ^ 1),))
    with pytest.raises(InputError, match="another checksum"):
        verify_rank_file(other, 0)
    # One bit flipped in partition 3's 'h': found when its array is read.
    path = index.rank_path(0)
    with h5py.File(path, "r") as f:
        group = next(g for g in f["entries"].values() if g.attrs["key"] == "h")
        at = group["data"].id.get_offset() + 8 * int(group["offsets"][0]) + 5
    data = bytearray(path.read_bytes())
    data[at] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match="partition 3's 'h' is damaged"):
        read_blocks(path, [3])
    assert read_blocks(path, [8])[8]["h"].tobytes() == _blocks()[8]["h"].tobytes()
    path.unlink()
    with pytest.raises(InputError, match="is missing"):
        verify_rank_file(index, 0)


def test_a_file_that_is_no_checkpoint_is_refused(tmp_path) -> None:
    (tmp_path / "x.h5").write_bytes(b"not hdf5")
    with pytest.raises(InputError, match="cannot be read as HDF5"):
        read_index(tmp_path / "x.h5")
    with pytest.raises(InputError, match="does not exist"):
        read_index(tmp_path / "missing.h5")


def test_another_version_grid_or_program_is_refused_in_one_line(tmp_path) -> None:
    here = {"app": "swe", "cells": [8, 8], "seed": 0, "version": grapeshot.__version__}
    check_identity(_index(tmp_path, dict(here))[0], here)
    index, _ = _index(tmp_path, {**here, "version": "0.0.1", "format": FORMAT})
    with pytest.raises(InputError) as err:
        check_identity(index, {**here, "cells": [16, 8]})
    text = str(err.value)
    assert "\n" not in text
    assert "cells 8,8 in the checkpoint, 16,8 here" in text
    assert f"version 0.0.1 in the checkpoint, {grapeshot.__version__} here" in text
