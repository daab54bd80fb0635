"""The modules every stage shares, one code dep for DVC instead of a dozen files.

Params loading and checks, errors, atomic I/O, paths, run locks, run records and provenance,
spend counters, the region sets' params digest.

They live in one package so that a stage declares one code dep (``src/cultureqa/core``) for
all of them: DVC re-reads and re-writes the whole ``dvc.lock`` after
every stage, so each entry costs every stage's pause (docs/measured.md).
Importing the package does no I/O and pulls in no heavy dependency.
"""
