"""grapeshot: scheduling toolkit for distributed simulations.

Where each micro-partition runs (``grapeshot.place``), how unbalanced a random placement is
expected to be (``grapeshot.theory``), and the vocabulary they share (``grapeshot.model``).
"""

# Before any compiled function loads: drop numba's cached machine code if a source it may
# depend on changed since (numba itself checks only the defining file), and keep this
# process's compiled symbols apart from other processes' cached ones (compiled_cache.py).
from grapeshot.compiled_cache import distinct_symbols as _distinct_symbols
from grapeshot.compiled_cache import refresh as _refresh_compiled_cache
from grapeshot.version import __version__ as __version__

_distinct_symbols()
_refresh_compiled_cache()


def simulate(**options):
    """``grapeshot simulate`` from Python: keywords as the command's options (``machine=``,
    ``synthetic=`` or ``trace=``, ``strategy="geometric,birdshot"``, ``ppc="1,2,4"``, ...),
    the command line's defaults for the rest; the runs
    (:class:`grapeshot.sim.request.SimulateOutcome`). See :mod:`grapeshot.sim.request`."""
    from grapeshot.sim.request import simulate as run  # numba and the simulator: on first use

    return run(**options)


def run(**options):
    """``grapeshot run`` from Python, on every rank of ``MPI.COMM_WORLD`` (start the script
    with ``mpiexec -n N python -m mpi4py script.py``; ``comm=`` for another communicator):
    keywords as the command's options (``app=``, ``parts=(16, 16)``, ``steps=``,
    ``strategy=``, ...), the command line's defaults for the rest. Rank 0 gets the outcome
    (:class:`grapeshot.runtime.driver.RunOutcome`), the others ``None``. See
    :mod:`grapeshot.run_request`."""
    from grapeshot.run_request import run as run_on_ranks  # MPI and numba: on first use

    return run_on_ranks(**options)
