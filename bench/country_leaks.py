"""Independent leak check: items whose text names a term pointing at the item's own country.

Written outside the two-hop engine on purpose: it reads only a built dataset and the country
knowledge table ``data/knowledge/countries/leak_terms.csv`` (no engine code, no scrub list), so
it can hold the engine to the country set's bar (a country-pointing term in at most 5 % of items).

    .venv/bin/python bench/country_leaks.py data/build/twohop/un_members/dataset.parquet \
        [--max-share 0.05]

The item's own clue (its ``clue`` column, which points at the country by design) is taken out of
the text, and other countries' several-word English names are masked (``El Salvador`` holds no
hit for Brazil's city Salvador). Matching: a term matches as a whole word (letters or digits on
neither side), with an optional plural ``s``/``es``; a term written all in lower case
(``injera``, ``yen``) matches in any case, any other term (``Akan``, ``US``) only as written.
Curly and straight apostrophes are the same. An item with a ``language`` column value is matched
against the terms of its language, English and language-neutral ones (``--all-languages``: every
term). Prints each leaking item with its terms, the count and share per kind, and exits 1 when
the share of leaking items is above ``--max-share``, 2 on unreadable input.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
TERMS = ROOT / "data" / "knowledge" / "countries" / "leak_terms.csv"
APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bb": "'", "\u02bc": "'"})
OPTION_PREFIXES = ("type_", "option")


Terms = dict[str, list[tuple[str, str, str]]]


def load_terms(path: Path = TERMS) -> Terms:
    """Country -> [(term, kind, lang)] from a leak-term table."""
    found: Terms = defaultdict(list)
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            term = row["term"].translate(APOSTROPHES)
            found[row["iso3"]].append((term, row["kind"], row["lang"]))
    return dict(found)


def in_language(terms: list[tuple[str, str, str]], language: str | None) -> list[tuple[str, str]]:
    """The terms a reader of ``language`` meets: its own, English and language-neutral ones.

    Names and aliases in other languages are left out for a known item language (Nauruan
    ``Pain`` for Spain is no leak in an English sentence starting with "Pain"); other kinds in
    another language are loanwords a reader meets as written (``Pfand``), kept. ``None`` keeps
    every term.
    """
    if language is None:
        return [(t, k) for t, k, _ in terms]
    base = language.split("-")[0].lower()
    return [
        (t, k)
        for t, k, lang in terms
        if k not in ("name", "alias") or lang.split("-")[0] in ("und", "en", base)
    ]


class CountryMatcher:
    """Whole-word matcher of one country's terms; reports which terms (and kinds) a text has."""

    def __init__(self, terms: Iterable[tuple[str, str]]) -> None:
        self.kinds: dict[str, str] = {}
        for term, kind in terms:
            self.kinds.setdefault(term.lower() if term.islower() else term, kind)
        exact = [t for t in self.kinds if not t.islower()]
        folded = [t for t in self.kinds if t.islower()]
        self.exact = self._compile(exact, 0)
        self.folded = self._compile(folded, re.IGNORECASE)

    @staticmethod
    def _compile(terms: list[str], flags: int) -> re.Pattern[str] | None:
        if not terms:
            return None
        body = "|".join(
            r"\s+".join(map(re.escape, t.split())) for t in sorted(terms, key=len, reverse=True)
        )
        return re.compile(rf"(?<![\w])({body})(?:e?s)?(?![\w])", flags)

    def find(self, text: str) -> list[tuple[str, str]]:
        """(term, kind) for every distinct term the text contains."""
        text = text.translate(APOSTROPHES)
        hits: dict[str, str] = {}
        for pattern, fold in ((self.exact, False), (self.folded, True)):
            if pattern is None:
                continue
            for match in pattern.finditer(text):
                key = " ".join(match.group(1).split())
                key = key.lower() if fold else key
                hits.setdefault(key, self.kinds.get(key, "?"))
        return sorted(hits.items())


def other_names(terms: Terms, country: str) -> re.Pattern[str] | None:
    """English names of the other countries that are several words (``El Salvador``).

    They are masked before matching, so a term of the item's country inside another country's
    name (Brazil's city ``Salvador`` in ``El Salvador``, ``Guinea`` in ``Papua New Guinea``) is
    not a hit, while the item's own names are never masked.
    """
    own = {t for t, _, _ in terms.get(country, [])}
    names = {
        t
        for iso3, rows in terms.items()
        if iso3 != country
        for t, kind, lang in rows
        if kind in ("name", "alias") and lang == "en" and len(t.split()) > 1 and t not in own
    }
    if not names:
        return None
    body = "|".join(re.escape(t) for t in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![\w])(?:{body})(?![\w])")


