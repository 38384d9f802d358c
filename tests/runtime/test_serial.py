from __future__ import annotations

import numpy as np
import pytest

from grapeshot.model.errors import InputError
from grapeshot.model.program import Exchange
from grapeshot.runtime.serial import run_serial
from tests.runtime.toy_programs import Heat, Walkers


@pytest.mark.parametrize("parts", [(1, 1), (3, 2), (4, 3), (8, 6)])
def test_heat_is_bitwise_independent_of_partitions(parts) -> None:
    ref = run_serial(Heat(parts=(1, 1)), 12)
    run = run_serial(Heat(parts=parts), 12)
    assert np.array_equal(run.fields()["u"], ref.fields()["u"])
    assert run.digest() == ref.digest()


def test_heat_conserves_heat_and_records_a_trace() -> None:
    run = run_serial(Heat(parts=(3, 2)), 5)
    assert run.fields()["u"].sum() == pytest.approx(36.0)
    w = run.workload()
    assert w.cost.shape == (5, 6) and w.work.shape == (5, 6)
    assert (w.cost >= 0).all() and w.units == "s"
    # Neighbour pairs: 3x2 grid with corners.
    assert w.halo.n_messages == 2 * (3 + 4 + 2 * 2)
    assert run.time == 5.0


def test_particles_migrate_and_are_kept() -> None:
    ref = run_serial(Walkers(parts=(1, 1)), 30)
    run = run_serial(Walkers(parts=(4, 2)), 30)
    assert run.work.sum(axis=1).tolist() == [40] * 30
    assert np.array_equal(ref.fields()["x"], run.fields()["x"])
    assert run.digest() == ref.digest()


def test_bad_steps() -> None:
    with pytest.raises(InputError, match="--steps"):
        run_serial(Heat(), 0)


def test_partitions_thinner_than_ghost_are_refused() -> None:
    with pytest.raises(InputError, match="--parts"):
        run_serial(Heat(domain=(4, 4), parts=(8, 1)), 1)


def test_exchange_pack_all_needs_pack_and_defaults_to_pack_per_offset() -> None:
    with pytest.raises(ValueError, match="give pack as well"):
        Exchange(("u",), 1, pack_all=lambda block, box, offsets: [])
    calls = []

    def pack(block, box, offset):
        calls.append(offset)
        return np.full(2, offset[0], dtype=float)

    got = Exchange(("u",), 1, pack, lambda *a: None).packer_all()(None, None, [(1, 0), (-1, 1)])
    assert calls == [(1, 0), (-1, 1)]
    assert [g.tolist() for g in got] == [[1.0, 1.0], [-1.0, -1.0]]
