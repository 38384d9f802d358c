from __future__ import annotations

import json

import numpy as np
import pytest

from grapeshot.model.synthetic import synthetic_workload
from grapeshot.model.workload_file import save_workload
from tests.cli.helpers import run_cli

SPEC = "dambreak:parts=24x24,steps=20"


def test_place_json_keys_and_values(capsys) -> None:
    r = run_cli(
        capsys,
        "place",
        "--synthetic",
        SPEC,
        "--machine",
        "ec2-c4.8xlarge",
        "--nodes",
        "8",
        "--strategy",
        "birdshot",
        "--seed",
        "3",
        "--json",
    )
    assert r.code == 0, r.err
    data = r.json()
    for key in ("strategy", "seed", "nodes", "lif_mean", "lif_max", "bytes_cut"):
        assert key in data
    assert data["strategy"] == "birdshot" and data["seed"] == 3 and data["nodes"] == 8
    assert "node_of" not in data
    assert data["lif_max"] >= data["lif_mean"] >= 0


def test_place_full_and_out_file(capsys, tmp_path) -> None:
    out = tmp_path / "p.json"
    r = run_cli(
        capsys,
        "place",
        "--synthetic",
        SPEC,
        "--machine",
        "plafrim",
        "--strategy",
        "geometric",
        "--out",
        str(out),
        "--full",
        "--json",
    )
    assert r.code == 0, r.err
    node_of = r.json()["node_of"]
    assert len(node_of) == 576
    assert np.bincount(node_of).tolist() == [36] * 16
    assert json.loads(out.read_text())["node_of"] == node_of


def test_place_same_seed_same_placement_different_seed_different(capsys) -> None:
    def node_of(seed: str) -> list[int]:
        r = run_cli(
            capsys,
            "place",
            "--synthetic",
            SPEC,
            "--machine",
            "cm5",
            "--strategy",
            "birdshot",
            "--seed",
            seed,
            "--full",
            "--json",
        )
        return r.json()["node_of"]

    assert node_of("1") == node_of("1")
    assert node_of("1") != node_of("2")


def test_place_reads_workload_files(capsys, tmp_path) -> None:
    path = tmp_path / "w.h5"
    save_workload(path, synthetic_workload(SPEC))
    r = run_cli(
        capsys, "place", "--trace", str(path), "--machine", "cm5", "--strategy", "sfc", "--json"
    )
    assert r.code == 0, r.err
    from_spec = run_cli(
        capsys, "place", "--synthetic", SPEC, "--machine", "cm5", "--strategy", "sfc", "--json"
    )
    assert r.json() == from_spec.json()


def test_place_human_view(capsys) -> None:
    r = run_cli(capsys, "place", "--synthetic", SPEC, "--machine", "cm5", "--strategy", "cyclic")
    assert r.code == 0
    assert "LIF mean" in r.out and "halo bytes cut" in r.out


def test_synthetic_help_lists_kinds(capsys) -> None:
    r = run_cli(
        capsys, "place", "--synthetic", "help", "--machine", "cm5", "--strategy", "birdshot"
    )
    assert r.code == 0
    for kind in ("binary", "uniform", "dambreak"):
        assert kind in r.out


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (
            ["--synthetic", SPEC, "--machine", "nowhere", "--strategy", "birdshot"],
            "unknown preset 'nowhere'",
        ),
        (
            ["--synthetic", SPEC, "--machine", "cm5", "--strategy", "magic"],
            "unknown strategy 'magic'",
        ),
        (
            ["--synthetic", "binary:busy=2", "--machine", "cm5", "--strategy", "birdshot"],
            "busy: got '2'",
        ),
        (["--machine", "cm5", "--strategy", "birdshot"], "--trace/--synthetic/--grid: none given"),
        (
            ["--synthetic", SPEC, "--machine", "cm5", "--nodes", "0", "--strategy", "birdshot"],
            "nodes: got 0",
        ),
        (
            ["--trace", "missing.h5", "--machine", "cm5", "--strategy", "birdshot"],
            "missing.h5: no such file",
        ),
    ],
)
def test_place_bad_input_is_one_line_exit_2(capsys, args, pattern) -> None:
    r = run_cli(capsys, "place", *args)
    assert r.code == 2
    assert r.err.startswith("grapeshot: error: ") and pattern in r.err
    assert r.err.count("\n") == 1 and "Traceback" not in r.err


