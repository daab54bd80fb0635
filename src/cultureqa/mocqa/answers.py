"""The ID-MoCQA answer protocol: how a model is asked, and how its answers are read.

Templates (``prompts/mocqa/evaluate/<style>.<language>.txt``) ask for JSON
``{"province": …, "answer": …}``. Replies are read strictly first, then leniently, field by
field, and each field comes from the first reading that yields it:

1. the whole reply as JSON;
2. fenced ```json blocks, then any ``{...}`` object in the text (the *last* one wins: CoT
   replies reason first and answer last);
3. quoted key/value pairs of a truncated object (``"province": "Bali", "answer": "B``);
4. labelled lines or phrases: "Province: …", "Provinsi: …", "the province is …";
5. for the answer, :func:`cultureqa.evaluation.parsing.parse_letter` over the whole reply
   ("The answer is B", "Jawaban: B"); for the province, the one province the reply names, if it
   names exactly one.

Province text is mapped to one of the 11 canonical names by
:func:`cultureqa.knowledge.gazetteer.normalize_province` ("Sumut", "Sumatera Utara",
"N. Sumatra" → North Sumatra). A field with no text at all is a *parse error*; province text that
names no canonical province (e.g. "Jakarta") is an answer, just a wrong one. Both are scored
wrong; parse errors are also counted and reported: a silent fallback would hide them.

Human answer sheets go through the same normalisation, so a human row is comparable with a model
row.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from cultureqa.core.io import SourceError, read_table
from cultureqa.evaluation.parsing import parse_letter
from cultureqa.evaluation.prompts import Template, TemplateError
from cultureqa.knowledge.gazetteer import normalize_province

PROMPT_STYLES = ("zero_shot", "cot")
LETTERS = ("A", "B", "C")
PROVINCE_KEYS = ("province", "provinsi", "first_hop", "region")
ANSWER_KEYS = ("answer", "jawaban", "option", "choice", "selection", "pilihan")
SHEET_COLUMNS = ("annotator", "item_id", "province", "answer")
_REQUIRED, _ALLOWED = {"question", "options"}, {"question", "options", "letters"}

_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL | re.IGNORECASE)
_OBJECT = re.compile(r"\{[^{}]*\}", re.DOTALL)
_LABEL = re.compile(
    r"(?i)\b(?:province|provinsi(?:nya)?)\b\**\s*(?:is|adalah|ialah|:|=|-)\s*\**\s*"
    # the value runs to the end of the sentence; "N. Sumatra" keeps its abbreviation dot
    r"((?:[^\n;.]|(?-i:(?<=\b[A-Z]))\.)+)"
)


def _quoted(keys: Sequence[str]) -> re.Pattern[str]:
    return re.compile(r'(?i)["\'](?:' + "|".join(keys) + r')["\']\s*:\s*["\']([^"\'\n]*)')


_ANSWER_CUE = re.compile(r"(?i)[,\s]+(?:answer|jawaban|option|pilihan)\b.*$", re.DOTALL)
_QUOTED_PROVINCE = _quoted(PROVINCE_KEYS)
_QUOTED_ANSWER = _quoted(ANSWER_KEYS)


TEMPLATE_DIR = "prompts/mocqa/evaluate"


def load_template(root: Path, style: str, language: str, directory: str = TEMPLATE_DIR) -> Template:
    """``<directory>/<style>.<language>.txt`` (default: the evaluation prompts), validated.

    There is no fallback to English: an Indonesian item must never silently get an English prompt.
    The hop diagnostic passes its own directory per condition (:mod:`cultureqa.mocqa.hop`).
    """
    path = root / directory / f"{style}.{language}.txt"
    if style not in PROMPT_STYLES or not path.exists():
        raise TemplateError(f"no ID-MoCQA template {path} (styles: {list(PROMPT_STYLES)})")
    template = Template(path, path.read_text(encoding="utf-8").rstrip("\n"))
    fields = {f for _, f, _, _ in string.Formatter().parse(template.text) if f is not None}
    if _REQUIRED - fields or fields - _ALLOWED:
        raise TemplateError(
            f"{path}: placeholders {sorted(fields)}; required {sorted(_REQUIRED)}, "
            f"allowed {sorted(_ALLOWED)} (write literal braces as {{{{ }}}})"
        )
    return template


def render(template: Template, question: str, options: Sequence[str]) -> str:
    """Fill a template with the question and lettered options."""
    lines = "\n".join(f"{LETTERS[i]}. {text}" for i, text in enumerate(options))
    return template.render(
        question=question, options=lines, letters=", ".join(LETTERS[: len(options)])
    )


class ParsedReply(NamedTuple):
    """What a reply commits to; ``None`` where it commits to nothing readable."""

    province: str | None
    """Canonical province name, or None (no text, or text naming no single province)."""
    province_raw: str | None
    """The province text as written; None means a province parse error."""
    answer: str | None
    """Option letter; None means an answer parse error."""

    @property
    def parse_errors(self) -> tuple[str, ...]:
        """Fields that could not be read at all: ``province`` and/or ``answer``."""
        missing = []
        if self.province_raw is None:
            missing.append("province")
        if self.answer is None:
            missing.append("answer")
        return tuple(missing)


def parse_reply(text: str | None, options: Sequence[str] = ("", "", "")) -> ParsedReply:
    """Read the province and the answer letter from a model reply.

    Args:
        text: The raw reply (None for no reply).
        options: Option texts in letter order; their count bounds the letters, and an answer
            value equal to an option's text maps to that option's letter.

    Returns:
        The parsed fields; see the module docstring for the order of readings.
    """
    body = (text or "").strip()
    province_raw: str | None = None
    answer: str | None = None
    for obj in _json_objects(body):
        if province_raw is None:
            province_raw = _value(obj, PROVINCE_KEYS)
        if answer is None:
            answer = _letter_value(_value(obj, ANSWER_KEYS), options)
    if province_raw is None:
        province_raw = _labelled_province(body)
    if answer is None:
        quoted = [m.group(1) for m in _QUOTED_ANSWER.finditer(body)]
        answer = _letter_value(quoted[-1], options) if quoted else None
    if answer is None:
        answer = parse_letter(body, len(options))
    province = normalize_province(province_raw) if province_raw else None
    if province_raw is None and body and (found := normalize_province(body)) is not None:
        province_raw, province = body, found
    return ParsedReply(province, province_raw, answer)


def _json_objects(body: str) -> list[dict[str, Any]]:
    """Candidate JSON objects, most authoritative first (whole reply, fences, last object)."""
    blobs = [body, *reversed([m.group(1) for m in _FENCE.finditer(body)])]
    blobs += reversed(_OBJECT.findall(body))
    found = []
    for blob in blobs:
        try:
            obj = json.loads(blob)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            found.append({str(k).lower(): v for k, v in obj.items()})
    return found


def _value(obj: Mapping[str, Any], keys: Sequence[str]) -> str | None:
    for key in keys:
        value = obj.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _labelled_province(body: str) -> str | None:
    """The last labelled province that names a province, else the last labelled text at all.

    A CoT reply may say "the province is known for …" before "Province: Aceh"; the label that
    resolves wins over one that does not.
    """
    found = sorted(
        (m.start(), _ANSWER_CUE.sub("", m.group(1)).strip(" *\"'"))
        for pattern in (_QUOTED_PROVINCE, _LABEL)
        for m in pattern.finditer(body)
    )
    values = [v for _, v in found if v]
    resolved = [v for v in values if normalize_province(v) is not None]
    return (resolved or values)[-1] if values else None


def _letter_value(value: str | None, options: Sequence[str]) -> str | None:
    """A field value as a letter: "B", "b", "(B)", "B. kain ulos", or an option's exact text."""
    if value is None:
        return None
    folded = value.strip().casefold()
    for index, option in enumerate(options[: len(LETTERS)]):
        if option and folded == option.strip().casefold():
            return LETTERS[index]
    text = value.strip()
    if len(text) == 1 or re.match(r"^\(?[a-z]\)?(?:[.):]|$)", text):
        text = text.upper()
    return parse_letter(text, len(options))


