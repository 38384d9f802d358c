"""EASY++'s AVE2 prediction with the simple correction, as a compiled plug-in policy.

The same policy as ``ave2_simple.py`` (and the built-in ``easy++-simple``, bit for bit), with
``predict`` and ``correct`` compiled by numba so they run inside the scheduler's compiled loop::

    grapeshot jobs simulate --swf log.swf --cpus 240 \\
        --policies easy++-simple,examples/policy/ave2_simple_compiled.py:Ave2SimpleCompiled

A compiled ``predict`` keeps its memory in the float64 array ``state()`` returns (docs/jobs.md,
"Compiled plug-ins"): here slot 0 counts the completions already read, then three slots per
user: their newest and previous run time (seconds) and how many of their jobs completed.
"""

import numpy as np
from numba import njit


class Ave2SimpleCompiled:
    """AVE2 (Tsafrir, Etsion & Feitelson 2007) + simple (+1 h), killed only at 7 days."""

    name = "ave2-simple (compiled plug-in)"
    kill = "hard"

    def state(self, n_jobs, n_users):
        return np.zeros(1 + 3 * n_users)

    @staticmethod
    @njit
    def predict(job, history, state):
        """The mean run time of the user's last two completed jobs; the request until then."""
        for k in range(int(state[0]), len(history.index)):  # completions not read yet
            u = 1 + 3 * history.user_index[k]
            state[u + 1] = state[u]
            state[u] = history.end[k] - history.start[k]
            state[u + 2] += 1.0
        state[0] = len(history.index)
        u = 1 + 3 * job.user_index
        if state[u + 2] < 2.0:
            return job.request
        return 0.5 * (state[u] + state[u + 1])

    @staticmethod
    @njit
    def correct(job, elapsed, limit):
        """One more hour whenever the job is still running 60 s before its walltime."""
        return limit + 3600.0
