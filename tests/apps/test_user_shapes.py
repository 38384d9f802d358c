"""A user's program checked against the grid it is asked for, sized from one partition, and
imported under a name numba's cache finds again (issue 38, items 5, 9 and 12).

The command line's side (one line, exit status 2, under mpiexec too) is in
tests/cli/test_user_shapes_cli.py.
"""

from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path

import pytest

import grapeshot.model.memory as memory
from grapeshot.apps.user import load_user_app
from grapeshot.model.errors import InputError
from grapeshot.model.memory import (
    RECORD_BYTES_PER_TASK,
    USER_BLOCK_COPIES,
    USER_BYTES_PER_PARTITION,
    USER_GATHER_COPIES,
    check_user_program_memory,
    user_program_bytes,
)
from tests.mpi_harness import ROOT

HEAT = ROOT / "examples" / "program" / "heat.py"

#: A 1-D heat rod: what a user with a 1-D code writes (and what grapeshot refuses).
ROD = """
import numpy as np
from numba import njit
from grapeshot.model.program import Exchange, Phase, Program

@njit(cache=False, nogil=True)
def step(u, out, box, params):
    g = box.ghost
    (n,) = box.shape
    if box.lo[0] == 0:
        u[g - 1] = u[g]
    if box.hi[0] == box.domain[0]:
        u[g + n] = u[g + n - 1]
    for i in range(g, g + n):
        out[i] = u[i] + params[0] * (u[i - 1] + u[i + 1] - 2.0 * u[i])

class Rod(Program):
    name = "rod"
    def __init__(self, parts, cells):
        self.parts_shape = tuple(parts)
        self.domain_shape = tuple(cells) if cells else (256,)
        self.phases = (
            Phase("u-to-v", step, fields=("u", "v"), params=lambda c: [0.25],
                  exchange=Exchange(("u",))),
            Phase("v-to-u", step, fields=("v", "u"), params=lambda c: [0.25],
                  exchange=Exchange(("v",))),
        )
    def init_block(self, box):
        x = np.arange(box.lo[0] - box.ghost, box.hi[0] + box.ghost, dtype=np.float64)
        u = np.exp(-(((x - 100.0) / 20.0) ** 2))
        return {"u": u, "v": u.copy()}
    def output_fields(self, block, box):
        return {"u": block["u"][box.interior()].copy()}
    def advance(self, ctx):
        return 1.0

def make(parts, cells=None, seed=0):
    return Rod(parts, cells)
"""

#: A 2-D program whose factory can be told to ignore --cells, or to forget the ghost layers,
#: and which counts the boxes init_block is called for.
PLATE = """
import numpy as np
from grapeshot.model.program import Exchange, Phase, Program

BUILT = []

def kernel(u, box, params):
    pass

class Plate(Program):
    name = "plate"
    def __init__(self, parts, cells, *, ghosts=True, block=None):
        self.parts_shape, self.domain_shape = tuple(parts), tuple(cells)
        self.ghosts, self.block = ghosts, block
        exchange = None if block else Exchange(("u",))
        self.phases = (Phase("p", kernel, fields=("u",), exchange=exchange),)
    def init_block(self, box):
        BUILT.append(box)
        shape = box.padded_shape if self.ghosts else box.shape
        return {"u": np.zeros(self.block or shape)}
    def output_fields(self, block, box):
        return {"u": block["u"][box.interior()].copy()}

def make(parts, cells=None, seed=0):
    return Plate(parts, cells or (48, 40))

def fixed(parts, cells=None, seed=0):
    return Plate(parts, (48, 40))

def flat(parts, cells=None, seed=0):
    return Plate(parts, (48, 40)[: len(parts) - 1] or (48,))

def no_ghosts(parts, cells=None, seed=0):
    return Plate(parts, cells or (48, 40), ghosts=False)

def big(parts, cells=None, seed=0):
    # Each partition's block: 1 MiB, whatever its cells (a field no grid exchange takes).
    return Plate(parts, cells, block=(128, 1024))
"""


