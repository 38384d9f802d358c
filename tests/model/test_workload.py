from __future__ import annotations

import h5py
import numpy as np
import pytest

from grapeshot.model.errors import InputError
from grapeshot.model.synthetic import synthetic_workload
from grapeshot.model.workload import HaloGraph, Workload, grid_halo, partition_bounds
from grapeshot.model.workload_file import load_workload, save_workload


def test_partition_bounds_cover_the_domain_evenly() -> None:
    bounds = partition_bounds((10, 7), (3, 2))
    assert bounds[0].tolist() == [0, 3, 6, 10]
    assert bounds[1].tolist() == [0, 3, 7]


def test_grid_halo_2d_bytes_and_symmetry() -> None:
    halo = grid_halo((8, 12), (2, 3), ghost=2, cell_bytes=8)
    src, dst, nbytes = halo.sources(), halo.indices, halo.nbytes
    messages = {(int(s), int(d)): int(b) for s, d, b in zip(src, dst, nbytes, strict=True)}
    # 2x3 grid of 4x4 partitions: face along axis 1 is 4 cells x 2 ghost layers.
    assert messages[(0, 1)] == 4 * 2 * 8
    assert messages[(0, 3)] == 2 * 4 * 8
    assert messages[(0, 4)] == 2 * 2 * 8  # corner
    assert all(messages[(d, s)] == b for (s, d), b in messages.items())
    # Interior partition 1 has 5 neighbours, corner partition 0 has 3.
    assert np.diff(halo.indptr).tolist() == [3, 5, 3, 3, 5, 3]


def test_grid_halo_periodic_wraps_and_merges_shared_faces() -> None:
    # 4 x 4 partitions of 3 x 3 cells, wrapped: every partition has 8 neighbours, each face
    # 3 cells x 1 layer, each corner 1 cell.
    halo = grid_halo((12, 12), (4, 4), ghost=1, cell_bytes=1, periodic=True)
    assert np.all(np.diff(halo.indptr) == 8)
    messages = dict(zip(zip(halo.sources(), halo.indices, strict=True), halo.nbytes, strict=True))
    assert messages[(0, 3)] == 3 and messages[(0, 15)] == 1  # across the wrap
    # 2 partitions along axis 0, 1 along axis 1: the left and right neighbour are one
    # partition, sent one message with both faces (2 x 3 cells) and the four corners that
    # wrap onto it (4 x 1); nothing goes to itself.
    two = grid_halo((4, 3), (2, 1), ghost=1, cell_bytes=1, periodic=True)
    assert np.diff(two.indptr).tolist() == [1, 1] and two.nbytes.tolist() == [10, 10]


def test_grid_halo_3d_faces_only() -> None:
    halo = grid_halo((4, 4, 4), (2, 2, 2), corners=False)
    assert np.all(np.diff(halo.indptr) == 3)
    assert np.all(halo.nbytes == 2 * 2 * 8)


def _tiny(cost: np.ndarray) -> Workload:
    return Workload((4, 4), (2, 2), cost, grid_halo((4, 4), (2, 2)))


def test_workload_validation() -> None:
    with pytest.raises(InputError, match=r"cost: is negative .* step 1, partition 2"):
        _tiny(np.array([[0, 0, 0, 0], [0, 0, -1.0, 0]]))
    with pytest.raises(InputError, match="cost: has shape"):
        _tiny(np.zeros((2, 3)))
    with pytest.raises(InputError, match="not finite"):
        _tiny(np.array([[0, np.nan, 0, 0]]))
    with pytest.raises(InputError, match="units"):
        Workload((4, 4), (2, 2), np.zeros((1, 4)), grid_halo((4, 4), (2, 2)), units="ms")
    with pytest.raises(InputError, match="parts_shape"):
        Workload((4,), (2,), np.zeros((1, 2)), grid_halo((4, 4), (2, 2)))
    bad_halo = HaloGraph(np.array([0, 1, 1, 1, 1]), np.array([9]), np.array([8]))
    with pytest.raises(InputError, match="halo/indices: out of range"):
        Workload((4, 4), (2, 2), np.zeros((1, 4)), bad_halo)


def test_steps_window() -> None:
    w = synthetic_workload("binary:parts=4x4,steps=5")
    assert w.steps(1, 3).n_steps == 2
    assert np.array_equal(w.steps(1, 3).cost, w.cost[1:3])
    # The option that takes a window of steps is simulate's --step-range (--steps is a count).
    with pytest.raises(InputError, match=r"^--step-range: got 3:9"):
        w.steps(3, 9)


def test_hdf5_round_trip(tmp_path) -> None:
    w = synthetic_workload("dambreak:parts=8x6,steps=7")
    w = Workload(w.domain_shape, w.parts_shape, w.cost, w.halo, "s", w.cost * 10, "sph", "x")
    path = tmp_path / "w.h5"
    save_workload(path, w)
    back = load_workload(path)
    assert back.parts_shape == (8, 6) and back.domain_shape == w.domain_shape
    assert np.array_equal(back.cost, w.cost) and np.array_equal(back.work, w.work)
    assert np.array_equal(back.halo.indices, w.halo.indices)
    assert (back.app, back.scene, back.units) == ("sph", "x", "s")
    with h5py.File(path) as f:
        assert f["cost"].dtype == np.float64
        assert f.attrs["parts_shape"].tolist() == [8, 6]


@pytest.mark.parametrize(
    ("mutate", "pattern"),
    [
        (lambda f: f.__delitem__("cost"), r"dataset 'cost': missing"),
        (lambda f: f.__delitem__("halo/bytes"), r"dataset 'halo/bytes': missing"),
        (lambda f: f.attrs.__delitem__("parts_shape"), r"attribute 'parts_shape': missing"),
        (lambda f: f["cost"].__setitem__((0, 0), -2.0), r"cost: is negative"),
        (lambda f: f.attrs.__setitem__("units", "hours"), r"units: got 'hours'"),
    ],
)
def test_bad_workload_file_errors_name_file_and_dataset(tmp_path, mutate, pattern) -> None:
    path = tmp_path / "w.h5"
    save_workload(path, synthetic_workload("binary:parts=4x4,steps=2"))
    with h5py.File(path, "r+") as f:
        mutate(f)
    with pytest.raises(InputError, match=pattern) as info:
        load_workload(path)
    assert str(path) in str(info.value)


def test_not_hdf5_and_missing(tmp_path) -> None:
    junk = tmp_path / "junk.h5"
    junk.write_text("hello")
    with pytest.raises(InputError, match="not an HDF5 file"):
        load_workload(junk)
    with pytest.raises(InputError, match="no such file"):
        load_workload(tmp_path / "none.h5")


def test_save_is_atomic_on_failure(tmp_path, monkeypatch) -> None:
    path = tmp_path / "w.h5"
    w = synthetic_workload("binary:parts=4x4,steps=2")
    save_workload(path, w)
    before = path.read_bytes()

    def boom(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(h5py.Group, "create_group", boom)
    with pytest.raises(KeyboardInterrupt):
        save_workload(path, synthetic_workload("binary:parts=8x8,steps=3"))
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.h5"]
