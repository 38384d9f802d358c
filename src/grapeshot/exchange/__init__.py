"""Communication: collectives over point-to-point (and, later, all-to-many schedules)."""
