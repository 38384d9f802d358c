"""numba's cache kept in step with the sources a compiled function depends on.

numba checks a cached function against its own file only: a caller compiled with an old
callee from another module keeps the old callee's code. :func:`refresh` clears the caches of
a package's numba files when any of them changed, and only then.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from grapeshot import compiled_cache
from grapeshot.compiled_cache import refresh, sources_digest


def _touch_later(path: Path, text: str) -> None:
    """Rewrite ``path`` with a modification time surely after the last one."""
    before = path.stat().st_mtime_ns
    path.write_text(text)
    os.utime(path, ns=(before + 10**9, before + 10**9))


def test_clears_the_caches_of_the_changed_files_and_of_their_importers(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__pycache__").mkdir()
    (pkg / "sub" / "__pycache__").mkdir()
    (pkg / "consts.py").write_text("WIDTH = 3\n")  # read by a kernel, no numba of its own
    (pkg / "sub" / "leaf.py").write_text("from numba import njit\nfrom pkg.consts import WIDTH\n")
    (pkg / "kern.py").write_text("import numba\nfrom pkg.sub import (\n    leaf,\n)\n")
    (pkg / "other.py").write_text("from numba import njit\nimport pkg.consts\n")
    (pkg / "alone.py").write_text("from numba import njit\n")
    (pkg / "cli.py").write_text("from pkg import kern\n")
    stamp = tmp_path / "stamp.json"
    cached = {"kern": pkg, "leaf": pkg / "sub", "other": pkg, "alone": pkg, "cli": pkg}

    def fill() -> None:
        for stem, folder in cached.items():
            for ext in ("nbi", "nbc"):
                (folder / "__pycache__" / f"{stem}.f-1.py311.{ext}").touch()

    def left() -> set[str]:
        return {
            f.name.split(".")[0] for d in cached.values() for f in (d / "__pycache__").iterdir()
        }

    fill()
    assert refresh(pkg, stamp) == 8  # no stamp yet: every numba file's cache may be stale
    assert left() == {"cli"}  # (cli.py does not use numba: its files are not numba's)
    fill()
    assert refresh(pkg, stamp) == 0  # nothing changed
    _touch_later(pkg / "cli.py", "from pkg import kern  # edited\n")
    assert refresh(pkg, stamp) == 0  # only a file no compiled code imports
    assert left() == set(cached)
    _touch_later(pkg / "consts.py", "WIDTH = 4\n")
    assert refresh(pkg, stamp) == 6  # leaf imports it, kern imports leaf, other imports it
    assert left() == {"alone", "cli"}
    fill()
    _touch_later(
        pkg / "sub" / "leaf.py", "from numba import njit\nfrom pkg.consts import WIDTH  # 2\n"
    )
    assert refresh(pkg, stamp) == 4  # leaf and kern
    assert left() == {"alone", "cli", "other"}
    fill()
    (pkg / "consts.py").unlink()
    assert refresh(pkg, stamp) == 6  # gone: its importers are stale
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


def test_generated_batches_go_with_the_modules_they_import(tmp_path: Path) -> None:
    """A generated batch (a module outside the package, importing it) is deleted with its
    cached machine code when a module it imports, directly or not, changed; the others stay."""
    from grapeshot.compiled_cache import sources_digest

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "consts.py").write_text("WIDTH = 3\n")
    (pkg / "hooks.py").write_text("from numba import njit\nfrom pkg.consts import WIDTH\n")
    (pkg / "alone.py").write_text("from numba import njit\n")
    batches = tmp_path / "batches"
    (batches / "__pycache__").mkdir(parents=True)
    (batches / "_b_hooks.py").write_text("from pkg.hooks import run\n")
    (batches / "_b_alone.py").write_text("from pkg.alone import f\n")
    for stem in ("_b_hooks", "_b_alone"):
        (batches / "__pycache__" / f"{stem}.run-1.py311.nbi").touch()
    stamp = tmp_path / "stamp.json"
    refresh(pkg, stamp, batches)
    assert not list(batches.glob("*.py"))  # no stamp yet: every batch may be stale
    (batches / "_b_hooks.py").write_text("from pkg.hooks import run\n")
    (batches / "_b_alone.py").write_text("from pkg.alone import f\n")
    (batches / "__pycache__" / "_b_hooks.run-1.py311.nbi").touch()
    hooks = sources_digest(["pkg.hooks"], pkg)
    assert hooks == sources_digest(["pkg.hooks"], pkg)
    assert sources_digest(["pkg.alone"], pkg) != hooks
    _touch_later(pkg / "consts.py", "WIDTH = 4\n")
    assert refresh(pkg, stamp, batches) == 2  # the batch importing hooks, and its code
    assert [p.name for p in batches.glob("*.py")] == ["_b_alone.py"]
    assert not list((batches / "__pycache__").iterdir())


#: A closure factory: every ``make(k)`` compiles a function of one qualified name (numba tells
#: them apart by its per-process counter); big enough that LLVM calls it rather than inlining.
FACTORY = "import numpy as np\nfrom numba import njit\n\n\ndef make(k):\n    @njit\n" + (
    "    def f(x):\n        s = 0.0\n        for i in range(x.shape[0]):\n"
    + "".join(
        f"            s += np.sin(x[i] * {j}.5 + k) * np.cos(x[i] - {j})\n" for j in range(60)
    )
    + "        return s\n\n    return f\n"
)
USER = (
    "from numba import njit\nfrom factory import make\n\ng = make({k})\n\n\n"
    "@njit(cache=True)\ndef {name}(x):\n    return g(x)\n"
)


def _call(root: Path, names: str) -> list[float]:
    """``names``' cached functions called in that order by one new process (grapeshot
    imported first, as in its own processes)."""
    code = "import numpy as np\nimport grapeshot\n"
    code += "".join(f"from mod_{n} import {n}\nprint({n}(np.arange(5.0)))\n" for n in names)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["PYTHONPATH"] = str(root)
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True, check=True
    )
    return [float(x) for x in out.stdout.split()]


def test_functions_cached_by_two_processes_keep_their_own_callees(tmp_path: Path) -> None:
    """Two cached functions calling two closures of one factory, each compiled by a process of
    its own: a third process loading both runs each with its own closure. With numba's counter
    starting at 1 in every process both closures had one symbol, and the function loaded second
    ran the first one's closure (numba #10486; SPH's halo packing sorted with the rank
    splitter's quicksort)."""
    (tmp_path / "factory.py").write_text(FACTORY)
    for name, k in (("a", 1.0), ("b", 2.0)):
        (tmp_path / f"mod_{name}.py").write_text(USER.format(k=k, name=name))
    a, b = _call(tmp_path, "a")[0], _call(tmp_path, "b")[0]  # compiled apart, then cached
    assert a != b
    assert _call(tmp_path, "ba") == [b, a]
    assert _call(tmp_path, "ab") == [a, b]


