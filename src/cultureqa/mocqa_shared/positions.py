"""Assigned balanced gold positions: the rule every two-hop statement dataset is finalized by.

Gold positions are assigned, not drawn: over ``n`` pairs a shuffled list holding each of ``k``
positions ⌊n/k⌋ or ⌈n/k⌉ times says where each pair's gold goes, so the letter counts differ by
at most one and a chi-square test cannot reject uniformity; every language of a pair gets the
same :func:`permutation`. The two-hop engine's finalize (:mod:`cultureqa.regions.finalize`)
places options by it; a module of the shared ID-MoCQA package (standard library only).
"""

from __future__ import annotations

import random


def balanced_positions(n: int, k: int, rng: random.Random) -> list[int]:
    """``n`` positions in ``range(k)``, each used ⌊n/k⌋ or ⌈n/k⌉ times, in random order."""
    positions = [i % k for i in range(n)]
    rng.shuffle(positions)
    return positions


def permutation(gold: int, target: int, k: int, rng: random.Random) -> list[int]:
    """Original option indices in their new order, with ``gold`` moved to ``target``."""
    others = [i for i in range(k) if i != gold]
    rng.shuffle(others)
    return [*others[:target], gold, *others[target:]]
