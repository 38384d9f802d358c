"""Files grapeshot writes honour the umask, as a plain ``open(path, "w")`` would."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator

import pytest

from grapeshot.model.atomic import current_umask, write_text_atomic
from grapeshot.model.synthetic import synthetic_workload
from grapeshot.model.workload_file import save_workload
from tests.cli.helpers import run_main


@pytest.fixture
def umask() -> Iterator[Callable[[int], int]]:
    old = os.umask(0o022)
    try:
        yield os.umask
    finally:
        os.umask(old)


def _mode(path: os.PathLike[str]) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077, 0o027])
def test_text_file_mode_is_0666_less_the_umask(tmp_path, umask, mask: int) -> None:
    umask(mask)
    assert current_umask() == mask
    path = tmp_path / "out.json"
    write_text_atomic(path, "{}\n")
    assert _mode(path) == 0o666 & ~mask


def test_replacing_a_file_gives_the_current_umask(tmp_path, umask) -> None:
    path = tmp_path / "out.json"
    umask(0o077)
    write_text_atomic(path, "old\n")
    umask(0o022)
    write_text_atomic(path, "new\n")
    assert _mode(path) == 0o644 and path.read_text() == "new\n"


def test_hdf5_workload_is_readable_by_group_and_others(tmp_path, umask) -> None:
    umask(0o022)
    path = tmp_path / "w.h5"
    save_workload(path, synthetic_workload("dambreak:parts=4x4,steps=2"))
    assert _mode(path) == 0o644


def test_every_file_of_a_command_is_readable_by_a_colleague(tmp_path, umask) -> None:
    # umask 022: another uid reads every file (r for group and others), as the issue asks.
    umask(0o022)
    out, fig = tmp_path / "placement.json", tmp_path / "load.png"
    result = run_main(
        "place", "--synthetic", "dambreak:parts=8x8,steps=4", "--machine", "plafrim",
        "--nodes", "2", "--strategy", "birdshot", "--out", str(out), "--figure", str(fig),
    )  # fmt: skip
    assert result.code == 0, result.err
    for path in (out, fig):
        assert _mode(path) & 0o044 == 0o044, (path, oct(_mode(path)))
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
