"""grapeshot: scheduling toolkit for distributed simulations.

Where each micro-partition runs (``grapeshot.place``), how unbalanced a random placement is
expected to be (``grapeshot.theory``), and the vocabulary they share (``grapeshot.model``).
"""

__version__ = "0.1.0"
