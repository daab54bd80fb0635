"""Benchmark: template build of 2,000 synthetic source items × 12 variants (target < 60 s).

Runs expand → judge (rules) → verify → rebalance → finalize in-process on synthetic
IndoCulture-format items spread over the 11 provinces, and prints variants per second per stage
and overall. Usage:  python bench/mocqa_build.py [n_items]
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

import pandas as pd

from cultureqa.knowledge.national import load_national
from cultureqa.knowledge.provinces import CANONICAL_PROVINCES, load_knowledge_base
from cultureqa.mocqa_build.clues import ClueGenerator
from cultureqa.mocqa_build.expand import expand_template
from cultureqa.mocqa_build.finalize import finalize
from cultureqa.mocqa_build.judge import JudgeConfig, judge_variants
from cultureqa.mocqa_build.rebalance import rebalance
from cultureqa.mocqa_build.templates import load_templates
from cultureqa.mocqa_build.verify import VerifyConfig, template_repairer, verify_variants

ROOT = Path(__file__).resolve().parents[1]
TOPICS = ["Wedding", "Art", "Death", "Agriculture", "Food and Beverages", "Daily Activities"]
SYLLABLES = ["ka", "lo", "mi", "ra", "tu", "ng", "se", "wa", "bi", "do"]


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(3))


def synthetic_items(n: int, seed: int = 0) -> pd.DataFrame:
    """IndoCulture-shaped items with made-up options (no KB term can collide with them)."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        options = [f"{_word(rng)} {_word(rng)}" for _ in range(3)]
        rows.append(
            {
                "source_id": f"syn-{i:05d}",
                "province": CANONICAL_PROVINCES[i % 11],
                "topic": TOPICS[i % len(TOPICS)],
                "context_id": f"Dalam upacara adat nomor {i}, keluarga besar menyiapkan",
                "options_id": options,
                "context_en": f"At customary ceremony number {i}, the extended family prepares",
                "options_en": options,
                "answer": "ABC"[rng.randrange(3)],
                "source": "synthetic",
            }
        )
    return pd.DataFrame(rows)


def main(n_items: int = 2000) -> int:
    items = synthetic_items(n_items)
    kb, national = load_knowledge_base(), load_national()
    generator = ClueGenerator(
        kb, load_templates((ROOT / "data/knowledge/clue_templates.yaml").resolve()), national
    )
    timings: dict[str, float] = {}
    start = time.perf_counter()

    def timed(name: str, fn):  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        out = fn()
        timings[name] = time.perf_counter() - t0
        return out

    expanded = timed("expand", lambda: expand_template(items, generator))
    judged = timed(
        "judge",
        lambda: judge_variants(
            expanded.frame, JudgeConfig(), kb, ["en", "id"], Path("unused"), national, items
        ),
    )
    verified = timed(
        "verify",
        lambda: verify_variants(judged.frame, VerifyConfig(), template_repairer(items, generator)),
    )
    balanced = timed("rebalance", lambda: rebalance(verified.frame, ["en", "id"], items))
    final = timed("finalize", lambda: finalize(balanced.frame, 13))
    total = time.perf_counter() - start
    n = expanded.metrics["input"]
    print(
        f"{n_items} source items × 12 = {n} variants attempted; {len(final.frame)} in the dataset"
    )
    for name, seconds in timings.items():
        print(f"  {name:<10} {seconds:6.2f} s  {n / seconds:9.0f} variants/s")
    print(
        f"  {'total':<10} {total:6.2f} s  {n / total:9.0f} variants/s  "
        f"({n_items / total:.0f} source items/s; target: < 60 s)"
    )
    return 0 if total < 60 else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000))
