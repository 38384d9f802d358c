"""How hard the parsers are fuzzed: a quick pass by default, 10,000 cases each on request.

Every parser's hypothesis tests take their settings from :func:`fuzz`, so one environment
variable switches the whole suite between its two runs:

- **default** (``pytest``): ``QUICK_EXAMPLES`` × ``share`` cases per test (at least 10), a
  second or two each, so the suite stays fast;
- **slow** (``GRAPESHOT_FUZZ_EXAMPLES=10000``): that many cases for *every* fuzz test,
  whatever its share. Run only the fuzzers, all of them::

      GRAPESHOT_FUZZ_EXAMPLES=10000 .venv/bin/pytest -q -k fuzz tests

  (every fuzz test has ``fuzz`` in its name or its file's name; about an hour on two cores).
  A failing case is printed by hypothesis and kept in ``.hypothesis/``, so the next run,
  quick or slow, tries it first.

The property of every parser's fuzz test is the one of ``docs/architecture.md``: a clean
result, or a :class:`grapeshot.model.errors.InputError` whose message names the file, line,
field or option; never another exception.
"""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings

#: Cases of a share-1 fuzz test in the default run.
QUICK_EXAMPLES = 200
#: Cases of every fuzz test in the slow run (None: the default run).
_SLOW = os.environ.get("GRAPESHOT_FUZZ_EXAMPLES")
EXAMPLES: int | None = int(_SLOW) if _SLOW else None


def examples(share: float = 1.0) -> int:
    """Cases a fuzz test of weight ``share`` runs: ``share`` of the quick pass, or every one
    of the slow run's."""
    if EXAMPLES is not None:
        return EXAMPLES
    return max(10, int(QUICK_EXAMPLES * share))


def fuzz(share: float = 1.0) -> settings:
    """Settings for one fuzz test: :func:`examples` cases, no deadline.

    ``share`` weighs the test in the default run only (a parser behind a temporary file
    takes less than 1, a pure string parser 1 or more); the slow run gives every test the
    same number of cases.
    """
    return settings(
        max_examples=examples(share),
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.function_scoped_fixture,
            HealthCheck.filter_too_much,
            HealthCheck.data_too_large,
        ],
    )


@functools.cache
def _folder() -> str:
    return tempfile.mkdtemp(prefix="grapeshot-fuzz-")


def example_file(data: bytes | str, suffix: str) -> Path:
    """A new file holding ``data`` (text as UTF-8, lone surrogates kept) for one example.

    One file per example, never a pytest fixture's: hypothesis reuses a test's fixtures
    across its examples.
    """
    handle = tempfile.NamedTemporaryFile("wb", suffix=suffix, delete=False, dir=_folder())
    with handle:
        handle.write(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
    return Path(handle.name)
