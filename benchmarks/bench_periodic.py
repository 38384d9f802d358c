"""What a periodic domain costs on real ranks: Gray-Scott wrapped against the same between walls.

Run from the repository root (it starts its own ``mpiexec -n 2``; a few minutes):

    .venv/bin/python benchmarks/bench_periodic.py

``examples/program/gray_scott.py`` on 1024² cells, 100 steps, Birdshot 16×16 and 32×32 on 2
ranks through ``grapeshot run --app ... --json``, as a user runs it: ``make_gray_scott``
(``periodic = (True, True)``: every partition has all its neighbours, the wrapped ones
exchanged by the same plans) against ``make_gray_scott_walls`` (the partitions on the edges
have fewer neighbours, and the kernel fills its walls). Rounds interleave the two, best of 5
wall times (the steps; set-up excluded) each. The periodic run's fields are checked equal,
bit for bit, to the example's ``np.roll`` reference in the same run. Goal (issue 38): the
periodic wall within 10% of the walled one (ratio walls / periodic ≥ 0.909); a hand-written
periodic ``GraphExchange`` cost +32-37% before.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from grapeshot.apps.user import load_user_app  # noqa: E402
from grapeshot.model.fields import fields_digest  # noqa: E402
from timing import figure  # noqa: E402

APP = ROOT / "examples" / "program" / "gray_scott.py"
CELLS, STEPS, ROUNDS = (1024, 1024), 100, 5


def _run(factory: str, parts: str) -> dict:
    mpiexec = Path(sys.executable).parent / "mpiexec"
    cmd = [
        str(mpiexec), "-n", "2", sys.executable, "-m", "grapeshot.cli.main", "run",
        "--app", f"{APP}:{factory}", "--parts", parts, "--cells", ",".join(map(str, CELLS)),
        "--steps", str(STEPS), "--strategy", "birdshot", "--json",
    ]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    module = sys.modules[load_user_app(f"{APP}:make_gray_scott").factory.__module__]
    expected = fields_digest(module.reference(CELLS, STEPS))
    print(f"Gray-Scott {CELLS[0]}x{CELLS[1]} cells, {STEPS} steps, birdshot on 2 ranks")
    for parts in ("16,16", "32,32"):
        walls, wrapped, digests = [], [], set()
        _run("make_gray_scott", parts)  # numba's caches, the batch loop
        for _ in range(ROUNDS):
            walls.append(_run("make_gray_scott_walls", parts)["wall_time"])
            summary = _run("make_gray_scott", parts)
            wrapped.append(summary["wall_time"])
            digests.add(summary["fields_digest"])
        same = digests == {expected}
        print(f"  {parts}: walls {min(walls):.3f} s, periodic {min(wrapped):.3f} s "
              f"(all rounds: {walls}, {wrapped})")  # fmt: skip
        figure(
            f"Gray-Scott periodic vs walls, birdshot {parts.replace(',', 'x')}, wall",
            min(wrapped), min(walls),
            baseline_name="the same program between walls (make_gray_scott_walls)",
            same=same, target=1 / 1.10,
            note="same: the periodic fields equal the np.roll reference bit for bit",
        )  # fmt: skip


if __name__ == "__main__":
    main()
