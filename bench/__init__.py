"""The ScienceMemory benchmark: ``python -m bench`` (see ``bench/README.md``)."""
