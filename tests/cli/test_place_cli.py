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
        (["--machine", "cm5", "--strategy", "birdshot"], "need exactly one"),
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
