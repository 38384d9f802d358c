"""SWF reader: the shared Seth prefix, errors by line and field, fuzzing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grapeshot.jobs.swf import format_swf, parse_swf_text, read_swf
from grapeshot.jobs.trace import make_trace
from grapeshot.model.errors import InputError
from tests.fuzz import fuzz
from tests.jobs.helpers import SWF_DIR

GOOD = "1 0 5 100 4 -1 -1 4 200 -1 1 3 1 -1 -1 1 -1 -1"


@pytest.fixture
def seth() -> Path:
    path = SWF_DIR / "hpc2n-seth-prefix.swf"
    if not path.is_file():
        pytest.skip("../shared/data/swf/hpc2n-seth-prefix.swf is not present")
    return path


def test_reads_the_seth_prefix(seth: Path) -> None:
    read = read_swf(seth, strict=True)
    assert read.lines == 3170 and len(read.trace) == 3170 and not read.bad
    assert read.trace.header_int("MaxProcs") == 240
    assert read.trace.header["Computer"] == "Linux cluster (Seth)"
    assert (np.diff(read.trace.submit) >= 0).all()
    assert read.trace.run[0] == 31405 and read.trace.req_time[0] == 37980
    assert (read.trace.run == -1).sum() == 25  # missing run times kept as -1


def test_extended_fields_tolerated_and_missing_kept() -> None:
    read = parse_swf_text(f"; MaxProcs: 8\n{GOOD} 7 extra q\n", strict=True)
    assert len(read.trace) == 1 and read.trace.req_time[0] == 200 and read.trace.cpu_used[0] == -1


def test_bad_lines_named_by_line_and_field() -> None:
    text = f"; hi\n{GOOD}\n1 0 5 abc 4\n{GOOD.replace(' 4 200', ' 4 -7')}\n1 0 5 100\n"
    read = parse_swf_text(text, "log.swf")
    assert len(read.trace) == 1 and read.lines == 4
    msgs = [str(e) for e in read.bad]
    assert msgs[0].startswith("log.swf line 3 field 4 (run): got 'abc'")
    assert msgs[1].startswith("log.swf line 4 field 9 (req_time): got -7")
    assert msgs[2].startswith("log.swf line 5 field 5 (procs): missing")
    with pytest.raises(InputError, match=r"log.swf line 3 field 4 \(run\)"):
        parse_swf_text(text, "log.swf", strict=True)


def test_round_trip() -> None:
    t = make_trace(submit=[0, 10], run=[5, 7.5], procs=[1, 2], req_time=[60, 60], user=[1, 2])
    back = parse_swf_text(format_swf(t), strict=True).trace
    for name in ("submit", "run", "procs", "req_time", "user"):
        assert np.array_equal(back.columns[name], t.columns[name])


_token = st.one_of(
    st.integers(-3, 10**6).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["-1", "nan", "inf", "1e400", "abc", "", "0x10", "1_000", "٣"]),
)
_line = st.one_of(
    st.lists(_token, min_size=0, max_size=22).map(" ".join),
    st.text(max_size=60),
    st.just(GOOD),
    st.just("; MaxProcs: x"),
)


@fuzz(1.5)
@given(st.lists(_line, max_size=6))
def test_fuzz_never_a_traceback(lines: list[str]) -> None:
    text = "\n".join(lines)
    read = parse_swf_text(text, "f.swf")
    assert read.lines == len(read.trace) + len(read.bad)
    for e in read.bad:
        assert isinstance(e, InputError)
        assert " line " in e.where and " field " in e.where
    try:
        parse_swf_text(text, "f.swf", strict=True)
    except InputError as e:
        assert " line " in e.where and " field " in e.where
