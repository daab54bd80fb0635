"""Structure checks and the rule judge of two-hop region items (docs/region-sets.md §3).

What rules can decide, each a removal with its reason:

* own-region leak: any name, alias, demonym, capital or leak term of the target anywhere the
  model reads (clue, background, question, options) after the repair; the clue alone may state
  the kinds the set declares in ``clue_may_name`` (the language or currency it rests on);
* clue re-check: the conditions stored in the evidence are decided again over the universe; the
  item stays only if exactly its region holds (regions without a figure allowed only when the
  clue says so, i.e. the evidence lists them);
* scrub limit: more distinct replaced terms of the set's ``scrub_limit`` kinds than it allows
  (the scenario rested on many of the region's own practices and peoples, and no longer reads as
  written); a term mentioned seven times is one term, whose replacement reads or not wherever it
  stands, and a term the leak table describes (``sauna`` → ``steam bath``) is not counted: its
  description reads where the term stood;
* merged: two different terms replaced by the same words and coordinated ("the local language
  and the local language"), or two different languages replaced in one item (no contrast left);
* people sense: a language term met as "the <name>" with no language noun after it ("the
  Spanish built" speaks of a people, and "the local language built" reads as nonsense);
* grammar: a phrase replacement left after a determiner or a place modifier ("in central this
  country") that the scrub's slot repair could not fit;
* structure: the clue opens the background exactly once, the question is a question of at least
  ``min_question_words`` words (a ``statement`` item's frame asks it before quoting the stem),
  distinct non-empty options;
* option copying: the clue or the question shares ``copy_ngram`` consecutive words with an
  option, or holds a shorter option whole;
* excluded source: the set's ``source.exclude`` names the question, with its reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from cultureqa.core.io import SourceError
from cultureqa.regions.build import REMOVED_COLUMNS
from cultureqa.regions.generation.clues import GAP_REASON
from cultureqa.regions.generation.conditions import decide, near_bound, relative_gap
from cultureqa.regions.generation.tables import Knowledge
from cultureqa.regions.scrub import DETERMINERS, leaks, ungrammatical
from cultureqa.regions.sources.source import TYPE_COLUMNS

OPTION_COLUMNS = tuple(f"option_{letter}" for letter in "ABCDEF")
LETTERS = tuple("ABCDEFGHIJ")
GRAMMAR_REASON = "replacement does not read as grammar"
MERGED_REASON = "two terms merged by one replacement"
LANGUAGE_KIND = "language"
"""The term kind whose two members in one item are contrasted (see :func:`_merged`)."""
SCRUB_LIMIT_REASON = "too many of the region's own terms replaced"
EXCLUDED_REASON = "source question excluded by the set"


def phrase_replacements(
    replacements: Mapping[str, Mapping[str, str]],
) -> dict[str, tuple[str, ...]]:
    """Per language, the replacements that are whole noun phrases ("this country")."""
    return {
        lang: tuple(
            sorted({w for w in words.values() if w.split(" ", 1)[0].casefold() in DETERMINERS})
        )
        for lang, words in replacements.items()
    }


_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class CheckConfig:
    """Thresholds of the rule checks."""

    min_question_words: int = 5
    copy_ngram: int = 6


def _merged(texts: list[str], replaced: Any) -> list[str]:
    """Replacements of two different terms coordinated with each other.

    "In both the local language and the local language" (from "English and French"): the
    sentence lost its sense. Two different languages replaced by the same words anywhere in one
    item are merged too: a scenario that names two languages contrasts them ("they chat in
    Swahili but write in English" → "chat in the local language but write in the local
    language"), and one set of words for both keeps no contrast.
    """
    if not replaced:
        return []
    lost = json.loads(str(replaced))
    words = {t["replacement"].casefold() for t in lost}

    twice = [
        w for w in words if len({t["term"] for t in lost if t["replacement"].casefold() == w}) > 1
    ]
    joined = "\n".join(texts)
    found = [
        m.group(0)
        for w in twice
        for m in re.finditer(
            rf"{re.escape(w)},? (?:and|or|as well as) {re.escape(w)}", joined, re.I
        )
    ]
    languages = sorted({t["term"] for t in lost if t["kind"] == LANGUAGE_KIND})
    if len(languages) > 1:  # each in its own words ("the local language", "local-language-")
        found.append(f"{', '.join(languages)} → one replacement")
    return found


PEOPLE_SENSE_REASON = "a language name standing for a people"
LANGUAGE_NOUNS = frozenset(
    ("language", "languages", "word", "words", "name", "names", "term", "version", "text",
     "phrase", "translation", "speakers", "speaker", "dialect", "accent")
)  # fmt: skip
"""Words after "the <language>" that keep the language sense ("the French word")."""


def _people_sense(texts: list[str], replaced: Any) -> list[str]:
    """A language term met as "the <name>" without a language noun after it.

    "The Spanish built on top of Inca walls" speaks of a people (here another member's), not of
    the item's country's language; "the local language built on top of them" reads as nonsense.
    """
    if not replaced:
        return []
    joined = "\n".join(texts)
    found = []
    for t in json.loads(str(replaced)):
        if t["kind"] != LANGUAGE_KIND or not re.match(r"(?i)the\s", t.get("matched", "")):
            continue
        for m in re.finditer(rf"(?<![\w-]){re.escape(t['replacement'])}\s+(\w+)", joined):
            if m.group(1).casefold() not in LANGUAGE_NOUNS:
                found.append(f"{t['matched']} → {m.group(0)}")
                break
    return sorted(set(found))


def _ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    words = [w.lower() for w in _WORD.findall(text)]
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def _copied(text: str, option: str, n: int) -> bool:
    """Whether ``text`` shares ``n`` consecutive words with the option or holds a shorter one whole.

    A clue naming a short answer gives it away ("… you witness Baayun Maulid": baayun maulid). A
    short option is matched as whole tokens, hyphenated words kept whole ("alang" is not in
    "alang-alang", the grass).
    """
    if len(_WORD.findall(option)) >= n:
        return bool(_ngrams(text, n) & _ngrams(option, n))
    whole = [w.lower() for w in _TOKEN.findall(option)]
    tokens = [w.lower() for w in _TOKEN.findall(text)]
    k = len(whole)
    return k > 0 and any(tokens[i : i + k] == whole for i in range(len(tokens) - k + 1))


_TOKEN = re.compile(r"\w+(?:[-'’]\w+)*")


@dataclass(frozen=True)
class SetRules:
    """What the set declares that the rule judge decides again on every item."""

    clue_may_name: tuple[str, ...] = ()
    """Leak kinds the clue may state (a language, a currency)."""
    margins: Mapping[str, float] = field(default_factory=dict)
    """Indicator → the knowable-gap rule's share."""
    phrases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Language → replacements that are whole noun phrases ("this country")."""
    scrub_limit: tuple[tuple[str, ...], int] | None = None
    """(kinds, most terms): more distinct replaced terms of these kinds remove the item."""
    excluded: Mapping[str, str] = field(default_factory=dict)
    """Source id → why the set leaves its question out (``source.exclude``: a scenario whose
    point is the region's own word, which no replacement keeps); every item of it is removed
    with the reason and the stated why as its detail."""
    item_format: str = "case"
    """The set's item format (``case`` or ``statement``): where the question mark stands."""


def exclusions(name: str, source: Mapping[str, Any], known: set[str]) -> dict[str, str]:
    """The set's ``source.exclude`` (source id → reason), each id a source question of the set.

    A stale id or a blank reason is an error naming the set and the key: an exclusion that
    matches nothing would be a rule nobody applies.
    """
    raw = source.get("exclude") or {}
    if not isinstance(raw, Mapping):
        raise SourceError(f"region set '{name}'", "source.exclude must map source ids to reasons")
    out = {str(k): " ".join(str(v or "").split()) for k, v in raw.items()}
    for sid, why in out.items():
        if sid not in known:
            raise SourceError(
                f"region set '{name}'", f"source.exclude: '{sid}' is no source question"
            )
        if not why:
            raise SourceError(f"region set '{name}'", f"source.exclude: '{sid}' has no reason")
    return out


def item_options(item: Mapping[str, Any]) -> tuple[list[str], tuple[str, ...]]:
    """The options as the model reads them, and the label each is reported by."""
    if "options" in item:  # built: a list in the source's order
        options = [str(o) for o in item["options"]]
        labels = TYPE_COLUMNS if len(options) == len(TYPE_COLUMNS) else LETTERS[: len(options)]
        return options, tuple(labels)
    columns = TYPE_COLUMNS if TYPE_COLUMNS[0] in item else OPTION_COLUMNS  # typed or finalized
    return [str(item[c]) for c in columns], columns


def asked(item: Mapping[str, Any]) -> str:
    """The question without what opens the item (a statement item's question starts with it)."""
    question, opening = str(item["question"]), str(item["narrative"])
    return question[len(opening) :].strip() if question.startswith(opening) else question


def problems(
    item: Mapping[str, Any],
    kb: Knowledge,
    complete: frozenset[str],
    config: CheckConfig,
    rules: SetRules = SetRules(),
) -> list[tuple[str, str]]:
    """Every (reason, detail) that removes this item; empty when it passes."""
    region = kb.regions[str(item["region"])]
    options, labels = item_options(item)
    out: list[tuple[str, str]] = []
    if (why := rules.excluded.get(str(item.get("source_id")))) is not None:
        out.append((EXCLUDED_REASON, why))
    clue = str(item["clue"])
    body = str(item["narrative"]).replace(clue, "", 1)
    lang = str(item["language"])
    question = asked(item)
    found = leaks([body, question, *options], region, language=lang)
    found += [t for t in leaks([clue], region, rules.clue_may_name, lang) if t not in found]
    if found:
        out.append(("own-region leak", "; ".join(found)))
    if merged := _merged([body, question, *options], item.get("replaced")):
        out.append((MERGED_REASON, "; ".join(merged)))
    if people := _people_sense([body, str(item["question"]), *options], item.get("replaced")):
        out.append((PEOPLE_SENSE_REASON, "; ".join(people)))
    if broken := ungrammatical(
        [body, question, *options], rules.phrases.get(str(item["language"]), ())
    ):
        out.append((GRAMMAR_REASON, "; ".join(broken)))
    if rules.scrub_limit is not None and item.get("replaced"):
        kinds, most = rules.scrub_limit
        lost = sorted(
            {
                t["term"]
                for t in json.loads(str(item["replaced"]))
                if t["kind"] in kinds and not t.get("described")
            }
        )
        if len(lost) > most:
            out.append((SCRUB_LIMIT_REASON, f"{len(lost)} > {most}: " + "; ".join(lost)))
    evidence = json.loads(str(item["clue_evidence"]))
    decision = decide(evidence["conditions"], kb, complete)
    allowed = set(evidence.get("no_figure", []))
    if decision.holders != (region.id,) or not set(decision.unknown) <= allowed:
        detail = f"holders {list(decision.holders)}, undecided {list(decision.unknown)}"
        out.append(("clue not unique on re-check", detail))
    out += _gaps(evidence["conditions"], str(region.id), kb, complete, rules.margins)
    if str(item["narrative"]).count(str(item["clue"])) != 1:
        out.append(("structure: clue not exactly once in the background", ""))
    question = question.strip()
    mark = "?" in question if rules.item_format == "statement" else question.endswith("?")
    if not mark or len(question.split()) < config.min_question_words:
        out.append(("structure: not a question of enough words", question[:80]))
    if len({o.strip().casefold() for o in options if o.strip()}) != len(options):
        out.append(("structure: empty or repeated option", ""))
    if copied := [
        c
        for c, o in zip(labels, options, strict=True)
        if _copied(f"{clue} {question}", o, config.copy_ngram)
    ]:
        out.append(("option copied into the question", ", ".join(copied)))
    return out


def _gaps(
    conditions: list[dict[str, Any]],
    target: str,
    kb: Knowledge,
    complete: frozenset[str],
    margins: Mapping[str, float],
) -> list[tuple[str, str]]:
    """The knowable-gap rule decided again from the stored conditions and the tables."""
    out = []
    for cond in conditions:
        if cond["kind"] != "between" or cond["indicator"] not in margins:
            continue
        table = kb.indicators[cond["indicator"]]
        value = float(table[target].value)
        gap = min(
            relative_gap(value, float(table[cond[side]].value))
            for side in ("low_region", "high_region")
            if cond.get(side) is not None
        )
        if gap < margins[cond["indicator"]]:
            out.append(
                (GAP_REASON, f"{cond['indicator']}: {gap:.3f} < {margins[cond['indicator']]}")
            )
    if near := near_bound([c for c in conditions], kb, complete, margins):
        out.append((GAP_REASON, f"a figure near a bound: {near[0]}"))
    return out


def check_items(
    items: pd.DataFrame,
    kb: Knowledge,
    complete: frozenset[str],
    config: CheckConfig,
    rules: SetRules = SetRules(),
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(kept items, removal records: one per reason an item fails)."""
    keep, removed = [], []
    for item in items.to_dict("records"):
        found = problems(item, kb, complete, config, rules)
        keep.append(not found)
        for reason, detail in found:
            removed.append(
                {
                    "item_id": item["item_id"], "source_id": item["source_id"],
                    "region": item["region"], "language": item["language"],
                    "clue_type": item["clue_type"], "stage": "check", "reason": reason,
                    "detail": detail,
                }
            )  # fmt: skip
    kept = items[pd.Series(keep, index=items.index, dtype=bool)].reset_index(drop=True)
    return kept, pd.DataFrame(removed, columns=list(REMOVED_COLUMNS))
