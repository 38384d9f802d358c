"""``--pattern`` fuzzed: SPECs, text pattern files and ``.npy`` files.

Each gets random bytes (a command line's argument is bytes too: non-UTF-8 ones arrive as lone
surrogates), near-valid input (a valid SPEC or file with one key, value, line or byte
damaged), and valid input that must read back exactly. The property: a :class:`Pattern`
(square, integer bytes >= 0, nothing on the diagonal) or one InputError naming the option
(``--pattern``, with the key: ``--pattern regular.d``) or the file (and its line); never
another exception. tests/exchange/test_pattern_spec.py fuzzes both parsers on random text
as well.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from grapeshot.exchange.pattern import Pattern
from grapeshot.exchange.spec import (
    KINDS,
    LIMITS,
    format_pattern,
    load_pattern,
    parse_pattern_text,
    parse_spec,
)
from grapeshot.model.errors import InputError
from tests.fuzz import example_file, fuzz

#: The SPEC parser builds a pattern (a mesh for airfoil): a share of the quick pass.
SPEC_SETTINGS = fuzz(0.5)
#: The file readers go through a temporary file each.
FILE_SETTINGS = fuzz(0.4)


def _is_pattern(p: Pattern) -> None:
    com = p.com
    assert com.ndim == 2 and com.shape[0] == com.shape[1] >= 1 and com.dtype == np.int64
    assert (com >= 0).all() and not np.diagonal(com).any()


def _spec_or_named_error(spec: str) -> Pattern | None:
    try:
        p = parse_spec(spec)
    except InputError as exc:
        assert str(exc).startswith("--pattern"), str(exc)
        return None
    _is_pattern(p)
    return p


#: Arguments as the shell hands them over: any bytes, decoded as Python decodes argv.
ARGV_TEXT = st.binary(max_size=60).map(lambda b: b.decode("utf-8", "surrogateescape"))


@SPEC_SETTINGS
@given(ARGV_TEXT)
def test_pattern_spec_fuzz_any_bytes(spec: str) -> None:
    _spec_or_named_error(spec)


#: Values a SPEC key may get: small ones (cheap patterns and meshes), the limits and just
#: past them, and what is no integer at all.
SPEC_VALUES = st.one_of(
    st.integers(-3, 40).map(str),
    st.sampled_from(["64", "65", "70", "4097", str(2**63), str(-(2**63)), str(1 << 40),
                     str((1 << 40) + 1), str((1 << 20) + 1), "", " ", "x", "1.5", "1e3", "0x10",
                     "1_0", "+3", "٣", "²", "9" * 5000, "\x00", "=", "nan"]),
    st.text(max_size=6),
)  # fmt: skip


@st.composite
def near_valid_specs(draw: st.DrawFn) -> str:
    """``KIND:key=value,...`` with the kind's keys (and some others), values of any sort."""
    kind = draw(st.sampled_from([*KINDS, "regular ", "Regular", "", "airfoil:"]))
    keys = [*KINDS.get(kind.strip(), KINDS["regular"])[1], "q", "", "d "]
    items = draw(st.lists(st.tuples(st.sampled_from(keys), SPEC_VALUES), max_size=4))
    sep = draw(st.sampled_from(["=", "=", " = ", ":", ""]))
    spec = kind + ":" + ",".join(f"{k}{sep}{v}" for k, v in items)
    if kind.strip() == "airfoil":
        # A mesh of the default 2,800 points takes a second: keep the fuzz's meshes small.
        spec = spec.replace("points", "pts") + ",points=" + draw(st.sampled_from(["64", "80"]))
    return spec


@SPEC_SETTINGS
@given(near_valid_specs())
def test_pattern_spec_fuzz_near_valid(spec: str) -> None:
    _spec_or_named_error(spec)


@st.composite
def valid_specs(draw: st.DrawFn) -> tuple[str, dict[str, int]]:
    """A valid SPEC of a regular or nonuniform set (small), and the values it names."""
    kind = draw(st.sampled_from(["regular", "nonuniform"]))
    n = draw(st.integers(2, 40))
    values = {
        "n": n,
        "d": draw(st.integers(0, n - 1)),
        "unit": draw(st.integers(1, LIMITS["unit"])),
        "seed": draw(st.integers(0, 2**32)),
    }
    if kind == "nonuniform":
        values["spread"] = draw(st.integers(1, LIMITS["spread"]))
    keys = draw(st.permutations(list(values)))
    return kind + ":" + ",".join(f"{k}={values[k]}" for k in keys), values


