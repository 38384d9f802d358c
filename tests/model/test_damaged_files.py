"""Damaged, truncated, empty or foreign files are one line naming the file, exit 2."""

from __future__ import annotations

from pathlib import Path

import h5py
import pytest

from grapeshot.model.errors import InputError
from grapeshot.model.synthetic import synthetic_workload
from grapeshot.model.workload_file import load_workload, save_workload
from tests.cli.helpers import run_main

SPEC = "dambreak:parts=8x8,steps=6"


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "trace.h5"
    save_workload(path, synthetic_workload(SPEC))
    return path


def _flip(path: Path, offset: int, count: int = 64) -> None:
    data = bytearray(path.read_bytes())
    for i in range(offset, min(offset + count, len(data))):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def _chunk_offset(path: Path, dataset: str) -> int:
    with h5py.File(path, "r") as f:
        return int(f[dataset].id.get_chunk_info(0).byte_offset)


def _commands(path: Path) -> list[tuple[str, ...]]:
    place = ("place", "--trace", str(path), "--machine", "plafrim", "--nodes", "2",
             "--strategy", "birdshot")  # fmt: skip
    simulate = ("simulate", "--trace", str(path), "--machine", "plafrim", "--nodes", "2",
                "--ppc", "1", "--no-figure", "--json")  # fmt: skip
    return [place, simulate]


def _assert_one_line(path: Path, problem: str) -> None:
    for args in _commands(path):
        result = run_main(*args)
        assert result.code == 2, (args[0], result.err)
        assert result.err.count("\n") == 1 and "Traceback" not in result.err, result.err
        assert result.error.startswith(f"{path}: {problem}"), result.error


@pytest.mark.parametrize("dataset", ["cost", "halo/indices"])
def test_flipped_data_bytes_fail_the_checksum(trace: Path, dataset: str) -> None:
    _flip(trace, _chunk_offset(trace, dataset), 16)
    with pytest.raises(InputError, match="is damaged: its data fail their checksum"):
        load_workload(trace)
    _assert_one_line(trace, "is damaged")


def test_flipped_header_bytes(trace: Path) -> None:
    # The root group's object header and symbol table sit right after the superblock.
    _flip(trace, 96, 64)
    _assert_one_line(trace, "is damaged")


@pytest.mark.parametrize("keep", [0.1, 0.5, 0.99])
def test_truncated_file_says_how_much_is_left(trace: Path, keep: float) -> None:
    full = trace.stat().st_size
    cut = int(full * keep)
    trace.write_bytes(trace.read_bytes()[:cut])
    _assert_one_line(trace, f"is truncated: {cut:,} bytes of the {full:,}")


def test_empty_and_foreign_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.h5"
    empty.write_bytes(b"")
    _assert_one_line(empty, "is empty")
    text = tmp_path / "notes.h5"
    text.write_text("cost,halo\n1,2\n")
    _assert_one_line(text, "is not an HDF5 file")
