from __future__ import annotations

import numpy as np
import pytest

from grapeshot.model.atomic import atomic_path, write_text_atomic
from grapeshot.model.errors import InputError, check_int, check_probability
from grapeshot.model.seed import as_generator


def test_same_seed_same_stream() -> None:
    assert np.array_equal(as_generator(3).random(5), as_generator(3).random(5))
    rng = np.random.default_rng(1)
    assert as_generator(rng) is rng


@pytest.mark.parametrize("bad", [None, -1, 1.5, "3", True])
def test_seed_must_be_explicit_non_negative_int(bad) -> None:
    with pytest.raises(InputError, match="seed"):
        as_generator(bad)


def test_interrupted_write_keeps_old_file(tmp_path) -> None:
    path = tmp_path / "out.txt"
    write_text_atomic(path, "old")
    with pytest.raises(RuntimeError), atomic_path(path) as tmp:
        tmp.write_text("half of the new")
        raise RuntimeError("interrupted")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_checkers() -> None:
    assert check_int(3, "--nodes") == 3
    with pytest.raises(InputError, match="--nodes: got 0; expected an integer >= 1"):
        check_int(0, "--nodes")
    assert check_probability(1.0, "--busy") == 1.0
    with pytest.raises(InputError, match=r"--busy: got 0.0; expected a number in \(0, 1\]"):
        check_probability(0.0, "--busy")