@SPEC_SETTINGS
@given(valid_specs())
def test_pattern_spec_fuzz_round_trip(case: tuple[str, dict[str, int]]) -> None:
    spec, v = case
    p = parse_spec(spec)
    _is_pattern(p)
    sent = (p.com > 0).sum(axis=1)
    assert p.n == v["n"] and (sent == v["d"]).all() and ((p.com > 0).sum(axis=0) == v["d"]).all()
    sizes = p.com[p.com > 0]
    assert (sizes % v["unit"] == 0).all() and (sizes <= v["unit"] * v.get("spread", 1)).all()
    # The same SPEC gives the same pattern, and its text file reads back the same COM.
    assert np.array_equal(parse_spec(spec).com, p.com)
    assert np.array_equal(parse_pattern_text(format_pattern(p)).com, p.com)


# --- pattern files ------------------------------------------------------------------------


def _file_or_named_error(path: Path) -> Pattern | None:
    try:
        p = load_pattern(str(path))
    except InputError as exc:
        assert str(exc).startswith((str(path), path.name)), str(exc)
        return None
    _is_pattern(p)
    return p


@FILE_SETTINGS
@given(st.binary(max_size=300), st.sampled_from([".txt", ".npy", ""]))
def test_pattern_file_fuzz_any_bytes(data: bytes, suffix: str) -> None:
    _file_or_named_error(example_file(data, suffix))


#: Fields a damaged line may hold.
BAD_FIELDS = st.one_of(
    st.sampled_from(["", "-1", "1.5", "1e3", "nan", "+1", "1_0", "٣", "²", str(2**62),
                     str(2**63), "9" * 5000, "ranks", "#", "\x00", "\x0b", "\u2028", "x"]),
    st.integers(-5, 50).map(str),
    st.text(max_size=6),
)  # fmt: skip

COMS = (
    st.integers(1, 8)
    .flatmap(
        lambda n: st.lists(
            st.lists(st.integers(0, 2**40) | st.just(0), min_size=n, max_size=n),
            min_size=n,
            max_size=n,
        )
    )
    .map(lambda rows: _no_diagonal(np.array(rows, dtype=np.int64)))
)


def _no_diagonal(com: np.ndarray) -> np.ndarray:
    np.fill_diagonal(com, 0)
    return com


@FILE_SETTINGS
@given(COMS, st.data())
def test_pattern_file_fuzz_one_damaged_field(com: np.ndarray, data: st.DataObject) -> None:
    lines = format_pattern(Pattern(com, "fuzz")).splitlines()
    i = data.draw(st.integers(0, len(lines) - 1))
    fields = lines[i].split(" ")
    how = data.draw(st.sampled_from(["field", "drop", "extra", "repeat"]))
    if how == "field":
        fields[data.draw(st.integers(0, len(fields) - 1))] = data.draw(BAD_FIELDS)
    elif how == "drop":
        del fields[data.draw(st.integers(0, len(fields) - 1))]
    elif how == "extra":
        fields.append(data.draw(BAD_FIELDS))
    lines[i] = " ".join(fields)
    if how == "repeat":
        lines.append(lines[i])
    _file_or_named_error(example_file("\n".join(lines) + "\n", ".txt"))


@FILE_SETTINGS
@given(COMS, st.sampled_from(["<i8", "<i4", ">u2", "<u8"]), st.booleans())
def test_pattern_file_fuzz_round_trip(com: np.ndarray, dtype: str, fortran: bool) -> None:
    back = _file_or_named_error(example_file(format_pattern(Pattern(com, "fuzz")), ".txt"))
    assert back is not None and np.array_equal(back.com, com)
    arr = com.astype(dtype) if np.can_cast(com.max(initial=0), dtype) else com
    path = example_file(b"", ".npy")
    np.save(path, np.asfortranarray(arr) if fortran else arr)
    back = _file_or_named_error(path)
    assert back is not None and np.array_equal(back.com, com)


@FILE_SETTINGS
@given(COMS, st.integers(0, 400), st.binary(min_size=1, max_size=6), st.booleans())
def test_pattern_npy_fuzz_damaged_bytes(com: np.ndarray, at: int, junk: bytes, cut: bool) -> None:
    path = example_file(b"", ".npy")
    np.save(path, com)
    whole = path.read_bytes()
    at = min(at, len(whole))
    path.write_bytes(whole[:at] if cut else whole[:at] + junk + whole[at + len(junk) :])
    _file_or_named_error(path)
