"""The ``science-memory`` command line: one module per command group, ``main`` dispatches."""
