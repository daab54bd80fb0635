"""cases.evaluate.limit: a small default run keeps every domain, and says what it left out."""

from __future__ import annotations

import pandas as pd

from cultureqa.cases.evaluate import CasesFamily, stratified_cases


def _items(counts: dict[str, int]) -> pd.DataFrame:
    rows = [
        {"case_id": f"{domain[:3]}-{k}", "domain": domain}
        for domain, n in counts.items()
        for k in range(n)
    ]
    return pd.DataFrame(rows)


def test_the_subset_takes_every_domain_in_turn_and_is_stable() -> None:
    items = _items({"law": 5, "religion": 3, "other": 1})
    chosen = stratified_cases(items, 5)
    domains = items.set_index("case_id").loc[chosen, "domain"].tolist()
    assert len(chosen) == 5 and set(domains) == {"law", "religion", "other"}
    assert sorted(domains).count("law") == 2 and domains.count("religion") == 2
    assert stratified_cases(items.sample(frac=1, random_state=3), 5) == chosen  # row order
    assert len(stratified_cases(items, 100)) == 9  # a limit over the bank keeps every case


def test_the_run_record_and_metrics_name_the_subset() -> None:
    family = CasesFamily(
        items_by_seed={}, paths={}, prompt=None, root=None,  # type: ignore[arg-type]
        subset={"limit": 2, "cases": 2, "of": 9, "by": "domain"},
    )  # fmt: skip
    predictions = pd.DataFrame(
        {
            "seed": [60, 60, 40, 40],
            "case_id": ["a", "b", "a", "b"],
            "correct": [1, 0, 0, 0],
            "status": "ok",
        }
    )
    assert family.metrics(predictions)["cases"] == {"evaluated": 2, "of": 9}
    assert family.details(predictions)["subset"] == {
        "limit": 2,
        "cases": 2,
        "of": 9,
        "by": "domain",
    }
