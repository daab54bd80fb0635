"""``cultureqa benchmark add``: propose, trial-load and write a config for a published file.

Apart from ``benchmarks`` because no pipeline stage imports it: DVC's code deps are subpackages,
so an edit to how ``add`` sniffs a file reruns no stage.
"""
