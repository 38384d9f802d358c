"""Write and read placement files of 10,000,000 partitions: grapeshot against plain Python.

Run: ``python benchmarks/bench_placement_files.py [--parts N]``. A placement of N partitions
(random nodes of 31,250 and cores of 32, seed 2024) is written as ``.json``, ``.part`` and
``.csv`` by :func:`grapeshot.model.placement.save_placement` (the compiled writer,
``model/int_rows.py``) and by what a user would write without grapeshot (``json.dumps`` of the
lists, ``str`` of every number joined), and read back by
:func:`~grapeshot.model.placement.load_placement` (the compiled scanners,
``model/int_rows.py`` and ``model/json_ints.py``) and by ``json.load`` + ``np.asarray`` and
``np.loadtxt`` (numpy's C reader). Best of 2 after a warm-up on a small placement (numba's
cache); the files written are checked byte for byte equal, the arrays read equal.
Goals: every write and the JSON's read at least twice as fast as the plain version (a string
or a Python int per number: the compiled code's reason to be); the ``.part`` and ``.csv``
reads within 20 % of ``np.loadtxt`` (>= 0.8x), which is C too and checks less (no range, no
partition order, no line named in a refusal): the two measured 0.7-1.2x of each other here.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np

from grapeshot.model.placement import Placement, load_placement, save_placement
from timing import best_of, figure

NODES, CORES, SEED, REPEATS = 31_250, 32, 2024, 2
#: The goal on ``baseline / ours`` of each figure: the reads of numpy's C reader are a par.
TARGETS = {"write": 2.0, "read json": 2.0, "read part": 0.8, "read csv": 0.8}


def _plain_write(path: Path, fmt: str, p: Placement) -> None:
    nodes, cores = p.node_of.tolist(), p.core_of.tolist()
    with open(path, "w", encoding="ascii") as fh:
        if fmt == "json":
            fh.write(json.dumps(p.to_dict()) + "\n")
        elif fmt == "part":
            fh.write("\n".join(map(str, nodes)) + "\n")
        else:
            fh.write("partition,node,core\n")
            fh.write("".join(map("{},{},{}\n".format, range(len(nodes)), nodes, cores)))


def _plain_read(path: Path, fmt: str) -> np.ndarray:
    """The node of every partition."""
    if fmt == "json":
        with open(path, encoding="utf-8") as fh:
            return np.asarray(json.load(fh)["node_of"], dtype=np.int64)
    if fmt == "part":
        return np.loadtxt(path, dtype=np.int64)
    return np.loadtxt(path, dtype=np.int64, delimiter=",", skiprows=1)[:, 1]


def _bench(d: Path, fmt: str, p: Placement) -> None:
    """Write and read one format, ours then the plain version; print both figures."""
    n = p.n_parts
    ours, plain = d / f"ours.{fmt}", d / f"plain.{fmt}"
    small = Placement(np.arange(4) % 2, 2, "x", core_of=np.zeros(4, dtype=np.int64))
    save_placement(d / f"small.{fmt}", small, fmt)  # numba's cache, outside the timing
    load_placement(d / f"small.{fmt}")
    t_ours = best_of(lambda: save_placement(ours, p, fmt), REPEATS, warm_up=False)
    t_plain = best_of(lambda: _plain_write(plain, fmt, p), REPEATS, warm_up=False)
    size = f"{ours.stat().st_size / 2**20:.0f} MiB"
    figure(
        f"write a .{fmt} placement of {n:,} partitions", t_ours, t_plain,
        baseline_name="plain Python: " + ("json.dumps" if fmt == "json" else "str joined"),
        same=ours.read_bytes() == plain.read_bytes(), target=TARGETS["write"], note=size,
    )  # fmt: skip
    got: list[Placement] = []
    base: list[np.ndarray] = []
    t_ours = best_of(lambda: got.append(load_placement(ours)), REPEATS, warm_up=False)
    t_plain = best_of(lambda: base.append(_plain_read(plain, fmt)), REPEATS, warm_up=False)
    figure(
        f"read a .{fmt} placement of {n:,} partitions", t_ours, t_plain,
        baseline_name="json.load + np.asarray" if fmt == "json" else "np.loadtxt",
        same=bool(np.array_equal(got[-1].node_of, base[-1])), target=TARGETS[f"read {fmt}"],
        note=size,
    )  # fmt: skip
    ours.unlink()
    plain.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", type=int, default=10_000_000)
    n = parser.parse_args().parts
    rng = np.random.default_rng(SEED)
    p = Placement(
        rng.integers(0, NODES, n), NODES, "birdshot", seed=SEED, core_of=rng.integers(0, CORES, n)
    )
    print(f"placement files of {n:,} partitions (best of {REPEATS}, after warm-up)")
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in ("json", "part", "csv"):
            _bench(Path(tmp), fmt, p)


if __name__ == "__main__":
    main()
