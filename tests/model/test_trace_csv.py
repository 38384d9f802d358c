"""Traces from elsewhere: the cost and halo CSV files become a workload, or one clear refusal.

Every refusal names the file, the line and the column, and what was expected.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from grapeshot.model import csv_table
from grapeshot.model.errors import InputError
from grapeshot.model.trace_csv import import_trace, read_costs, read_halo
from grapeshot.model.workload import grid_halo


def write_costs(path: Path, cost: np.ndarray, *, order: np.ndarray | None = None) -> Path:
    """``cost`` (steps, P) as a cost CSV file, rows in ``order`` (default C order)."""
    steps, parts = np.indices(cost.shape).reshape(2, -1)
    rows = np.arange(cost.size) if order is None else order
    body = "".join(f"{steps[i]},{parts[i]},{float(cost.flat[i])!r}\n" for i in rows)
    path.write_text("step,partition,seconds\n" + body)
    return path


def test_costs_in_any_order_round_trip(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    cost = rng.uniform(0, 0.01, size=(5, 12))
    cost[2, 4] = 0.0
    path = write_costs(tmp_path / "c.csv", cost, order=rng.permutation(cost.size))
    wl = import_trace(path, (3, 4))
    assert np.array_equal(wl.cost, cost)  # repr of a float64 reads back bit for bit
    assert (wl.units, wl.app, wl.scene, wl.domain_shape) == ("s", "import", "c.csv", (3, 4))
    expected = grid_halo((3, 4), (3, 4), ghost=1, cell_bytes=8)
    assert np.array_equal(wl.halo.indices, expected.indices)
    assert np.array_equal(wl.halo.nbytes, expected.nbytes)


def test_cells_size_the_grid_halo(tmp_path: Path) -> None:
    path = write_costs(tmp_path / "c.csv", np.ones((1, 4)))
    wl = import_trace(path, (2, 2), cells=(8, 6))
    assert wl.domain_shape == (8, 6)
    assert np.array_equal(wl.halo.nbytes, grid_halo((8, 6), (2, 2)).nbytes)


def test_columns_in_any_order_case_and_blanks(tmp_path: Path) -> None:
    path = tmp_path / "c.csv"
    path.write_bytes(b"\xef\xbb\xbf Seconds ,STEP,partition\r\n1e-3,0,1\r\n\r\n2.5,0,0\r\n")
    assert read_costs(path, (2, 1)).tolist() == [[2.5, 0.001]]


def test_halo_file_is_the_halo(tmp_path: Path) -> None:
    costs = write_costs(tmp_path / "c.csv", np.ones((2, 4)))
    halo = tmp_path / "h.csv"
    halo.write_text("dst,src,bytes\n0,3,10\n2,0,7\n1,0,5\n3,2,0\n")
    wl = import_trace(costs, (4, 1), halo=halo)
    assert wl.halo.indptr.tolist() == [0, 2, 2, 3, 4]
    assert wl.halo.indices.tolist() == [1, 2, 3, 0]
    assert wl.halo.nbytes.tolist() == [5, 7, 0, 10]
    (tmp_path / "none.csv").write_text("src,dst,bytes\n")
    assert read_halo(tmp_path / "none.csv", (4, 1)).n_messages == 0


def test_many_rows_cross_chunks(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(csv_table, "CHUNK_ROWS", 7)  # many chunks from a small file
    cost = np.arange(60, dtype=np.float64).reshape(5, 12)
    path = write_costs(tmp_path / "c.csv", cost)
    assert np.array_equal(read_costs(path, (4, 3)), cost)
    text = path.read_text().splitlines()
    text[45] = "3,9,oops"
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(InputError, match=r"c\.csv: line 46, column 'seconds': got 'oops'"):
        read_costs(path, (4, 3))


COST_REFUSALS = [
    ("", "is empty; expected a cost CSV file (step,partition,seconds; docs/formats.md)"),
    ("step,partition,seconds\n", "has no rows; expected a row per step and partition"),
    ("0,0,1.5\n", "line 1: is no header (it reads '0,0,1.5'); expected a first line naming "
                  "the columns step,partition,seconds"),
    ("step,part,seconds\n", "line 1: names the column 'part'"),
    ("step,partition\n", "line 1: has no column 'seconds'"),
    ("step,partition,seconds\n0,0,abc\n", "line 2, column 'seconds': got 'abc'; expected a "
                                          "number >= 0"),
    ("step,partition,seconds\n0,0,-1\n", "line 2, column 'seconds': got '-1'; expected a "
                                         "number >= 0"),
    ("step,partition,seconds\n0,0,nan\n", "line 2, column 'seconds': got 'nan'"),
    ("step,partition,seconds\n0,0,inf\n", "line 2, column 'seconds': got 'inf'"),
    ("step,partition,seconds\n0,0,\n", "line 2, column 'seconds': is blank"),
    ("step,partition,seconds\n0.5,0,1\n", "line 2, column 'step': got '0.5'; expected a step "
                                          "number >= 0"),
    ("step,partition,seconds\n-1,0,1\n", "line 2, column 'step': got '-1'"),
    ("step,partition,seconds\n0,4,1\n", "line 2, column 'partition': got '4'; expected a "
                                        "partition in [0, 3] (--parts 2,2)"),
    ("step,partition,seconds\n0,0,1,2\n", "line 2: has 4 fields; expected 3"),
    ("step,partition,seconds\n0,0,1\n0,1,1\n0,0,2\n", "line 4: repeats step 0, partition 0 "
                                                      "(line 2); expected each (step, "
                                                      "partition) on one row"),
    ("step,partition,seconds\n0,0,1\n0,1,1\n0,2,1\n", "has no row for step 0, partition 3 "
                                                      "(3 rows for steps 0 to 0); expected "
                                                      "1 × 4 rows, one for every step and "
                                                      "every partition of --parts 2,2 (an "
                                                      "idle partition: seconds 0)"),
    ("step,partition,seconds\n0,0,1\n0,1,1\n0,2,1\n0,3,1\n2,0,1\n",
     "has no row for step 1, partition 0"),
    # A typo'd step far away is one missing row, not an array of 10**18 steps.
    ("step,partition,seconds\n" + "".join(f"0,{p},1\n" for p in range(4))
     + "999999999999999999,0,1\n", "has no row for step 1, partition 0"),
    ('step,partition,seconds\n0,0,"1\n', "line 2: is not CSV (unexpected end of data)"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "message"), COST_REFUSALS)
def test_cost_refusals(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "costs.csv"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        read_costs(path, (2, 2))
    assert str(err.value).startswith(f"{path}: {message}"), str(err.value)


def test_the_missing_row_is_the_first_in_c_order(tmp_path: Path) -> None:
    cost = np.ones((3, 4))
    steps, parts = np.indices(cost.shape).reshape(2, -1)
    keep = ~(((steps == 1) & (parts == 2)) | ((steps == 2) & (parts == 0)))
    path = tmp_path / "c.csv"
    rows = "".join(f"{s},{p},1\n" for s, p in zip(steps[keep], parts[keep], strict=True))
    path.write_text("step,partition,seconds\n" + rows)
    with pytest.raises(InputError, match="has no row for step 1, partition 2 "):
        read_costs(path, (2, 2))


HALO_REFUSALS = [
    ("", "is empty; expected a halo CSV file (src,dst,bytes; docs/formats.md)"),
    ("src,dst\n", "line 1: has no column 'bytes'"),
    ("src,dst,bytes\n0,4,8\n", "line 2, column 'dst': got '4'; expected a partition in [0, 3]"),
    ("src,dst,bytes\n0,1,8.5\n", "line 2, column 'bytes': got '8.5'; expected an integer "
                                 "number of bytes in [0, 2**40]"),
    ("src,dst,bytes\n0,1,-8\n", "line 2, column 'bytes': got '-8'"),
    ("src,dst,bytes\n0,1,1099511627777\n", "line 2, column 'bytes': got '1099511627777'"),
    ("src,dst,bytes\n0,1,8\n2,2,8\n", "line 3, column 'dst': is 2, the src; expected a "
                                      "partition other than src"),
    ("src,dst,bytes\n0,1,8\n1,0,8\n0,1,4\n", "line 4: repeats src 0, dst 1 (line 2); expected "
                                             "each (src, dst) on one row"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "message"), HALO_REFUSALS)
def test_halo_refusals(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "halo.csv"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        read_halo(path, (2, 2))
    assert str(err.value).startswith(f"{path}: {message}"), str(err.value)


def test_the_grid_is_checked_before_the_files(tmp_path: Path) -> None:
    # The cost file does not exist: the grid's error comes first.
    with pytest.raises(InputError, match=r"--parts/--cells: got 4 partitions over 2 cells"):
        import_trace(tmp_path / "none.csv", (4, 4), cells=(2, 8))
    with pytest.raises(InputError, match=r"--parts/--cells: got parts \(4,\)"):
        import_trace(tmp_path / "none.csv", (4,))
