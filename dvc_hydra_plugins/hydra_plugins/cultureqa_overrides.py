"""Loaded by DVC before ``dvc exp run`` composes conf/ (``hydra.plugins_path`` in .dvc/config).

A mistyped ``-S`` override then fails with one ``ERROR:`` line naming the nearest valid names
instead of Hydra's full text under "unexpected error" (cultureqa.compose.install_for_dvc).
"""

from cultureqa.compose import install_for_dvc

install_for_dvc()
