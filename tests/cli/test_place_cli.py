from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grapeshot.model.synthetic import synthetic_workload
from grapeshot.model.workload_file import save_workload
from tests.cli.helpers import run_cli, run_main
from tests.fuzz import fuzz

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


# --ranks / --ranks-per-node: a rank per partition for the user's own MPI code.


def _check_ranks(node_of: list[int], rank_of: list[int], per_node: list[int]) -> None:
    """Every partition on one of its node's ranks (node k's are the block after nodes
    0..k-1's), each node's partitions spread over its ranks within one."""
    node_of, rank_of = np.array(node_of), np.array(rank_of)
    first = np.concatenate([[0], np.cumsum(per_node)])
    assert rank_of.min() >= 0 and rank_of.max() < first[-1]
    assert np.all((rank_of >= first[node_of]) & (rank_of < first[node_of + 1]))
    counts = np.bincount(rank_of, minlength=first[-1])
    for k in range(len(per_node)):
        mine = counts[first[k] : first[k + 1]]
        assert mine.sum() == np.count_nonzero(node_of == k) and np.ptp(mine) <= 1


@pytest.mark.parametrize("fmt", ["part", "csv", "npy", "json"])
def test_place_ranks_writes_a_rank_per_partition(capsys, tmp_path, fmt) -> None:
    from grapeshot.model.placement import load_placement

    out = tmp_path / f"p.{fmt}"
    common = ("place", "--synthetic", SPEC, "--machine", "plafrim", "--nodes", "3",
              "--strategy", "sfc", "--full", "--json")  # fmt: skip
    r = run_cli(capsys, *common, "--ranks", "12", "--out", str(out))
    assert r.code == 0, r.err
    data = r.json()
    assert (data["ranks"], data["ranks_per_node_min"], data["ranks_per_node_max"]) == (12, 4, 4)
    assert (data["parts_per_rank_min"], data["parts_per_rank_max"]) == (48, 48)
    _check_ranks(data["node_of"], data["rank_of"], [4, 4, 4])
    back = load_placement(out)
    assert back.node_of.tolist() == data["rank_of"]
    if fmt != "npy":
        assert back.per_rank and back.nodes == 12 and back.grid == (24, 24)
    # The same ranks, as --ranks-per-node, and again and again.
    again = run_cli(capsys, *common, "--ranks-per-node", "4")
    assert again.json()["rank_of"] == data["rank_of"]
    # The ranks' own balance and cut, beside the nodes'.
    assert data["rank_bytes_cut"] >= data["bytes_cut"] > 0
    assert data["rank_lif_max"] >= data["rank_lif_mean"] >= 0


def test_place_ranks_share_ranks_by_cores_on_mixed_nodes(capsys, tmp_path) -> None:
    machine = tmp_path / "mixed.toml"
    machine.write_text('name = "mixed"\nnodes = 3\nnode_cores = [8, 16, 24]\n'
                       '[node]\nlevels = [["core", 24]]\n')  # fmt: skip
    r = run_cli(capsys, "place", "--grid", "101x1", "--machine", str(machine), "--ranks", "7",
                "--strategy", "cyclic", "--full", "--json")  # fmt: skip
    assert r.code == 0, r.err
    data = r.json()
    # 7 ranks by cores 8:16:24 is 1.17, 2.33, 3.5: 1, 2, 4 by the largest remainder (ties to
    # the lower node... 0.5 against 0.33 and 0.17: node 2's).
    _check_ranks(data["node_of"], data["rank_of"], [1, 2, 4])
    assert data["ranks_per_node_min"] == 1 and data["ranks_per_node_max"] == 4


