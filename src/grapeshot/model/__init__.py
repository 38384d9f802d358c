"""The vocabulary every part of grapeshot shares: machines, workloads, placements."""
