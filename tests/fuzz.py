"""How hard the parsers are fuzzed: ``GRAPESHOT_FUZZ_EXAMPLES`` cases per test (default 1000).

Every parser's hypothesis tests take their settings from here, so one variable turns the
suite's quick pass into the 10,000-case run of issue 15 (``GRAPESHOT_FUZZ_EXAMPLES=10000
pytest -k fuzz``).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

EXAMPLES = int(os.environ.get("GRAPESHOT_FUZZ_EXAMPLES", "1000"))


def fuzz(share: float = 1.0) -> settings:
    """Settings for one fuzz test: ``share`` of :data:`EXAMPLES` cases, no deadline."""
    return settings(
        max_examples=max(10, int(EXAMPLES * share)),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
