"""Run every benchmark and write ``benchmarks/RESULTS.md`` (what ``make bench`` does).

Each ``benchmarks/bench_*.py`` runs in its own process from the repository root, its output
shown as it comes and kept; ``bench_runtime.py`` runs under ``mpiexec -n 2`` (the venv's),
``bench_micro_partitions.py`` starts its own; the benchmarks in ``ARGS`` get those arguments
(``--large``: the slow, exascale-size cases). The file written (atomically: a temporary file,
then a rename) holds the date, the machine, the Python / numpy / numba / scipy / mpi4py
versions and the commit, a table of every figure a benchmark reported through
:func:`timing.figure` (ours, the baseline, what the baseline is, whether the two results
were checked equal, the ratio and its target), then each benchmark's full output, where the
benchmarks that do not report figures print their own baselines and ratios.

Run: ``.venv/bin/python benchmarks/run_all.py [--only NAME ... [--update]] [--out PATH]``.
With ``--update`` the benchmarks named by ``--only`` are run again and replace their rows and
output in the file; the others' are kept, and the header says which ran at which commit.
The docs cite the file instead of copying its numbers.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from timing import FIGURES_ENV

HERE = Path(__file__).resolve().parent
#: Where the results go by default (``--out``).
RESULTS = HERE / "RESULTS.md"
ROOT = HERE.parent
#: Benchmarks that need ranks: the launcher's arguments before the script.
LAUNCH = {"bench_runtime": ["-n", "2"], "bench_exchange_mpi": ["-n", "4"]}
#: Arguments after the script: ``--large`` adds the exascale sizes of issue 25 (slow).
ARGS = {"bench_place": ["--large"], "bench_sim": ["--large"]}


@dataclass
class Outcome:
    """One benchmark's run: its command, exit status, seconds, output and figures."""

    name: str
    command: list[str]
    status: int
    seconds: float
    output: str
    figures: list[dict] = field(default_factory=list)


def mpiexec() -> str:
    """The ``mpiexec`` beside this Python (the venv's ``mpich``), else the one on PATH."""
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else "mpiexec"


def command(script: Path) -> list[str]:
    """How ``script`` is started."""
    base = [sys.executable, str(script.relative_to(ROOT)), *ARGS.get(script.stem, [])]
    if script.stem in LAUNCH:
        return [mpiexec(), *LAUNCH[script.stem], *base]
    return base


