"""Shared pytest configuration. Tests never read a clock to decide pass or fail: timing
claims live in ``benchmarks/`` as ratios against a baseline measured in the same run."""
