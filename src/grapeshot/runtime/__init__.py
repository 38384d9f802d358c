"""Executors that run a program for real: the serial reference, and MPI ranks (the task runtime
and the bulk-synchronous reference), with their run records."""
