"""EASY++'s AVE2 prediction with the COARE paper's simple correction, as a plug-in policy.

It reproduces the built-in ``easy++-simple`` bit for bit::

    grapeshot jobs simulate --swf log.swf --cpus 240 \\
        --policies easy++-simple,examples/policy/ave2_simple.py:Ave2Simple

Write your own the same way (docs/jobs.md, "Your own policy"): ``predict`` sees the arriving
job and the jobs completed so far, ``correct`` a running job 60 s before its walltime.
"""


class Ave2Simple:
    """AVE2 (Tsafrir, Etsion & Feitelson 2007) + simple (+1 h), killed only at 7 days."""

    name = "ave2-simple (plug-in)"
    kill = "hard"

    def __init__(self):
        self.last = {}  # user -> (newest, previous) run time of their completed jobs, seconds
        self.seen = 0  # completions already read from the history

    def predict(self, job, history):
        """The mean run time of the user's last two completed jobs; the request until then."""
        done = history.since(self.seen)
        self.seen += len(done.index)
        for user, ran in zip(done.user.tolist(), done.runtime.tolist(), strict=True):
            newest = self.last.get(user)
            self.last[user] = (ran, None if newest is None else newest[0])
        runs = self.last.get(job.user)
        if runs is None or runs[1] is None:
            return job.request
        return 0.5 * (runs[0] + runs[1])

    def correct(self, job, elapsed, limit):
        """One more hour whenever the job is still running 60 s before its walltime."""
        return limit + 3600.0