def run(script: Path) -> Outcome:
    """Run one benchmark, echoing its output, and collect the figures it records."""
    cmd = command(script)
    print(f"== {script.stem}: {' '.join(cmd)}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        figures_path = Path(tmp) / "figures.jsonl"
        env = {**os.environ, FIGURES_ENV: str(figures_path)}
        start = time.perf_counter()
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        lines = []
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            lines.append(line)
        status = proc.wait()
        seconds = time.perf_counter() - start
        figures = []
        if figures_path.exists():
            text = figures_path.read_text(encoding="utf-8")
            figures = [json.loads(x) for x in text.splitlines() if x.strip()]
    return Outcome(script.stem, cmd, status, seconds, "".join(lines), figures)


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _commit() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        # The results file is this script's own output: rewriting it is not a change of code.
        outside = f":!{RESULTS.relative_to(ROOT)}"
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", outside],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return "unknown"
    return f"{head}{' + uncommitted changes' if dirty else ''}" if head else "unknown"


def header(started: dt.datetime, total: float) -> list[str]:
    """Date, machine, versions and commit."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    versions = ", ".join(
        f"{d} {_version(d)}" for d in ("numpy", "numba", "scipy", "mpi4py", "mpich")
    )
    return [
        "# Benchmark results",
        "",
        "Written by `make bench` (`benchmarks/run_all.py`); do not edit by hand. Every ratio",
        "is against a baseline timed in the same run, on the same machine, checked to compute",
        "the same result where it is the same computation.",
        "",
        f"- date: {started.isoformat(timespec='seconds')} ({total / 60:.1f} min in all)",
        f"- machine: {platform.node()}, {_cpu_model()}, {os.cpu_count()} logical CPUs, "
        f"{platform.system()} {platform.release()}; load average at the end "
        f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (the machine may be shared)",
        f"- Python {platform.python_version()} ({sys.executable}); {versions}",
        f"- commit: {_commit()}",
        "",
    ]


def figure_table(outcomes: list[Outcome]) -> list[str]:
    """One row per figure: ours, the baseline, equality, ratio and target."""
    rows = [
        "## Figures",
        "",
        "| benchmark | figure | ours | baseline | baseline is | same result | ratio | target |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        for f in o.figures:
            same = {True: "yes", False: "**NO**", None: "n/a (a scale)"}[f["same"]]
            target = "" if f["target"] is None else f"≥ {f['target']:g}× **{f['verdict']}**"
            rows.append(
                f"| {o.name} | {f['name']} | {f['ours']:.4g} {f['unit']} | "
                f"{f['baseline']:.4g} {f['unit']} | {f['baseline_name']} | {same} | "
                f"{f['ratio']:.1f}× | {target} |"
            )
    rows += [
        "",
        "Benchmarks without rows here print their own baselines and ratios below.",
        "",
    ]
    return rows


def body(outcomes: list[Outcome], started: dt.datetime) -> list[str]:
    """Each benchmark's command, status, duration, when and at which commit it ran (a
    partial ``--update`` leaves the others' as they were), and its full output."""
    out = ["## Output of each benchmark", ""]
    when = f"{started.isoformat(timespec='minutes')}, commit {_commit()}"
    for o in outcomes:
        status = "ok" if o.status == 0 else f"**FAILED (exit status {o.status})**"
        out += [
            f"### {o.name}",
            "",
            f"`{' '.join(o.command)}` — {status}, {o.seconds:.0f} s ({when})",
            "",
            "```text",
            o.output.rstrip("\n"),
            "```",
            "",
        ]
    return out


def previous_results(path: Path) -> tuple[dict[str, list[str]], dict[str, list[str]], str]:
    """What ``path`` (a RESULTS.md) holds per benchmark: its figure rows, its output section,
    and the run's ``date`` and ``commit`` lines (one string)."""
    rows: dict[str, list[str]] = {}
    sections: dict[str, list[str]] = {}
    stamp = []
    current = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith(("- date:", "- commit:")):
            stamp.append(line[2:])
        elif line.startswith("| bench_"):
            rows.setdefault(line.split("|")[1].strip(), []).append(line)
        elif line.startswith("### "):
            current = line[4:].strip()
            sections[current] = [line]
        elif current is not None:
            sections[current].append(line)
    return rows, sections, "; ".join(stamp)


def merged(path: Path, outcomes: list[Outcome], started: dt.datetime, total: float) -> list[str]:
    """``path``'s results with ``outcomes``' benchmarks replaced (``--update``)."""
    rows, sections, stamp = previous_results(path)
    fresh_rows = figure_table(outcomes)
    names = {o.name for o in outcomes}
    for o in outcomes:
        rows[o.name] = [r for r in fresh_rows if r.startswith(f"| {o.name} |")]
        sections[o.name] = body([o], started)[2:]
    rerun = ", ".join(sorted(names))
    lines = header(started, total)
    lines.insert(
        -1,
        f"- updated: {rerun} ran again at this commit; the others as the run before left them "
        f"({stamp}; each benchmark's output below says when it ran, where it says so)",
    )
    table = figure_table([])
    lines += table[:4] + [r for name in sorted(rows) for r in rows[name]] + table[4:]
    lines += ["## Output of each benchmark", ""]
    for name in sorted(sections):
        lines += [x for x in sections[name]]
    return lines


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="benchmark names (e.g. bench_sph)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--update", action="store_true", help="keep the other benchmarks' results in --out"
    )
    args = parser.parse_args()
    if args.update and not (args.only and args.out.is_file()):
        parser.error("--update needs --only and an existing --out")
    scripts = sorted(HERE.glob("bench_*.py"))
    if args.only:
        unknown = sorted(set(args.only) - {s.stem for s in scripts})
        if unknown:
            parser.error(f"unknown benchmark(s) {', '.join(unknown)}")
        scripts = [s for s in scripts if s.stem in args.only]
    started = dt.datetime.now(dt.UTC).astimezone()
    t0 = time.perf_counter()
    outcomes = [run(s) for s in scripts]
    total = time.perf_counter() - t0
    if args.update:
        lines = merged(args.out, outcomes, started, total)
    else:
        lines = header(started, total) + figure_table(outcomes) + body(outcomes, started)
    write_atomically(args.out, "\n".join(lines))
    failed = [o.name for o in outcomes if o.status != 0]
    print(f"wrote {args.out}" + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
