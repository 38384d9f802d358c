"""A dynamic strategy replayed over a trace (``grapeshot place --strategy reactive``)."""

from __future__ import annotations

import numpy as np
import pytest

from grapeshot.model.machine_file import load_machine
from grapeshot.model.placement import Placement, placement_metrics
from grapeshot.model.synthetic import synthetic_workload
from grapeshot.place import place
from grapeshot.place.dynamic import make_dynamic_strategy
from grapeshot.place.replay import cells_per_part, replay_dynamic, replay_metrics
from tests.cli.helpers import run_cli

SPEC = "dambreak:parts=32x16,steps=90"


@pytest.fixture(scope="module")
def setting():
    wl = synthetic_workload(SPEC)
    machine = load_machine("gcp-n1-highmem-8")
    return wl, machine


def _replay(setting, name: str, **kw):
    wl, machine = setting
    strategy = make_dynamic_strategy(name, **kw)
    initial = place(wl, machine, strategy.initial, seed=0).node_of
    return replay_dynamic(wl, machine, strategy, initial, cells_per_part(wl) * 128)


def test_cells_per_part_cover_the_domain(setting) -> None:
    wl, _ = setting
    cells = cells_per_part(wl)
    assert cells.shape == (wl.n_parts,) and cells.sum() == np.prod(wl.domain_shape)


@pytest.mark.parametrize("name", ["reactive", "refine", "birdshot-dynamic"])
def test_replay_moves_partitions_and_counts_what_moved(setting, name: str) -> None:
    wl, machine = setting
    replay = _replay(setting, name, interval=15)
    again = _replay(setting, name, interval=15)
    assert np.array_equal(replay.node_of, again.node_of)  # deterministic
    assert replay.node_of.shape == (wl.n_steps, wl.n_parts)
    assert replay.node_of.min() >= 0 and replay.node_of.max() < machine.nodes
    changes = [
        s for s in range(1, wl.n_steps) if (replay.node_of[s] != replay.node_of[s - 1]).any()
    ]
    assert changes == [m.step for m in replay.migrations] and changes
    assert all(s % 15 == 0 for s in changes)
    for m in replay.migrations:
        moved = replay.node_of[m.step] != replay.node_of[m.step - 1]
        assert m.parts == moved.sum()
        assert m.bytes == (cells_per_part(wl)[moved] * 128).sum()


def test_a_rebalancer_beats_the_placement_it_starts_from(setting) -> None:
    wl, machine = setting
    replay = _replay(setting, "reactive", interval=15)
    dynamic = replay_metrics(replay, wl, machine)
    static = placement_metrics(place(wl, machine, "geometric", seed=0), wl, machine)
    assert np.allclose(dynamic.lif[:15], static.lif[:15])  # same start
    assert dynamic.lif_mean < static.lif_mean


def test_metrics_of_a_placement_that_never_moves_are_the_static_ones(setting) -> None:
    wl, machine = setting
    node_of = place(wl, machine, "birdshot", seed=3).node_of
    from grapeshot.place.replay import DynamicReplay

    replay = DynamicReplay(np.tile(node_of, (wl.n_steps, 1)).astype(np.int32), ())
    got = replay_metrics(replay, wl, machine)
    want = placement_metrics(Placement(node_of, machine.nodes, "birdshot", 3), wl, machine)
    assert np.allclose(got.node_load, want.node_load) and np.allclose(got.lif, want.lif)
    assert got.bytes_cut == want.bytes_cut
    assert np.array_equal(got.neighbour_nodes, want.neighbour_nodes)


def test_place_command_takes_dynamic_strategies(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["place", "--synthetic", SPEC, "--machine", "gcp-n1-highmem-8", "--json"]
    res = run_cli(capsys, *base, "--strategy", "reactive", "--interval", "15")
    assert res.code == 0, res.err
    doc = res.json()
    assert doc["rebalances"] >= 1 and doc["migrations"] >= doc["rebalances"]
    assert doc["migrated_bytes"] > 0
    res = run_cli(capsys, *base, "--strategy", "geometric", "--interval", "15")
    assert res.code == 2 and "--interval: given with the static strategy" in res.err
    res = run_cli(capsys, *base, "--strategy", "nope")
    assert res.code == 2 and "treematch-lb" in res.err