def read_answer_sheets(paths: Sequence[str | Path]) -> pd.DataFrame:
    """Human answer sheets (CSV ``annotator, item_id, province, answer``), concatenated.

    Raises:
        SourceError: A sheet lacks a column (the message names the file).
    """
    frames = []
    for path in paths:
        sheet = read_table(path)
        missing = [c for c in SHEET_COLUMNS if c not in sheet.columns]
        if missing:
            raise SourceError(path, f"answer sheet lacks column(s) {missing}")
        frames.append(
            sheet.loc[:, list(SHEET_COLUMNS)].fillna("").astype(str).assign(sheet=str(path))
        )
    return pd.concat(frames, ignore_index=True)


def score_human_sheets(sheets: pd.DataFrame, dataset: pd.DataFrame) -> pd.DataFrame:
    """Annotators as one more "model": rows shaped like model predictions (model ``human``).

    Rows with neither a province nor an answer are unanswered and dropped; a half-filled row is
    scored, its blank field counted wrong as a parse error, as for models.

    Raises:
        SourceError: An item id is not in the dataset (names the sheet and row).
    """
    known = dataset.set_index("item_id")
    rows = []
    for index, row in enumerate(sheets.to_dict("records")):
        if str(row["item_id"]) not in known.index:
            raise SourceError(
                row.get("sheet", "answer sheet"),
                f"unknown item_id {row['item_id']!r}",
                row=index + 1,
                column="item_id",
            )
        if not str(row["province"]).strip() and not str(row["answer"]).strip():
            continue
        rows.append(_human_row(row, known.loc[str(row["item_id"])]))
    return pd.DataFrame(rows)


def _human_row(row: Mapping[str, Any], item: pd.Series) -> dict[str, Any]:
    options = [str(o) for o in item["options"]]
    raw = str(row["province"]).strip() or None
    parsed = ParsedReply(
        normalize_province(raw) if raw else None, raw, _letter_value(str(row["answer"]), options)
    )
    return {
        "model": "human",
        "roster_entry": "human",
        "backend": "human",
        "prompt": "human",
        "annotator": str(row["annotator"]),
        "item_id": str(row["item_id"]),
        **{c: str(item[c]) for c in ("source_id", "clue_type", "language", "province", "topic")},
        "gold": str(item["answer"]),
        **scored_fields(parsed, str(item["province"]), str(item["answer"])),
    }


def scored_fields(parsed: ParsedReply, gold_province: str, gold_answer: str) -> dict[str, Any]:
    """Prediction columns for one parsed answer (parse errors are wrong, with a status)."""
    errors = parsed.parse_errors
    return {
        "province_raw": parsed.province_raw or "",
        "province_pred": parsed.province or "",
        "province_correct": parsed.province == gold_province,
        "answer_pred": parsed.answer or "",
        "correct": parsed.answer == gold_answer,
        "status": "parse_error" if errors else "ok",
        "parse_error": ",".join(errors),
    }