def test_place_grid_ranks_human_view_and_header(capsys, tmp_path) -> None:
    out = tmp_path / "p.part"
    r = run_cli(capsys, "place", "--grid", "16x16", "--machine", "plafrim", "--nodes", "4",
                "--strategy", "geometric", "--ranks-per-node", "4", "--out", str(out))  # fmt: skip
    assert r.code == 0, r.err
    assert "16 (4 per node)" in r.out and "partitions per rank" in r.out and "16–16" in r.out
    lines = out.read_text().splitlines()
    assert lines[0] == "# grapeshot placement: parts 16x16, 256 partitions, 16 ranks"
    assert len(lines) == 257
    # Node 0 (geometric) holds the top-left 8x8 partitions: its 4 ranks, one 4x4 box each.
    ranks = np.array(lines[1:], dtype=int).reshape(16, 16)
    assert ranks[:4, :4].tolist() == [[0] * 4] * 4 and ranks[4:8, 4:8].tolist() == [[3] * 4] * 4


def test_place_ranks_human_view_of_a_workload(capsys) -> None:
    r = run_cli(capsys, "place", "--synthetic", SPEC, "--machine", "plafrim", "--nodes", "2",
                "--ranks", "5")  # fmt: skip
    assert r.code == 0, r.err
    for words in ("5 (2–3 per node)", "partitions per rank", "LIF over ranks",
                  "halo bytes cut between ranks"):  # fmt: skip
        assert words in r.out, words


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (["--ranks", "4", "--ranks-per-node", "2"],
         "--ranks: given with --ranks-per-node 2; expected one of --ranks, --ranks-per-node"),
        (["--ranks", "3"], "--ranks: got 3 for 4 nodes; expected at least one rank a node "
                           "(4 to 2,147,483,647), or fewer --nodes"),
        (["--ranks", "-4"], "--ranks: got -4 for 4 nodes"),
        (["--ranks", "3000000000"], "--ranks: got 3000000000 for 4 nodes"),
        (["--ranks-per-node", "0"], "--ranks-per-node: got 0; expected a positive integer, at "
                                    "most 2,147,483,647 ranks in all"),
        (["--ranks-per-node", "1000000000"], "--ranks-per-node: got 1000000000: "
                                             "4,000,000,000 ranks on 4 nodes"),
    ],
)  # fmt: skip
def test_place_ranks_refusals_before_placing(capsys, tmp_path, args, pattern) -> None:
    out = tmp_path / "p.part"
    for source in (["--grid", "8x8"], ["--trace", str(tmp_path / "none.h5")]):
        r = run_cli(capsys, "place", *source, "--machine", "plafrim", "--nodes", "4", *args,
                    "--out", str(out))  # fmt: skip
        assert r.code == 2 and r.err.count("\n") == 1, r.err
        assert r.err.startswith("grapeshot: error: ") and pattern in r.err, r.err
    assert not out.exists()


def test_place_ranks_refuses_a_node_left_without_a_rank(capsys, tmp_path) -> None:
    machine = tmp_path / "mixed.toml"
    machine.write_text('name = "mixed"\nnodes = 2\nnode_cores = [1, 100]\n'
                       '[node]\nlevels = [["core", 100]]\n')  # fmt: skip
    r = run_cli(capsys, "place", "--grid", "8x8", "--machine", str(machine), "--ranks", "2")
    assert r.code == 2 and r.err.count("\n") == 1
    assert "--ranks: got 2: node 0 (1 cores) gets no rank by its share of the cores; " \
           "expected more ranks, or --ranks-per-node" in r.err  # fmt: skip


@fuzz(0.15)
@given(st.one_of(st.integers(-3, 40), st.integers(2**31 - 3, 2**31 + 3)), st.booleans())
def test_place_ranks_fuzz(count: int, per_node: bool) -> None:
    option = "--ranks-per-node" if per_node else "--ranks"
    result = run_main("place", "--grid", "6x5", "--machine", "cm5", "--nodes", "3",
                      option, str(count), "--json")  # fmt: skip
    assert result.code in (0, 2) and "Traceback" not in result.err, result.err
    if result.code == 2:
        assert result.err.count("\n") == 1 and result.error.startswith(option), result.err
        return
    data = result.json()
    assert data["ranks"] == (3 * count if per_node else count)
    # The mean, 30 partitions over the ranks, lies between the fewest and the most.
    assert data["parts_per_rank_min"] <= 30 // data["ranks"] <= data["parts_per_rank_max"]
    assert ("ranks get none" in result.err) == (data["parts_per_rank_min"] == 0)
