"""A clone without ../shared: the one entry that needs outside data says where to get it."""

from __future__ import annotations

from pathlib import Path

import pytest

from grapeshot.report import repro_coare
from tests.cli.helpers import run_cli


def test_table5_without_the_seth_log_is_one_line_saying_where_to_get_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nowhere = tmp_path / "no-shared"
    monkeypatch.setattr(repro_coare, "swf_dir_candidates", lambda: [nowhere])
    out = tmp_path / "out"
    res = run_cli(capsys, "repro", "coare-table5", "--quick", "--out-dir", str(out))
    assert res.code == 2 and res.err.count("\n") == 1 and "Traceback" not in res.err
    assert res.error.startswith("hpc2n-seth-prefix.swf: not found")
    for hint in ("Parallel Workloads Archive", "HPC2N-2002-2.2", "$GRAPESHOT_SWF_DIR"):
        assert hint in res.error
    assert not (out / "coare-table5.json").exists()


def test_the_log_is_looked_for_first_where_the_environment_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRAPESHOT_SWF_DIR", str(tmp_path))
    assert repro_coare.swf_dir_candidates()[0] == tmp_path
    (tmp_path / repro_coare.SETH_FILE).write_text("; Version: 2.2\n")
    assert repro_coare.swf_dir() == tmp_path
