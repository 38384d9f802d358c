from __future__ import annotations

from tests.cli.helpers import run_cli


def test_demo_birdshot_beats_geometric_and_writes_its_figure(capsys, tmp_path) -> None:
    r = run_cli(capsys, "demo", "--out-dir", str(tmp_path), "--steps", "40", "--json")
    assert r.code == 0, r.err
    data = r.json()
    assert data["parts"] == 32 * 18 * 4 and data["nodes"] == 32
    geo = data["strategies"]["geometric"]["lif_mean"]
    bird = data["strategies"]["birdshot"]["lif_mean"]
    assert bird < geo / 3
    figure = tmp_path / "demo-node-load.png"
    assert data["figure"] == str(figure)
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_demo_human_view_says_where_the_figure_went(capsys, tmp_path) -> None:
    r = run_cli(capsys, "demo", "--out-dir", str(tmp_path), "--steps", "10")
    assert r.code == 0, r.err
    assert "figure written to" in r.out and "birdshot" in r.out
