"""What the ID-MoCQA questions look like: lexical statistics offline, semantic ones by an LLM.

The paper characterises its questions per clue type and language (its Table 6) before reading
model accuracy, because a clue type that is longer, lexically richer, or that shares words with
the right option is easier or harder for reasons other than reasoning. Three analyses:

* **word classes** (offline, on by default): adjectives, nouns, verbs, proper nouns, locations
  and cultural terms per question, the columns of the paper's Table 6
  (:mod:`cultureqa.mocqa.question_pos`);
* **lexical** (offline, always): question and clue length in words, vocabulary size and
  type–token ratio of the questions, and the overlap between the clue and the options — Jaccard
  overlap of content words with the gold option and with the distractors, the share of items
  whose clue shares a content word with the gold option, and the share where the gold option is
  the uniquely most-overlapping one (a lexical shortcut past the first hop);
* **semantic** (only when ``mocqa_eval.question_analysis.model`` names a model): every item is
  sent through the model layer (response store, retries, any backend) with the rubric in
  ``prompts/mocqa/analysis/semantic.en.txt``; replies are parsed strictly, and a reply that does
  not parse is counted as such, never guessed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cultureqa.analysis.tables import to_markdown
from cultureqa.evaluation.parsing import EMPTY, is_empty_reply
from cultureqa.evaluation.prompts import Template
from cultureqa.llm.base import GenerateRequest, GenerateResponse, Message
from cultureqa.mocqa.pos import Tagger, english_tagger, indonesian_tagger
from cultureqa.mocqa.question_pos import PERSONS_NOTE, word_class_table

KEYS = ["clue_type", "language"]
_WORD = re.compile(r"[^\W\d_]+(?:[-'’][^\W\d_]+)*")


def _stop(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOPWORDS: dict[str, frozenset[str]] = {
    "en": _stop(
        "a an the of in on at to for from by with and or but is are was were be been being this "
        "that these those it its as which who whom whose what when where why how one all any "
        "some most more many much you your they their them he she his her we our i my not no "
        "if then than so do does did has have had can could would should will shall may might "
        "into about over under after before between during most province"
    ),
    "id": _stop(
        "yang dan di ke dari ini itu dengan untuk pada dalam adalah atau juga oleh karena akan "
        "tidak ada sebagai bagi para serta bahwa agar dapat telah sudah masih lebih paling satu "
        "sebuah seorang mereka kita kami anda ia dia nya apa mana siapa bagaimana jika maka saat "
        "ketika oleh hingga sampai antara setelah sebelum provinsi"
    ),
}
"""Function words (and the word "province") left out of overlap; length counts every word."""


def words(text: str) -> list[str]:
    """Lower-case word tokens (letters, inner hyphens and apostrophes; digits dropped)."""
    return [w.lower() for w in _WORD.findall(str(text))]


def content_words(text: str, language: str) -> set[str]:
    """Word types of ``text`` without the function words of ``language``."""
    stop = STOPWORDS.get(language, frozenset())
    return {w for w in words(text) if w not in stop}


def jaccard(a: set[str], b: set[str]) -> float:
    """|a ∩ b| / |a ∪ b|; 0 for two empty sets."""
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def item_lexical(row: Mapping[str, Any]) -> dict[str, Any]:
    """Length and clue–option overlap of one item (gold = the option at its answer letter).

    A row without a ``clue`` gets NaN for the clue columns (the caller records why).
    """
    language = str(row["language"])
    options = [str(o) for o in row["options"]]
    out: dict[str, Any] = {
        "question_words": len(words(str(row["question"]))),
        "option_words": float(np.mean([len(words(o)) for o in options])),
    }
    if row.get("clue") is None:
        nan = float("nan")
        return out | {"clue_words": nan, "clue_gold_jaccard": nan, "clue_distractor_jaccard": nan,
                      "gold_shares_word": nan, "gold_top_overlap": nan}  # fmt: skip
    gold = "ABC".index(str(row["answer"]))
    clue = content_words(str(row["clue"]), language)
    option_words = [content_words(o, language) for o in options]
    overlaps = [jaccard(clue, o) for o in option_words]
    shared = [len(clue & o) for o in option_words]
    others = [v for i, v in enumerate(overlaps) if i != gold]
    best_other = max((s for i, s in enumerate(shared) if i != gold), default=0)
    return out | {
        "clue_words": len(words(str(row["clue"]))),
        "clue_gold_jaccard": overlaps[gold],
        "clue_distractor_jaccard": float(np.mean(others)) if others else np.nan,
        "gold_shares_word": float(shared[gold] > 0),
        "gold_top_overlap": float(shared[gold] > best_other),
    }


def _vocabulary(questions: pd.Series) -> pd.Series:
    tokens = [w for q in questions for w in words(str(q))]
    types = len(set(tokens))
    return pd.Series({"vocabulary": types, "type_token_ratio": types / max(1, len(tokens))})


def lexical_table(dataset: pd.DataFrame) -> pd.DataFrame:
    """Per clue type × language (and ``all`` × language): lengths, vocabulary, overlap.

    Type–token ratio falls with sample size, so compare it only between cells of similar ``n``.
    """
    per_item = pd.DataFrame([item_lexical(r) for r in dataset.to_dict("records")])
    rows = pd.concat([dataset[[*KEYS, "question"]].reset_index(drop=True), per_item], axis=1)
    rows = pd.concat([rows, rows.assign(clue_type="all")], ignore_index=True)
    grouped = rows.groupby(KEYS, sort=True)
    table = grouped.agg(
        n=("question", "size"),
        question_words_mean=("question_words", "mean"),
        question_words_sd=("question_words", "std"),
        clue_words_mean=("clue_words", "mean"),
        option_words_mean=("option_words", "mean"),
        clue_gold_jaccard=("clue_gold_jaccard", "mean"),
        clue_distractor_jaccard=("clue_distractor_jaccard", "mean"),
        gold_shares_word=("gold_shares_word", "mean"),
        gold_top_overlap=("gold_top_overlap", "mean"),
    )
    vocab = grouped["question"].apply(_vocabulary).unstack()
    return table.join(vocab).reset_index()


SEMANTIC_FIELDS: dict[str, tuple[object, ...]] = {
    "province_identifiable": (True, False),
    "clue_specificity": (1, 2, 3),
    "answer_from_clue_alone": (True, False),
    "needs_both_hops": (True, False),
}
"""Rubric keys of the semantic analysis and their allowed values."""


def semantic_requests(
    dataset: pd.DataFrame, template: Template, max_tokens: int = 256
) -> list[GenerateRequest]:
    """One rubric request per item (temperature 0, template hash in the cache key)."""
    requests = []
    for row in dataset.to_dict("records"):
        options = "\n".join(
            f"{letter}. {o}" for letter, o in zip("ABC", row["options"], strict=False)
        )
        prompt = template.render(
            clue=str(row["clue"]), question=str(row["question"]), options=options,
            answer=str(row["answer"]), language=str(row["language"]),
        )  # fmt: skip
        requests.append(GenerateRequest((Message("user", prompt),), max_tokens=max_tokens,
                                        template_version=template.sha256))  # fmt: skip
    return requests


def parse_semantic(text: str | None) -> dict[str, Any] | None:
    """The rubric object of a reply, or None when it is missing or has a value off the rubric."""
    if not text:
        return None
    found = re.findall(r"\{[^{}]*\}", text)
    if not found:
        return None
    try:
        data = json.loads(found[-1])
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    out = {}
    for key, allowed in SEMANTIC_FIELDS.items():
        value = data.get(key)
        if isinstance(value, bool) != isinstance(allowed[0], bool) or value not in allowed:
            return None
        out[key] = value
    return out


def semantic_rows(dataset: pd.DataFrame, replies: Sequence[GenerateResponse]) -> pd.DataFrame:
    """One row per item: status ok / parse_error / empty / error and the rubric values when parsed.

    An empty reply is the judge declining to answer, not a failed call: counted as ``empty``.
    """
    rows = []
    for row, reply in zip(dataset.to_dict("records"), replies, strict=True):
        parsed = parse_semantic(reply.text) if reply.status == "ok" else None
        status = "error" if reply.status != "ok" else ("ok" if parsed else "parse_error")
        if is_empty_reply(reply.status, reply.text):
            status = EMPTY
        rows.append({"item_id": row["item_id"], **{k: row[k] for k in KEYS},
                     "status": status, **(parsed or {})})  # fmt: skip
    return pd.DataFrame(rows)


def semantic_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per clue type × language (and ``all``): rubric shares and means over parsed replies."""
    both = pd.concat([rows, rows.assign(clue_type="all")], ignore_index=True)
    counts = both.groupby(KEYS, sort=True)["status"].value_counts().unstack(fill_value=0)
    counts = counts.reindex(columns=["ok", "parse_error", EMPTY, "error"], fill_value=0)
    table = counts.rename(columns=lambda s: f"n_{s}")
    ok = both[both["status"] == "ok"]
    if not ok.empty:
        values = ok.astype({k: float for k in SEMANTIC_FIELDS if k in ok.columns})
        table = table.join(values.groupby(KEYS)[list(SEMANTIC_FIELDS)].mean())
    return table.reset_index()


