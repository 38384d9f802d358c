"""Executors that run a program for real: the serial reference (and, later, MPI ranks)."""
