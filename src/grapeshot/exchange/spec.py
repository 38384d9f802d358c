"""Pattern specs (``regular:d=16,unit=512,seed=1``) and pattern files, validated.

Spec grammar: ``KIND[:key=value,...]`` with

``regular``     keys ``d`` (4), ``unit`` (bytes, 4096), ``n`` (ranks, 32), ``seed`` (0)
``nonuniform``  keys ``d`` (4), ``unit`` (64), ``n`` (32), ``seed`` (0), ``spread`` (32)
``airfoil``     keys ``points`` (2800), ``unit`` (16), ``parts`` (32), ``seed`` (0)

Pattern file (text, UTF-8): ``#`` starts a comment; the first non-comment line is
``ranks N``; every other line is ``SRC DST BYTES`` (integers, ``0 <= SRC, DST < N``,
``SRC != DST``, ``BYTES >= 0``; a repeated pair is refused). A ``.npy`` file holding an
``(n, n)`` integer array is read as COM directly.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from grapeshot.exchange import workloads
from grapeshot.exchange.pattern import Pattern
from grapeshot.model.errors import InputError, read_input_text
from grapeshot.model.npy_header import read_npy_header

#: kind -> (builder, {key: default})
KINDS: dict[str, tuple[Callable[..., Pattern], dict[str, int]]] = {
    "regular": (workloads.regular, {"d": 4, "unit": 4096, "n": 32, "seed": 0}),
    "nonuniform": (
        workloads.nonuniform,
        {"d": 4, "unit": 64, "n": 32, "seed": 0, "spread": 32},
    ),
    "airfoil": (workloads.airfoil, {"points": 2800, "unit": 16, "parts": 32, "seed": 0}),
}

#: Largest ranks / points a spec may ask for (keeps a typo from eating the memory).
LIMITS = {"n": 4096, "parts": 4096, "points": 2_000_000, "spread": 1 << 20, "unit": 1 << 40}


def describe_kinds() -> str:
    """One line per kind with its keys and defaults."""
    return "\n".join(
        f"{k}: " + ", ".join(f"{key}={v}" for key, v in defaults.items())
        for k, (_, defaults) in KINDS.items()
    )


def parse_spec(text: str, *, where: str = "--pattern") -> Pattern:
    """Build the :class:`Pattern` a spec string names.

    Raises
    ------
    InputError
        Naming the kind or the key at fault and what was expected.
    """
    kind, _, rest = text.strip().partition(":")
    kind = kind.strip()
    if kind not in KINDS:
        raise InputError(where, f"unknown pattern kind {kind!r}", f"one of {', '.join(KINDS)}")
    builder, defaults = KINDS[kind]
    values = dict(defaults)
    seen: set[str] = set()
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq:
            raise InputError(f"{where} {kind}", f"{item!r} has no '='", "key=value")
        if key not in defaults:
            raise InputError(
                f"{where} {kind}", f"unknown key {key!r}", f"one of {', '.join(defaults)}"
            )
        if key in seen:
            raise InputError(f"{where} {kind}.{key}", "given twice", "each key once")
        seen.add(key)
        try:
            number = int(value.strip())
        except ValueError:
            raise InputError(f"{where} {kind}.{key}", f"got {value!r}", "an integer") from None
        lo = 0 if key in ("seed", "d") else 1
        hi = LIMITS.get(key, 2**63 - 1)
        if not lo <= number <= hi:
            raise InputError(f"{where} {kind}.{key}", f"got {number}", f"in [{lo}, {hi}]")
        values[key] = number
    if kind in ("regular", "nonuniform"):
        if values["n"] < 2 or values["d"] > values["n"] - 1:
            raise InputError(
                f"{where} {kind}.d", f"d={values['d']} on n={values['n']} ranks", "0 <= d < n"
            )
    if kind == "airfoil":
        if values["points"] < 64:
            raise InputError(f"{where} airfoil.points", f"got {values['points']}", ">= 64")
        if values["parts"] < 2 or values["parts"] > values["points"] // 8:
            raise InputError(
                f"{where} airfoil.parts", f"got {values['parts']}", "2 <= parts <= points / 8"
            )
    seed = values.pop("seed")
    pattern = builder(**values, seed=seed)
    return Pattern(pattern.com, text.strip(), dict(pattern.meta, seed=seed))


def parse_pattern_text(text: str, *, name: str = "pattern") -> Pattern:
    """Parse the text pattern format (module docstring); errors name the line."""
    n: int | None = None
    entries: dict[tuple[int, int], int] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{name} line {lineno}"
        fields = line.split()
        if n is None:
            if len(fields) != 2 or fields[0] != "ranks":
                raise InputError(where, f"got {line!r}", "'ranks N' first")
            try:
                n = int(fields[1])
            except ValueError:
                raise InputError(where, f"ranks {fields[1]!r}", "an integer") from None
            if not 1 <= n <= LIMITS["n"]:
                raise InputError(where, f"ranks {n}", f"in [1, {LIMITS['n']}]")
            continue
        if len(fields) != 3:
            raise InputError(where, f"{len(fields)} fields", "SRC DST BYTES")
        try:
            src, dst, nbytes = (int(f) for f in fields)
        except ValueError:
            raise InputError(where, f"got {line!r}", "three integers SRC DST BYTES") from None
        for label, v in (("SRC", src), ("DST", dst)):
            if not 0 <= v < n:
                raise InputError(f"{where} {label}", f"got {v}", f"a rank in [0, {n})")
        if src == dst:
            raise InputError(f"{where} DST", f"equals SRC {src}", "another rank")
        if not 0 <= nbytes < 2**62:
            raise InputError(f"{where} BYTES", f"got {nbytes}", "in [0, 2^62)")
        if (src, dst) in entries:
            raise InputError(where, f"pair {src} -> {dst} repeated", "each pair once")
        entries[(src, dst)] = nbytes
    if n is None:
        raise InputError(name, "no 'ranks N' line", "a pattern file")
    com = np.zeros((n, n), dtype=np.int64)
    for (s, d), b in entries.items():
        com[s, d] = b
    return Pattern(com, name)


def format_pattern(pattern: Pattern) -> str:
    """The text form of ``pattern`` (``parse_pattern_text`` reads it back)."""
    src, dst = np.nonzero(pattern.com)
    lines = [f"# {pattern.name}", f"ranks {pattern.n}"]
    lines += [
        f"{s} {d} {pattern.com[s, d]}" for s, d in zip(src.tolist(), dst.tolist(), strict=True)
    ]
    return "\n".join(lines) + "\n"


def _load_npy(path: Path) -> Pattern:
    """COM from an ``.npy`` file, its header checked before any data is read.

    A header can claim any shape, so ``np.load`` alone may try to allocate exabytes or meet
    the end of the file; every refusal names the file.
    """
    where, expected = str(path), f"an (n, n) integer .npy, n <= {LIMITS['n']}"
    try:
        with open(path, "rb") as fh:
            shape, fortran, dtype = read_npy_header(fh, where, expected)
            n = shape[0] if len(shape) == 2 and shape[0] == shape[1] else -1
            if dtype.kind not in "iu" or not 1 <= n <= LIMITS["n"]:
                raise InputError(where, f"holds {dtype} of shape {shape}", expected)
            data = fh.read(n * n * dtype.itemsize + 1)
    except OSError as exc:
        raise InputError(where, f"cannot read ({exc.strerror or exc})", expected) from None
    if len(data) != n * n * dtype.itemsize:
        raise InputError(where, f"has {len(data)} bytes of data for {shape} {dtype}", expected)
    arr = np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C")
    if arr.size and arr.max() >= 2**62:  # int64 sums of many messages must not overflow
        i, j = np.unravel_index(int(np.argmax(arr)), shape)
        raise InputError(f"{where}: com[{i}, {j}]", f"got {arr[i, j]}", "bytes in [0, 2^62)")
    return Pattern(arr.astype(np.int64), path.name)


def load_pattern(spec_or_file: str) -> Pattern:
    """A spec string, or a pattern file (text or ``.npy``) if it names an existing file."""
    path = Path(spec_or_file)
    if path.suffix == ".npy":
        if not path.is_file():
            raise InputError(str(path), "no such file", "an .npy pattern file")
        return _load_npy(path)
    if path.is_file():
        return parse_pattern_text(read_input_text(path, "a pattern file"), name=str(path))
    kind = spec_or_file.strip().partition(":")[0].strip()
    if kind not in KINDS and ":" not in spec_or_file:
        # Not a kind and no keys: the user meant a file ("pattern.txt", "runs/p"), or a kind
        # mistyped; say both rather than only "unknown pattern kind".
        if path.suffix or "/" in spec_or_file or os.sep in spec_or_file:
            problem = "no such file" if not path.exists() else "is not a file"
            raise InputError(
                f"--pattern {spec_or_file}",
                problem,
                "a pattern file (text 'ranks N' + 'SRC DST BYTES' lines, or an (n, n) .npy) "
                f"or a SPEC KIND:key=value,... with KIND one of {', '.join(KINDS)}",
            )
        raise InputError(
            "--pattern",
            f"{spec_or_file!r} is neither a file nor a pattern kind",
            f"an existing pattern file, or one of {', '.join(KINDS)} ('--pattern help')",
        )
    return parse_spec(spec_or_file)