def test_malformed_machine_toml_exit_2(capsys, tmp_path) -> None:
    path = tmp_path / "m.toml"
    path.write_text('name = "x"\nnodes = 2\n[node]\nlevels = [["core", 4]]\n[network]\nspeed = 1\n')
    r = run_cli(
        capsys, "place", "--synthetic", SPEC, "--machine", str(path), "--strategy", "birdshot"
    )
    assert r.code == 2 and "network.speed: unknown key" in r.err and str(path) in r.err


def test_workload_with_missing_dataset_exit_2(capsys, tmp_path) -> None:
    import h5py

    path = tmp_path / "w.h5"
    save_workload(path, synthetic_workload(SPEC))
    with h5py.File(path, "r+") as f:
        del f["halo/indices"]
    r = run_cli(capsys, "place", "--trace", str(path), "--machine", "cm5", "--strategy", "birdshot")
    assert r.code == 2 and "dataset 'halo/indices': missing" in r.err


def test_more_nodes_than_partitions_is_warned(capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(capsys, "place", "--synthetic", "dambreak:parts=4x4,steps=2",
                  "--machine", "ec2-c4.8xlarge", "--nodes", "100", "--json")  # fmt: skip
    assert res.code == 0
    assert res.err.strip() == (
        "grapeshot place: warning: 16 partitions on 100 nodes: 84 nodes get none "
        "(0.00889 per core); fewer --nodes, or a finer partition grid"
    )


def test_place_takes_any_partition_count_and_reports_it_per_core(
    capsys: pytest.CaptureFixture[str], tmp_path
) -> None:
    trace = tmp_path / "t128.h5"
    save_workload(trace, synthetic_workload("dambreak:parts=16x8,steps=3"))
    res = run_cli(capsys, "place", "--trace", str(trace), "--machine", "ec2-c4.8xlarge",
                  "--nodes", "4", "--strategy", "geometric", "--full", "--json")  # fmt: skip
    assert res.code == 0 and res.err == "", res.err
    data = res.json()
    assert data["parts"] == 128 and data["parts_per_core"] == pytest.approx(128 / 72)
    assert np.bincount(data["node_of"]).tolist() == [32] * 4
    table = run_cli(capsys, "place", "--trace", str(trace), "--machine", "ec2-c4.8xlarge",
                    "--nodes", "4")  # fmt: skip
    assert "128 (1.78 per core)" in table.out


def test_place_shares_uneven_counts_by_cores_on_mixed_nodes(
    capsys: pytest.CaptureFixture[str], tmp_path
) -> None:
    machine = tmp_path / "mixed.toml"
    machine.write_text('name = "mixed"\nnodes = 3\nnode_cores = [8, 16, 24]\n'
                       '[node]\nlevels = [["core", 24]]\n')  # fmt: skip
    for strategy in ("geometric", "cyclic", "sfc", "birdshot"):
        res = run_cli(capsys, "place", "--synthetic", "uniform:parts=101x1,steps=2",
                      "--machine", str(machine), "--strategy", strategy, "--full",
                      "--json")  # fmt: skip
        assert res.code == 0, res.err
        # 101 partitions by cores 8:16:24 is 16.83, 33.67, 50.5; the one quota rule (largest
        # remainder) rounds them to 17, 34, 50.
        assert np.bincount(res.json()["node_of"]).tolist() == [17, 34, 50], strategy
        assert res.json()["parts_per_core"] == pytest.approx(101 / 48)


def test_fewer_partitions_than_cores_is_noted(capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(capsys, "place", "--synthetic", "dambreak:parts=4x4,steps=2",
                  "--machine", "ec2-c4.8xlarge", "--nodes", "4", "--json")  # fmt: skip
    assert res.code == 0
    assert res.err.strip() == (
        "grapeshot place: warning: 16 partitions on 72 cores: 56 cores get none and idle "
        "(0.222 per core); fewer --nodes, or a finer partition grid"
    )
    assert res.json()["parts_per_core"] == pytest.approx(16 / 72)


@pytest.mark.parametrize("strategy", ["geometric", "cyclic", "sfc", "birdshot"])
@pytest.mark.parametrize("fmt", ["npy", "part"])
def test_place_grid_places_as_the_workload_of_that_grid(capsys, tmp_path, strategy, fmt) -> None:
    """A bare grid gets the placement a workload of the same grid gets (static strategies
    read only the grid), in any format, without building a workload."""
    common = ["--machine", "plafrim", "--nodes", "7", "--strategy", strategy, "--seed", "5"]
    grid, wl = tmp_path / f"grid.{fmt}", tmp_path / f"wl.{fmt}"
    r = run_cli(capsys, "place", "--grid", "30x20", *common, "--out", str(grid), "--json")
    assert r.code == 0, r.err
    data = r.json()
    assert data["grid"] == [30, 20] and data["parts"] == 600 and data["nodes"] == 7
    assert (data["parts_per_node_min"], data["parts_per_node_max"]) == (85, 86)
    assert "lif_mean" not in data
    spec = "dambreak:parts=30x20,steps=2"
    r = run_cli(capsys, "place", "--synthetic", spec, *common, "--out", str(wl), "--json")
    assert r.code == 0, r.err
    assert grid.read_bytes() == wl.read_bytes()


def test_place_grid_3d_json_file_and_human_view(capsys, tmp_path) -> None:
    out = tmp_path / "p.json"
    r = run_cli(
        capsys, "place", "--grid", "4x5x6", "--machine", "cm5", "--nodes", "16", "--out", str(out)
    )
    assert r.code == 0, r.err
    assert "4x5x6 = 120" in r.out and "no costs or halos" in r.out
    data = json.loads(out.read_text())
    assert data["parts"] == 120 and data["metrics"]["grid"] == [4, 5, 6]
    assert sorted(np.bincount(data["node_of"]).tolist()) == [7] * 8 + [8] * 8


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (["--grid", "100"], "--grid: got '100'; expected 2 or 3 positive integers"),
        (["--grid", "10x0"], "--grid: got '10x0'; expected 2 or 3"),
        (["--grid", "2x2x2x2"], "--grid: got '2x2x2x2'; expected 2 or 3"),
        (["--grid", "4x4", "--synthetic", SPEC], "--grid: given with --synthetic"),
        (["--grid", "4x4", "--strategy", "greedy"], "a dynamic one needs a workload's costs"),
        (["--grid", "4x4", "--strategy", "birdshot:shuffle=no"], "shuffle: got 'no'"),
        (["--grid", "4x4", "--interval", "5"], "--interval: given with the static strategy"),
        (["--grid", "4x4", "--figure", "f.png"], "--figure: given with --grid"),
        (["--grid", "1000000x1000000"], "--grid 1000000x1000000: needs about"),
    ],
)
def test_place_grid_bad_input_is_one_line_exit_2(capsys, args, pattern) -> None:
    r = run_cli(capsys, "place", "--machine", "cm5", *args)
    assert r.code == 2
    assert r.err.startswith("grapeshot: error: ") and pattern in r.err
    assert r.err.count("\n") == 1 and "Traceback" not in r.err


def test_place_grid_printed_whole_is_refused_with_its_estimate_and_a_file_named(
    capsys, tmp_path
) -> None:
    # 4e10 partitions: about 3.5 TiB printed whole (its list of Python integers), more than
    # any machine that runs the tests; nothing is allocated.
    grid = ["--grid", "200000x200000", "--machine", "cm5"]
    r = run_cli(capsys, "place", *grid, "--full", "--json")
    assert r.code == 2 and "or --out FILE rather than --full --json" in r.err and "TiB" in r.err
    # Written to a file it is a chunk at a time, still far more than any machine has.
    out = tmp_path / "p.json"
    r = run_cli(capsys, "place", *grid, "--out", str(out))
    assert r.code == 2 and "needs about" in r.err and "--full" not in r.err
    assert not out.exists()
