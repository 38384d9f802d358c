"""The ``grapeshot`` command: one module per subcommand, each thin over the library."""
