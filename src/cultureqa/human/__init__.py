"""Human validation of two-hop datasets: sample out, labels in, the seed's agreement numbers.

``items`` turns a dataset into the annotation sample; ``interface`` is the Label Studio labeling
interface and its tasks; ``studio`` talks to a Label Studio server over HTTP; ``server`` starts
one from its own environment; ``agreement`` computes κ, judge precision/recall, ICC(2,1) and the
human baseline; ``commands`` is ``cultureqa human push|pull`` (and the CSV path through the same
code). docs/human-validation.md is the user's page.
"""

DATASETS = ("mocqa", "twohop")
"""The two-hop datasets ``cultureqa human`` works on (:mod:`cultureqa.human.datasets`)."""
