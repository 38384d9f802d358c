"""``grapeshot repro``: the list, and every entry with --quick."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grapeshot.report.repro import REGISTRY
from tests.cli.helpers import run_cli

SWF_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "swf"


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(capsys, "repro", "--list", "--json")
    names = [e["name"] for e in res.json()["entries"]]
    assert {"coare-table5", "coare-fig5"} <= set(names)


def test_unknown_entry(capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(capsys, "repro", "nope")
    assert res.code == 2 and "expected one of" in res.err


#: Entries that time a kernel on real MPI ranks (``mpiexec -n 4``) inside the command.
STARTS_MPI = {"beatnik-fig9"}


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.mpi) if n in STARTS_MPI else n for n in sorted(REGISTRY)],
)
def test_entry_quick(name: str, capsys: pytest.CaptureFixture[str], tmp_path: Path,
                     monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    if name == "coare-table5":
        if not (SWF_DIR / "hpc2n-seth-prefix.swf").is_file():
            pytest.skip("../shared/data/swf is not present")
        monkeypatch.setenv("GRAPESHOT_SWF_DIR", str(SWF_DIR))
    res = run_cli(capsys, "repro", name, "--quick", "--out", str(tmp_path), "--json")
    assert res.code == 0, res.err
    doc = json.loads((tmp_path / f"{name}.json").read_text())
    assert doc == res.json()
    assert (tmp_path / f"{name}.png").stat().st_size > 1000
    assert doc["rows"] and all("paper" in r and "ours" in r for r in doc["rows"])
    if name == "coare-fig5":
        assert doc["data"]["iterations"] == {"simple-2h": 6, "simple-6h": 2, "power-2h": 5,
                                             "power-6h": 4}  # fmt: skip
    elif name == "coare-table5":
        seth = {m["policy"]: m for m in doc["data"]["seth"]}
        assert seth["simple"]["killed"] == 0 and seth["user-estimate"]["killed"] > 0
        assert set(doc["data"]["reductions"]) == {
            "seth-72h", "seth-72h-conservative", "generated", "generated-conservative"
        }  # fmt: skip
        assert sum(not c["possible"] for c in doc["data"]["paper_consistency"]) == 12
        logged = doc["data"]["seth_logged"]
        assert logged["avg_bsld"] > 1.0 and 0.0 <= logged["idle_while_waiting"] <= 1.0
        dense = doc["data"]["seth_compressed"]
        assert dense["factor"] > 1.0 and dense["offered_load"] > doc["data"]["seth_offered_load"]
        assert "clairvoyant" in doc["data"]["reductions"]["generated"]
