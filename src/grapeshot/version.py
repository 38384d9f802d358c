"""grapeshot's version, in a module of its own: what records and checkpoints stamp themselves
with, importable from any layer without the package's ``__init__`` (which reaches up to the
simulator for ``grapeshot.simulate``). ``pyproject.toml`` says the same (a test checks)."""

__version__ = "0.1.0"
