"""Output paths checked before the work (issue 27): writable folder, known extension, and
missing folders created only below a folder that exists other than ``/``."""

from __future__ import annotations

from pathlib import Path

import pytest

from grapeshot.model.atomic import (
    atomic_path,
    check_output_path,
    make_folders,
    write_text_atomic,
)
from grapeshot.model.errors import InputError

#: A folder no process can create files in, root included (``os.access`` says yes to root).
UNWRITABLE = Path("/proc")


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_a_file_in_a_new_folder_below_an_existing_one_is_accepted_and_nothing_is_made(
    tmp_path: Path,
) -> None:
    path = tmp_path / "results" / "run1" / "p.json"
    assert check_output_path(path, "--out") == path
    assert _tree(tmp_path) == []  # the check creates no folder and leaves no probe file
    write_text_atomic(path, "{}\n")  # the write creates them
    assert path.read_text() == "{}\n" and _tree(tmp_path) == ["results", "results/run1",
                                                               "results/run1/p.json"]  # fmt: skip


def test_a_folder_where_a_file_goes_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^--out .*: is a folder; expected a file name$"):
        check_output_path(tmp_path, "--out")


def test_a_file_where_a_folder_goes_is_refused(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    with pytest.raises(InputError, match=r"f is not a folder; expected a path whose folders"):
        check_output_path(tmp_path / "f" / "x.json", "--out")
    with pytest.raises(InputError, match=r"^--vtk .*/f: is a file; expected a folder"):
        check_output_path(tmp_path / "f", "--vtk", folder=True)


def test_an_unwritable_folder_is_refused_even_for_root() -> None:
    with pytest.raises(InputError) as err:
        check_output_path(UNWRITABLE / "x.h5", "--record")
    assert str(err.value).startswith("--record /proc/x.h5: cannot create files in /proc (")
    with pytest.raises(InputError, match=r"^--out-dir /proc/new: cannot create files in /proc"):
        check_output_path(UNWRITABLE / "new", "--out-dir", folder=True)


@pytest.mark.parametrize("where", ["/grapeshot-no-such-top-folder/x.json",
                                   "/grapeshot-no-such-top-folder/a/b/x.json"])  # fmt: skip
def test_no_folder_is_created_directly_under_the_root(where: str) -> None:
    with pytest.raises(InputError) as err:
        check_output_path(where, "--out")
    assert "would create the folder /grapeshot-no-such-top-folder directly under /" in str(
        err.value
    )
    with pytest.raises(InputError, match="directly under /"):
        make_folders(Path(where).parent, "--out")
    with pytest.raises(InputError, match="directly under /"), atomic_path(where):
        pass
    assert not Path("/grapeshot-no-such-top-folder").exists()


def test_a_relative_path_resolves_from_the_current_folder(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert check_output_path("new/x.json", "--out") == Path("new/x.json")
    monkeypatch.chdir("/")  # the current folder is the root: new/ would sit directly in it
    with pytest.raises(InputError, match="would create the folder /new directly under /"):
        check_output_path("new/x.json", "--out")


def test_extensions_are_checked_without_case(tmp_path: Path) -> None:
    for name in ("f.png", "F.SVG"):
        check_output_path(tmp_path / name, "--figure", suffixes=(".png", ".svg"))
    with pytest.raises(InputError, match=r"x\.txt: has the extension '\.txt'; expected one of "
                                         r"\.png, \.svg$"):  # fmt: skip
        check_output_path(tmp_path / "x.txt", "--figure", suffixes=(".png", ".svg"))
    with pytest.raises(InputError, match=r"has no extension; expected one of \.png, \.svg"):
        check_output_path(tmp_path / "x", "--figure", suffixes=(".png", ".svg"))


def test_an_existing_or_new_output_folder_is_accepted(tmp_path: Path) -> None:
    check_output_path(tmp_path, "--out-dir", folder=True)
    check_output_path(tmp_path / "a" / "b", "--out-dir", folder=True)
    assert _tree(tmp_path) == []
