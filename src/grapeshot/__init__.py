"""grapeshot: scheduling toolkit for distributed simulations.

Where each micro-partition runs (``grapeshot.place``), how unbalanced a random placement is
expected to be (``grapeshot.theory``), and the vocabulary they share (``grapeshot.model``).
"""

__version__ = "0.1.0"

# Before any compiled function loads: drop numba's cached machine code if a source it may
# depend on changed since (numba itself checks only the defining file; compiled_cache.py).
from grapeshot.compiled_cache import refresh as _refresh_compiled_cache

_refresh_compiled_cache()