@dataclass(frozen=True)
class QuestionAnalysis:
    """The paper's question analysis (its Table 6): lexical always, semantic when a model ran."""

    lexical: pd.DataFrame | None = None
    semantic: pd.DataFrame | None = None
    semantic_items: pd.DataFrame | None = None
    semantic_model: str = ""
    """Display id of the model that judged the items ('' = the semantic analysis did not run)."""
    note: str = ""
    """What the lexical analysis could not compute, and why."""
    word_classes: pd.DataFrame | None = None
    """Adjectives, nouns, verbs, proper nouns, locations and cultural terms per question."""
    taggers: tuple[str, ...] = ()
    """One sentence per language: the POS tagger and its held-out accuracy."""
    tagger_records: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per language: the tagger's name and what its fit measured and repaired (run record)."""

    def tables(self) -> dict[str, pd.DataFrame]:
        """The non-empty tables by file stem."""
        named = {"question_lexical": self.lexical, "question_word_classes": self.word_classes,
                 "question_semantic": self.semantic,
                 "question_semantic_items": self.semantic_items}  # fmt: skip
        return {k: v for k, v in named.items() if v is not None}

    def markdown(self) -> str:
        """Both sections; a section that did not run says why."""
        lexical = (
            to_markdown(self.lexical, digits=3) if self.lexical is not None
            else "_Not run: no ID-MoCQA dataset was given to the report._\n"
        )  # fmt: skip
        if self.semantic is not None:
            semantic = f"Judged by `{self.semantic_model}`.\n\n" + to_markdown(self.semantic)
        else:
            semantic = (
                "_Not run: `mocqa_eval.question_analysis.model` is null (set a model config "
                "to run the LLM-based semantic analysis)._\n"
            )
        return (
            self._word_classes_markdown()
            + "\n## Questions: lexical analysis by clue type and language\n\n"
            "Words per question and clue, vocabulary and type–token ratio of the questions, "
            "content-word Jaccard overlap of the clue with the gold option and with the "
            "distractors, share of items whose clue shares a content word with the gold option, "
            "and share where the gold option overlaps the clue most (a lexical shortcut).\n\n"
            + (f"{self.note}\n\n" if self.note else "")
            + lexical
            + "\n## Questions: semantic analysis (LLM rubric)\n\n"
            + semantic
        )

    def _word_classes_markdown(self) -> str:
        if self.word_classes is None:
            body = "_Not run: `mocqa_eval.question_analysis.word_classes` is false._\n"
        else:
            taggers = "".join(f"- {t}\n" for t in self.taggers)
            body = (
                "Means per question (the paper's Table 6 columns), each with `_bias_pct`: the "
                "tagger's bias on that measure against the hand-tagged gold questions of the "
                "row's language (tagged total / gold total − 1, %): a gap between languages "
                "no larger than the two biases' difference is the taggers', not the languages'. "
                "Word classes from the POS "
                f"taggers:\n\n{taggers}\nLocations: place names of the knowledge base "
                "(provinces, cities, regencies, islands, geographic features, countries) and place "
                "phrases (`Lake Toba`, `Pulau Weh`); cultural terms: names of its cultural items "
                f"and peoples. {PERSONS_NOTE}\n\n" + to_markdown(self.word_classes, digits=2)
            )
        return "\n## Questions: word classes and named terms by clue type and language\n\n" + body