def text_columns(frame: pd.DataFrame, given: Sequence[str] | None) -> list[str]:
    """The columns read: those given, or narrative, question and every option column."""
    if given:
        missing = [c for c in given if c not in frame.columns]
        if missing:
            raise ValueError(f"no column(s) {missing} in the dataset")
        return list(given)
    base = [c for c in ("narrative", "question") if c in frame.columns]
    return base + [c for c in frame.columns if str(c).startswith(OPTION_PREFIXES)]


def check(
    frame: pd.DataFrame,
    terms: Terms,
    region_column: str = "region",
    columns: Sequence[str] | None = None,
    language_column: str | None = "language",
    clue_column: str = "clue",
) -> pd.DataFrame:
    """One row per item: its country, the terms found (``term (kind)``) and whether it leaks.

    With a ``language_column`` in the dataset, an item is matched against the terms of its
    language plus English and language-neutral ones (``in_language``); otherwise against all.
    The item's clue (``clue_column``), which is meant to point at the country, is taken out of
    the text first, and other countries' several-word names are masked (``other_names``).
    """
    if region_column not in frame.columns:
        raise ValueError(f"no column {region_column!r} in the dataset")
    read = text_columns(frame, columns)
    by_language = language_column is not None and language_column in frame.columns
    matchers: dict[tuple[str, str | None], CountryMatcher] = {}
    masks: dict[str, re.Pattern[str] | None] = {}
    rows = []
    for index, item in frame.iterrows():
        country = str(item[region_column])
        language = str(item[language_column]) if by_language and language_column else None
        if (country, language) not in matchers:
            chosen = in_language(terms.get(country, []), language)
            matchers[(country, language)] = CountryMatcher(chosen)
        text = "\n".join(str(item[c]) for c in read if pd.notna(item[c]))
        if clue_column in frame.columns and pd.notna(item[clue_column]) and item[clue_column]:
            text = text.replace(str(item[clue_column]), " ")  # the clue points at it by design
        if country not in masks:
            masks[country] = other_names(terms, country)
        if (mask := masks[country]) is not None:
            text = mask.sub(" ", text.translate(APOSTROPHES))
        found = matchers[(country, language)].find(text)
        rows.append(
            {
                "item": item.get("item_id", index),
                "country": country,
                "known_country": country in terms,
                "terms": "; ".join(f"{t} ({k})" for t, k in found),
                "kinds": sorted({k for _, k in found}),
                "leaks": bool(found),
            }
        )
    return pd.DataFrame(rows)


def summary(result: pd.DataFrame) -> dict[str, object]:
    """Items, leaking items, their share, items per leaking kind, countries with no terms."""
    n = len(result)
    leaking = int(result["leaks"].sum()) if n else 0
    kinds = Counter(k for ks in result.get("kinds", []) for k in ks)
    unknown = sorted(set(result.loc[~result["known_country"], "country"])) if n else []
    return {
        "items": n,
        "leaking_items": leaking,
        "share": leaking / n if n else 0.0,
        "items_per_kind": dict(sorted(kinds.items())),
        "countries_without_terms": unknown,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Check a dataset (parquet, CSV or JSON lines) and print the leaking items and totals."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--terms", type=Path, default=TERMS)
    parser.add_argument("--region-column", default="region")
    parser.add_argument(
        "--columns", nargs="+", help="text columns (default: narrative, question, options)"
    )
    parser.add_argument("--max-share", type=float, default=0.05)
    parser.add_argument(
        "--all-languages",
        action="store_true",
        help="match names in every language, not only "
        "the item's own (its 'language' column), English and language-neutral ones",
    )
    args = parser.parse_args(argv)
    try:
        suffix = args.dataset.suffix.lower()
        if suffix == ".parquet":
            frame = pd.read_parquet(args.dataset)
        elif suffix == ".csv":
            frame = pd.read_csv(args.dataset, dtype=str, keep_default_na=False)
        else:
            frame = pd.read_json(args.dataset, lines=True, dtype=False)
        language = None if args.all_languages else "language"
        result = check(frame, load_terms(args.terms), args.region_column, args.columns, language)
    except (OSError, ValueError) as exc:
        print(f"error: {args.dataset}: {exc}", file=sys.stderr)
        return 2
    for row in result[result["leaks"]].itertuples():
        print(f"{row.item}\t{row.country}\t{row.terms}")
    totals = summary(result)
    print(
        f"{totals['leaking_items']} of {totals['items']} items leak their country "
        f"({totals['share']:.1%}; bar {args.max_share:.0%}); per kind {totals['items_per_kind']}"
    )
    if totals["countries_without_terms"]:
        print(f"countries with no leak terms: {totals['countries_without_terms']}")
    return 1 if totals["share"] > args.max_share else 0


if __name__ == "__main__":
    raise SystemExit(main())