def _write(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text(body)
    return path


@pytest.fixture
def plate(tmp_path: Path):
    """``(path, module)`` of PLATE, loaded as a user's file."""
    path = _write(tmp_path, "plate.py", PLATE)
    app = load_user_app(f"{path}:make")
    return path, sys.modules[app.factory.__module__]


@pytest.fixture
def room(monkeypatch):
    """This machine has 1 GiB available, whatever it really has."""
    monkeypatch.setattr(memory, "available_memory", lambda: 1 << 30)


# Item 5: the program's axes against --parts and --cells.


@pytest.mark.parametrize("parts", [(16, 16), (16, 1)])
def test_a_1d_program_on_a_2d_grid_is_refused_naming_parts_and_its_axes(tmp_path, parts) -> None:
    rod = _write(tmp_path, "rod.py", ROD)
    with pytest.raises(InputError) as caught:
        load_user_app(f"{rod}:make").make_program(parts, (4096, 4096), 0)
    message = str(caught.value)
    assert message.startswith(f"--parts: {rod}:make builds a 1-D program (init_block's 'u' ")
    assert f"for a 2-D grid of {parts} partitions" in message
    assert "not 1-D ones yet" in message and "\n" not in message


def test_a_1d_domain_for_2d_parts_is_refused_before_any_block(tmp_path) -> None:
    rod = _write(tmp_path, "rod.py", ROD)
    with pytest.raises(InputError, match=r"^--parts: .*returned a 1-D program \(cells \(256,\)\)"):
        load_user_app(f"{rod}:make").make_program((16, 1), None, 0)


def test_1d_parts_are_refused_in_one_line(tmp_path) -> None:
    # Only the Python API can ask for them (one --parts value means a square 2-D grid).
    rod = _write(tmp_path, "rod.py", ROD)
    with pytest.raises(InputError, match=r"^--parts: got parts \(16,\) and domain \(4096,\)"):
        load_user_app(f"{rod}:make").make_program((16,), (4096,), 0)


def test_a_factory_ignoring_cells_is_refused(plate) -> None:
    path, _ = plate
    with pytest.raises(InputError) as caught:
        load_user_app(f"{path}:fixed").make_program((4, 4), (64, 64), 0)
    assert str(caught.value) == (
        f"--cells: {path}:fixed returned a program of cells (48, 40); expected the cells "
        "asked for, (64, 64) (the factory's domain_shape = cells)"
    )
    # Without --cells the factory's own cells are the program's.
    assert load_user_app(f"{path}:fixed").make_program((4, 4), None, 0).domain_shape == (48, 40)


def test_a_domain_of_other_axes_names_the_axes(plate) -> None:
    path, _ = plate
    with pytest.raises(InputError) as caught:
        load_user_app(f"{path}:flat").make_program((2, 2, 2), None, 0)
    assert str(caught.value).startswith(
        f"--parts: {path}:flat returned a 2-D program (cells (48, 40)) for a 3-D grid of "
        "(2, 2, 2) partitions; expected --parts (and --cells) with 2 values"
    )


def test_a_grid_field_without_its_ghost_layers_names_the_partition(plate) -> None:
    path, _ = plate
    with pytest.raises(InputError) as caught:
        load_user_app(f"{path}:no_ghosts").make_program((4, 4), (48, 40), 0)
    assert str(caught.value) == (
        f"{path}:no_ghosts: partition 0: init_block's 'u', exchanged by phase 'p', has shape "
        "(12, 10); expected a grid field starting with the padded shape (14, 12) (cells "
        "(12, 10) and 1 ghost layers a side)"
    )


# Item 12: sized from one partition before the others are built.


def test_the_largest_partition_alone_is_built_to_size_the_run(plate) -> None:
    path, module = plate
    module.BUILT.clear()
    # 10 cells over 3 partitions: 3, 3 and 4 cells; the last is the largest.
    program = load_user_app(f"{path}:make").make_program((3, 2), (10, 40), 0)
    (box,) = module.BUILT
    assert box.index == (2, 0) and box.shape == (4, 20) and box.part == 4
    assert box == program.boxes()[4]


def test_a_program_too_big_is_refused_with_its_estimate(plate, room) -> None:
    path, module = plate
    module.BUILT.clear()
    with pytest.raises(InputError) as caught:
        load_user_app(f"{path}:big").make_program((32, 32), (2048, 2048), 0, steps=10)
    block = 128 * 1024 * 8
    need = 1024 * (USER_BLOCK_COPIES * block + USER_BYTES_PER_PARTITION + 800)
    need += 1024 * USER_GATHER_COPIES * 64 * 64 * 8
    assert str(caught.value) == (
        f"--parts 32,32 --cells 2048,2048: needs about {memory.format_bytes(need)} "
        f"({need:,} bytes) for plate's fields and partitions (1.0 MiB a partition's block), "
        "more than the 1.0 GiB this machine has available; expected fewer partitions "
        "(--parts) or cells (--cells)"
    )
    assert len(module.BUILT) == 1  # one partition's block, not 1024


def test_a_partition_too_big_to_build_is_refused_before_one_is_built(plate, room) -> None:
    # 16x16 partitions of 10^7 x 10^7 cells: a block of 625,002^2 padded cells, 2.8 TiB as
    # float64, cannot be allocated: refused from its cells (a byte each at least), before
    # init_block runs, in the words of the estimate.
    path, module = plate
    module.BUILT.clear()
    with pytest.raises(InputError) as caught:
        load_user_app(f"{path}:make").make_program((16, 16), (10**7, 10**7), 0, steps=10)
    error = str(caught.value)
    assert error.startswith("--parts 16,16 --cells 10000000,10000000: needs about "), error
    assert "for plate's fields and partitions (363.8 GiB a partition's block)" in error
    assert error.endswith("expected fewer partitions (--parts) or cells (--cells)")
    assert not module.BUILT


def test_a_share_of_the_partitions_is_weighed(plate, room) -> None:
    path, _ = plate
    app = load_user_app(f"{path}:big")
    # 1024 blocks of 1 MiB, twice: 2 GiB and more; a quarter of them fits in 1 GiB.
    with pytest.raises(InputError):
        app.make_program((32, 32), (256, 256), 0)
    program = app.make_program((32, 32), (256, 256), 0, share=0.25)
    assert program.n_parts == 1024


def test_user_program_bytes_counts_blocks_partitions_record_and_gathering() -> None:
    held, gathered = user_program_bytes(1000, 300, 16, 5)
    per_part = USER_BLOCK_COPIES * 1000 + USER_BYTES_PER_PARTITION + RECORD_BYTES_PER_TASK * 5
    assert held == 16 * per_part and gathered == 16 * USER_GATHER_COPIES * 300


def test_the_steps_are_named_when_the_record_is_most_of_the_need(room) -> None:
    with pytest.raises(InputError, match=r"^--parts 64,64 --steps 10000000: needs about "):
        check_user_program_memory("x", (64, 64), 10_000_000, where="--parts 64,64")
    check_user_program_memory("x", (64, 64), 10, where="--parts 64,64")  # fits


# Item 9: a file named like a standard-library module.


@pytest.mark.parametrize("stem", ["wave", "heapq"])
def test_a_stdlib_named_file_gets_a_name_of_its_own_wherever_it_lies(tmp_path, stem) -> None:
    first = tmp_path / "a" / f"{stem}.py"
    first.parent.mkdir()
    shutil.copy(HEAT, first)
    app = load_user_app(f"{first}:make_heat")
    name = app.factory.__module__
    assert name.startswith(f"_grapeshot_app_{stem}_") and sys.modules[name].__file__ == str(first)
    # numba's cache imports the module by that name again: it is there.
    assert importlib.import_module(name) is sys.modules[name]
    assert importlib.import_module(stem).__file__ != str(first)  # the stdlib's, not shadowed
    # The same file elsewhere (a copy of the folder, another mount) gets the same name.
    second = tmp_path / "b" / f"{stem}.py"
    second.parent.mkdir()
    shutil.copy2(first, second)
    assert load_user_app(f"{second}:make_heat").factory.__module__ == name
    # Another file of that stem gets another.
    third = tmp_path / "c" / f"{stem}.py"
    third.parent.mkdir()
    third.write_text(first.read_text() + "\n# edited\n")
    assert load_user_app(f"{third}:make_heat").factory.__module__ not in (name, stem)


def test_a_file_under_its_stem_answers_to_its_own_name_too(tmp_path) -> None:
    # A run where the stem was taken imported it as _grapeshot_app_...: numba's cache it
    # wrote then names that module, which this run must know too.
    path = _write(tmp_path, "probe_rod_stem.py", ROD)
    name = load_user_app(f"{path}:make").factory.__module__
    assert name == "probe_rod_stem"
    aliases = [
        known
        for known, module in sys.modules.items()
        if module is sys.modules[name] and known != name
    ]
    assert len(aliases) == 1 and aliases[0].startswith("_grapeshot_app_probe_rod_stem_")
