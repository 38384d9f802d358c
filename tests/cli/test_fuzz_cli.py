"""SPEC options fuzzed through the real entry point: an answer, or one line and status 2.

The parsers' own fuzz tests (tests/model/test_fuzz_*.py, tests/exchange/test_fuzz_exchange.py)
check the InputError; these check what a user sees of it: ``grapeshot`` exits 0 or 2, and on
2 prints one ``grapeshot: error:`` line and no traceback. The SPECs are the near-valid ones of
those tests (small grids, so each accepted one is placed or mapped in milliseconds).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

from tests.cli.helpers import ERROR_PREFIX, Result, run_main
from tests.fuzz import fuzz
from tests.model.test_fuzz_inputs import small_specs
from tests.model.test_fuzz_topology import BAD_WORDS, valid_trees

#: Every case runs a command: a small share of the quick pass.
SETTINGS = fuzz(0.15)

_DIR = Path(tempfile.mkdtemp(prefix="grapeshot-fuzz-cli-"))
_MATRIX = _DIR / "six.mtx"
scipy.io.mmwrite(_MATRIX, sp.coo_array(np.ones((6, 6)) - np.eye(6)))


def _one_line_or_answer(result: Result) -> None:
    assert result.code in (0, 2), (result.code, result.err[-500:])
    assert "Traceback" not in result.err, result.err[-2000:]
    if result.code == 2:
        lines = [x for x in result.err.splitlines() if x.strip()]
        assert len(lines) == 1 and lines[0].startswith(ERROR_PREFIX), result.err


@SETTINGS
@given(small_specs())
def test_place_synthetic_fuzz(spec: str) -> None:
    _one_line_or_answer(run_main("place", "--synthetic", spec, "--machine", "cm5", "--nodes", "2"))


@SETTINGS
@given(
    st.one_of(
        st.tuples(
            st.lists(st.integers(-2, 40).map(str), max_size=4), st.sampled_from(["x", ",", "X"])
        ).map(lambda t: t[1].join(t[0])),
        st.text(alphabet="0123456789xX,- .e", max_size=12),
    )
)
def test_place_grid_fuzz(grid: str) -> None:
    _one_line_or_answer(run_main("place", "--grid", grid, "--machine", "cm5", "--nodes", "2"))


@SETTINGS
@given(
    st.one_of(
        valid_trees().map(lambda t: t.to_tleaf()),
        st.lists(BAD_WORDS, max_size=6).map(lambda w: "tleaf " + " ".join(w)),
    )
)
def test_map_tleaf_fuzz(tleaf: str) -> None:
    _one_line_or_answer(run_main("map", "--matrix", str(_MATRIX), "--tleaf", tleaf, "--json"))
