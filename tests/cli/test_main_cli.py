"""``grapeshot --help`` and ``--version``: the overview names every command, lazily."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

import grapeshot
from grapeshot import __version__
from grapeshot.cli import main as cli_main
from tests.cli.helpers import run_main

#: What a command line that only prints help or a formula must not pay to import.
HEAVY = ("numba", "matplotlib", "scipy.stats", "scipy.fft", "h5py", "mpi4py", "sklearn")


def _first_paragraph(text: str) -> str:
    return " ".join(text.strip().split("\n\n")[0].split())


def test_help_names_every_command() -> None:
    result = run_main("--help")
    assert result.code == 0, result.err
    overview = " ".join(result.out.split("Options")[0].replace("│", " ").split())
    mentioned = set(re.findall(r"\(([a-z0-9-]+)[:)]", overview))
    mentioned |= {
        n for group in re.findall(r"\(([a-z0-9, -]+)\)", overview) for n in group.split(", ")
    }
    commands = set(cli_main.COMMANDS)
    assert {"lif", "place", "trace", "run", "simulate", "demo", "jobs"} <= commands
    assert commands <= mentioned, commands - mentioned


@pytest.mark.parametrize("name", list(cli_main.COMMANDS))
def test_overview_summary_is_the_commands_own(name: str) -> None:
    # The overview is printed from COMMANDS without importing the modules: it must not drift
    # from the help each command prints itself.
    command = cli_main.load_command(name)
    assert _first_paragraph(command.help or "") == cli_main.COMMANDS[name][1]
    assert cli_main.load_command(name) is command  # registered once per process


def test_the_version_is_pyprojects() -> None:
    import tomllib

    from tests.mpi_harness import ROOT

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["version"] == __version__ == grapeshot.__version__


def test_version() -> None:
    result = run_main("--version")
    assert result.code == 0, result.err
    assert result.out.strip() == f"grapeshot {__version__}"


def _imported_by(*args: str) -> set[str]:
    """Modules a fresh interpreter has imported after ``grapeshot ARGS`` (its exit ignored)."""
    code = (
        "import json, sys\n"
        "from grapeshot.cli.main import main\n"
        "try:\n"
        f"    main({list(args)!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stdout.write('\\n' + json.dumps(sorted(sys.modules)))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return set(json.loads(proc.stdout.splitlines()[-1]))


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("--version",),
        ("run", "--help"),
        (
            "theorem1",
            "--chares-per-node",
            "64",
            "--nodes",
            "16",
            "--alpha",
            "0.05",
            "--a",
            "1",
            "--b",
            "2",
        ),
    ],
    ids=["help", "version", "run-help", "theorem1"],
)
def test_light_commands_do_not_import_heavy_modules(args: tuple[str, ...]) -> None:
    mods = _imported_by(*args)
    heavy = {m for m in mods if any(m == h or m.startswith(h + ".") for h in HEAVY)}
    assert not heavy, sorted(heavy)[:10]


@pytest.mark.parametrize(
    "args",
    [
        ("lif", "--nodes", "16", "--parts-per-node", "8", "--busy", "0.5"),
        ("advise", "--nodes", "1024", "--busy", "0.6", "--target-lif", "0.1"),
    ],
)
def test_lif_and_advise_import_nothing_heavy(args: tuple[str, ...]) -> None:
    # One E[LIF], or the few hundred the advisor scans, run interpreted: numba's import
    # alone costs more than the work (tests/theory/test_binomial_paths.py: same bits).
    mods = _imported_by(*args)
    heavy = {m for m in mods if any(m == h or m.startswith(h + ".") for h in HEAVY)}
    assert not heavy, sorted(heavy)[:10]


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (("lif", "--nodes", "x"), ("grapeshot lif: error: invalid value for '--nodes'",)),
        (("lif", "--bogus"), ("grapeshot lif: error: no such option: --bogus",)),
        (("nope",), ("grapeshot: error: no such command 'nope'",)),
        (("place",), ("grapeshot place: error: missing option",)),
    ],
)
def test_usage_errors_are_one_line(args: tuple[str, ...], names: tuple[str, ...]) -> None:
    result = run_main(*args)
    assert result.code == 2 and result.out == ""
    lines = result.err.splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith(names[0]) and lines[0].endswith("--help')")


@pytest.mark.mpi
def test_a_command_without_mpi_runs_once_under_mpiexec() -> None:
    from tests.mpi_harness import run_mpi

    args = ["-m", "grapeshot.cli.main", "lif", "--nodes", "4", "--parts-per-node", "8",
            "--busy", "0.5", "--json"]  # fmt: skip
    proc = run_mpi(2, args)
    assert len(proc.stdout.strip().splitlines()) == 1  # one rank printed, not two
    assert json.loads(proc.stdout)["nodes"] == 4
    assert proc.stderr.count("warning: 'lif' does not use MPI") == 1


@pytest.mark.parametrize("delay", [0.15, 0.3, 0.6])
def test_ctrl_c_at_any_moment_of_start_up_is_quiet(delay: float) -> None:
    # Whenever the interrupt lands (imports, parsing, the command), one line or none, no
    # traceback; the delay only spreads the attempts over the start-up. The interpreter's own
    # start, before any grapeshot code runs, is left out: nothing can catch there. On a loaded
    # machine it can outlast the delay; such an attempt (a traceback without one grapeshot
    # frame) is made again a little later.
    import signal
    import time
    from pathlib import Path

    script = Path(sys.executable).parent / "grapeshot"
    package = str(Path(grapeshot.__file__).parent)
    for attempt in range(5):
        proc = subprocess.Popen(
            [str(script), "lif", "--nodes", "4096", "--parts-per-node", "64", "--busy", "0.6"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        time.sleep(delay + 0.2 * attempt)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
        before_our_code = "Traceback" in err and package not in err
        if not before_our_code:
            break
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    # 130 from our handler; killed by the signal itself (-SIGINT, what a shell also shows as
    # 130) when it lands before Python installs its own handler.
    assert proc.returncode in (0, 130, -signal.SIGINT), (proc.returncode, err)
    assert len(err.strip().splitlines()) <= 1, err