def load_rubric(root: Path) -> Template:
    """The semantic-analysis rubric template (English instructions for both languages)."""
    path = root / "prompts" / "mocqa" / "analysis" / "semantic.en.txt"
    return Template(path, path.read_text(encoding="utf-8").rstrip("\n"))


def _subset(dataset: pd.DataFrame, limit: int | None) -> pd.DataFrame:
    """All items, or the first ``limit`` (by item id) of every clue type × language."""
    if limit is None:
        return dataset
    ordered = dataset.sort_values("item_id")
    return ordered.groupby(KEYS, sort=True, group_keys=False).head(int(limit))


def analyze_questions(
    dataset: pd.DataFrame, cfg: Mapping[str, Any], root: Path
) -> QuestionAnalysis:
    """Lexical analysis of every item; the semantic one when ``cfg['model']`` is a model config.

    Semantic requests go through :func:`cultureqa.mocqa_shared.models.run_models` (the shared
    response store, so a rerun makes no calls; failures come back as error rows, counted per cell).
    """
    lexical = lexical_table(dataset)
    note = "" if "clue" in dataset.columns else (
        "The dataset has no `clue` column: clue length and clue–option overlap are blank."
    )  # fmt: skip
    word_classes, taggers = None, {}
    if cfg.get("word_classes", True):
        taggers = default_taggers(sorted(set(dataset["language"].astype(str))))
        word_classes = word_class_table(dataset, taggers)
    sentences = {lang: t.describe() for lang, t in taggers.items()}
    records = {lang: t.record() for lang, t in taggers.items()}
    if taggers and cfg.get("gold"):  # agreement with the hand-tagged questions, per measure
        from cultureqa.mocqa.question_gold import describe_agreement, gold_agreement, with_bias

        measured_by = gold_agreement(root, str(cfg["gold"]), taggers)
        for lang, measured in measured_by.items():
            records[lang]["gold_agreement"] = measured
            sentences[lang] += describe_agreement(measured)
        if word_classes is not None:  # the bias beside each count
            word_classes = with_bias(word_classes, measured_by)
    described = tuple(sentences.values())
    model_cfg = cfg.get("model")
    if not model_cfg:
        return QuestionAnalysis(lexical=lexical, note=note, word_classes=word_classes,
                                taggers=described, tagger_records=records)  # fmt: skip
    if note:
        raise KeyError("mocqa_eval.question_analysis.model is set but the dataset has no clue")
    from cultureqa.llm.store import store_location
    from cultureqa.mocqa_shared.models import run_models

    items = _subset(dataset, cfg.get("limit"))
    requests = semantic_requests(items, load_rubric(root), int(cfg.get("max_tokens", 256)))
    replies = run_models({"semantic": (model_cfg, requests)}, store_location())
    rows = semantic_rows(items, replies["semantic"])
    model_id = str(model_cfg.get("id", "?"))
    return QuestionAnalysis(lexical, semantic_table(rows), rows, model_id, note, word_classes,
                            described, records)  # fmt: skip


def default_taggers(languages: Sequence[str]) -> dict[str, Tagger]:
    """The offline tagger of each language (the Indonesian one is fitted once into the cache)."""
    from cultureqa.core.paths import user_cache_dir

    def indonesian() -> Tagger:
        return indonesian_tagger(user_cache_dir() / "taggers")

    builders: dict[str, Callable[[], Tagger]] = {"en": english_tagger, "id": indonesian}
    unknown = [lang for lang in languages if lang not in builders]
    if unknown:
        raise KeyError(f"no POS tagger for language(s) {unknown}; have {sorted(builders)}")
    return {lang: builders[lang]() for lang in languages}
