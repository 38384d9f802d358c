"""numba's cache kept in step with the sources a compiled function depends on.

numba checks a cached function against its own file only: a caller compiled with an old
callee from another module keeps the old callee's code. :func:`refresh` clears the caches of
a package's numba files when any of them changed, and only then.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from grapeshot.compiled_cache import refresh


def _touch_later(path: Path, text: str) -> None:
    """Rewrite ``path`` with a modification time surely after the last one."""
    before = path.stat().st_mtime_ns
    path.write_text(text)
    os.utime(path, ns=(before + 10**9, before + 10**9))


def test_clears_the_numba_files_caches_only_when_one_of_them_changed(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "__pycache__").mkdir(parents=True)
    (pkg / "kern.py").write_text("from numba import njit\n")
    (pkg / "cli.py").write_text("print('no compiled code here')\n")
    stamp = tmp_path / "stamp.json"

    def caches() -> list[str]:
        for name in ("kern.f-1.py311.nbi", "kern.f-1.py311.nbc", "cli.x-1.py311.nbi"):
            (pkg / "__pycache__" / name).touch()
        return sorted(p.name for p in (pkg / "__pycache__").iterdir())

    caches()
    assert refresh(pkg, stamp) == 2  # no stamp yet: what is cached may be stale
    assert sorted(p.name for p in (pkg / "__pycache__").iterdir()) == ["cli.x-1.py311.nbi"]
    everything = caches()
    assert refresh(pkg, stamp) == 0  # nothing changed
    _touch_later(pkg / "cli.py", "print('still none')\n")
    assert refresh(pkg, stamp) == 0  # a file without numba changed
    assert sorted(p.name for p in (pkg / "__pycache__").iterdir()) == everything
    _touch_later(pkg / "kern.py", "from numba import njit  # edited\n")
    assert refresh(pkg, stamp) == 2
    assert refresh(pkg, stamp) == 0


def test_nothing_writable_is_not_an_error(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "kern.py").write_text("import numba\n")
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert refresh(pkg, blocked / "stamp.json") == 0  # its directory cannot be made


CALLEE = "from numba import njit\n\n@njit(cache=True)\ndef f():\n    return {value}\n"
CALLER = """\
from numba import njit
from pkg.callee import f

@njit(cache=True)
def g():
    return f()
"""


def _run_caller(root: Path, refresh_first: bool) -> str:
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(root)!r})
        from pathlib import Path
        from grapeshot.compiled_cache import refresh
        if {refresh_first}:
            refresh(Path({str(root / "pkg")!r}), Path({str(root / "stamp.json")!r}))
        from pkg.caller import g
        print(g())
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def test_a_caller_sees_its_edited_callee_after_refresh(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "callee.py").write_text(CALLEE.format(value=1))
    (pkg / "caller.py").write_text(CALLER)
    assert _run_caller(tmp_path, refresh_first=True) == "1"  # compiled and cached
    _touch_later(pkg / "callee.py", CALLEE.format(value=2))
    # (Without refresh numba 0.61-0.68 load the caller compiled with the old callee: "1".)
    assert _run_caller(tmp_path, refresh_first=True) == "2"
    assert _run_caller(tmp_path, refresh_first=True) == "2"  # from the new cache