def test_each_process_counts_its_symbols_from_its_own_offset() -> None:
    """Imported before numba or after it, grapeshot moves numba's symbol counter to an offset
    of this process's own, far from the 1 every process starts at."""
    code = (
        "{}\nfrom numba.core.bytecode import FunctionIdentity\n"
        "print(next(FunctionIdentity._unique_ids))"
    )
    firsts = [
        int(subprocess.check_output([sys.executable, "-c", code.format(imports)], text=True))
        for imports in ("import grapeshot", "import grapeshot", "import numba; import grapeshot")
    ]
    assert min(firsts) >= 1 << 48 and len(set(firsts)) == 3


def test_a_stamp_of_the_old_naming_clears_every_cache(tmp_path: Path) -> None:
    """Caches written before the offset (their counters started at 1) all go, once."""
    import json

    pkg = tmp_path / "pkg"
    (pkg / "__pycache__").mkdir(parents=True)
    (pkg / "kern.py").write_text("from numba import njit\n")
    stamp = tmp_path / "stamp.json"
    cache = pkg / "__pycache__" / "kern.f-1.py311.nbi"
    cache.touch()
    assert refresh(pkg, stamp) == 1
    cache.touch()
    assert refresh(pkg, stamp) == 0  # as last time
    old = json.loads(stamp.read_text())
    del old["scheme"]
    old["stat"] = "as written by the scheme before"
    stamp.write_text(json.dumps(old))
    assert refresh(pkg, stamp) == 1 and not cache.exists()


CLOCK_CALLER = textwrap.dedent("""
    from numba import njit
    from grapeshot.model.clock import now_ns

    @njit(cache=True)
    def later(n):
        return now_ns() + n
""")


def _import_file(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_cache_calling_grapeshot_goes_stale_when_the_grapeshot_it_calls_changes(
    tmp_path: Path, monkeypatch
) -> None:
    """numba keeps in a cache's index the source stamp of the file, and compiles afresh when
    it differs: a file calling grapeshot's compiled functions (here the clock, linked into
    its machine code) has the digest of those grapeshot modules in its stamp, so another
    grapeshot misses the cache instead of running its old code through it."""
    path = tmp_path / "caller.py"
    path.write_text(CLOCK_CALLER)
    first = _import_file(path, "caller_first").later
    assert first(1) > 1
    locator = first._cache._impl._locator
    assert type(locator).__name__ == "GrapeshotCallerInTreeCacheLocator"
    assert locator.get_source_stamp()[1] == sources_digest({"grapeshot.model.clock"})
    assert list((tmp_path / "__pycache__").glob("caller.later-*.nbi"))
    again = _import_file(path, "caller_again").later  # the same grapeshot: loaded
    again(2)
    assert again.stats.cache_hits and not again.stats.cache_misses
    # Another grapeshot (its clock module edited): the cache is stale, compiled afresh.
    monkeypatch.setattr(compiled_cache, "_caller_digest", lambda py_file: "another grapeshot")
    changed = _import_file(path, "caller_changed").later
    changed(3)
    assert changed.stats.cache_misses and not changed.stats.cache_hits


def test_a_file_calling_no_grapeshot_code_keeps_numbas_own_locator(tmp_path: Path) -> None:
    path = tmp_path / "plain.py"
    path.write_text("from numba import njit\n\n@njit(cache=True)\ndef f(x):\n    return x\n")
    f = _import_file(path, "plain_module").f
    assert f(1) == 1
    assert type(f._cache._impl._locator).__name__ == "InTreeCacheLocator"
    assert compiled_cache._caller_digest(str(path)) is None
    assert compiled_cache._caller_digest(str(compiled_cache.PACKAGE / "model" / "clock.py")) is None
