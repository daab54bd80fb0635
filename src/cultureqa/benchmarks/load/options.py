"""Check a row's options: their count, empty and repeated texts, and "A. " labels.

Labels are recognised only as a whole row's consistent sequence. Options that all carry A, B, C…
in order lose them (the one repair, counted); all carrying a permutation of them is an error or,
with ``columns.option_labels: by_label``, a reorder. A label-like prefix on *some* options, or a
repeated one (``A.``, ``A.``, ``C.``), would reach the prompt as "A. B. konro", so it is an error
naming the row. Text that only looks like a label stays text: initials ("A. H. Nasution") and a
letter beyond the option count (TurkishMMLU's option "I." among five) are not labels.
"""

from __future__ import annotations

import re
from typing import Any

from cultureqa.benchmarks.fields import FieldError, options_from
from cultureqa.benchmarks.load.counts import RowChanges, Where
from cultureqa.benchmarks.load.mapping import Mapping, get, option_text
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.core.records import LETTERS

_LABEL = re.compile(r"^\s*\(?([A-Ja-j])[.)]\s+")
_ONLY_LABEL = re.compile(r"^\s*(?:\(([A-Ja-j])\)|([A-Ja-j])[.)])\s*$")
_INITIAL = re.compile(r"^[A-Z]\.\s")
_LABEL_START = frozenset("(ABCDEFGHIJabcdefghij")


def row_options(
    row: dict[str, Any], spec: BenchmarkSpec, mapping: Mapping, where: Where, changes: RowChanges
) -> tuple[tuple[str, ...], list[int] | None, str]:
    """The option texts, where each source option moved to (by_label), and the options field."""
    if isinstance(mapping.options, list):
        column = ",".join(mapping.options)
        raw = [get(row, c, where, "options") for c in mapping.options]
    else:
        column = mapping.options
        try:
            raw = options_from(
                get(row, column, where, "options"),
                spec.columns.options_transform,
                spec.columns.options_sep,
            )
        except FieldError as exc:
            raise where.error(str(exc), column, "options_unparsable") from exc
    texts = _trim_trailing([option_text(o) for o in raw], spec.columns.option_counts)
    _check_count(texts, spec.columns.option_counts, where, column)
    empty = [LETTERS[i] for i, t in enumerate(texts) if not t]
    if empty:
        raise where.error(f"option(s) {empty} are empty", column, "empty_option")
    texts, moved = _labels(texts, spec.columns.option_labels, where, column, changes)
    _no_duplicates(texts, where, column, changes)
    return tuple(texts), moved, column


def _trim_trailing(texts: list[str], allowed: tuple[int, ...]) -> list[str]:
    """With declared variable option counts, blank trailing option columns are absent options."""
    if not allowed:
        return texts
    while len(texts) > min(allowed) and not texts[-1]:
        texts = texts[:-1]
    return texts


def _check_count(texts: list[str], allowed: tuple[int, ...], where: Where, column: str) -> None:
    if len(texts) < 2:
        raise where.error(f"need at least 2 options, got {len(texts)}", column, "option_count")
    if len(texts) > len(LETTERS):
        raise where.error(
            f"at most {len(LETTERS)} options, got {len(texts)}", column, "option_count"
        )
    if allowed and len(texts) not in allowed:
        raise where.error(
            f"{len(texts)} options, not one of columns.option_counts {list(allowed)}",
            column,
            "option_count",
        )


def _labels(
    texts: list[str], mode: str, where: Where, column: str, changes: RowChanges
) -> tuple[list[str], list[int] | None]:
    """Strip, reorder or keep a consistent label sequence; a partial or repeated one is an error."""
    if mode == "keep" or not any(_may_be_labelled(t) for t in texts):
        return texts, None  # the common case, decided without a regex
    stripped = strip_labels(texts)
    if stripped is not None:
        changes.labels_stripped = True
        return stripped, None
    order = label_order(texts)
    if order is not None:
        if mode != "by_label":
            raise where.error(
                f"options carry labels {', '.join(order)}, not A, B, C… in order, so the letters "
                f"shown would not match the labels ({texts[0][:30]!r} would be A); reorder them in "
                "the source or set columns.option_labels: by_label (options sorted by label, gold "
                "re-pointed)",
                column,
                "labels_out_of_order",
            )
        changes.labels_reordered = True
        moved = [LETTERS.index(letter) for letter in order]
        body = [_LABEL.sub("", t, count=1).strip() for t in texts]
        result = [""] * len(texts)
        for old, new in enumerate(moved):
            result[new] = body[old]
        return result, moved
    _no_stray_labels(texts, where, column)
    return texts, None


def _may_be_labelled(text: str) -> bool:
    """Cheap first look: "(x" or a letter A-J then "." or ")"; everything else is plain text."""
    return text[:1] == "(" or (text[:1] in _LABEL_START and text[1:2] in (".", ")"))


def _no_stray_labels(texts: list[str], where: Where, column: str) -> None:
    """Label-like prefixes that are not one consistent sequence over the row are an error."""
    found = {i: letter for i, t in enumerate(texts) if (letter := _label_like(t, len(texts)))}
    if not found:
        return
    shown = ", ".join(f"{LETTERS[i]} {texts[i][:40]!r}" for i in found)
    bare = [LETTERS[i] for i, t in enumerate(texts) if i in found and _ONLY_LABEL.match(t)]
    if bare:
        first = texts[LETTERS.index(bare[0])]
        message = f"option(s) {bare} hold only a label ({first!r}), no text"
        reason = "label_only_option"
    else:
        message = (
            f"option(s) {shown} start with a label, but not every option carries the labels "
            f"{', '.join(LETTERS[: len(texts)])} in order, so the prompt would show two labels"
        )
        reason = "labels_inconsistent"
    raise where.error(
        f"{message}; fix the labels in the source, or set columns.option_labels: keep if this "
        "is text",
        column,
        reason,
    )


def _label_like(text: str, count: int) -> str | None:
    """The letter of a prefix that can only be a label here (in range, not an initial)."""
    bare = _ONLY_LABEL.match(text)
    if bare is not None:
        letter = (bare.group(1) or bare.group(2)).upper()
        return letter if LETTERS.index(letter) < count else None
    match = _LABEL.match(text)
    if match is None:
        return None
    letter = match.group(1).upper()
    if LETTERS.index(letter) >= count or _INITIAL.match(text[match.end() :]):
        return None
    return letter


def label_order(options: list[str]) -> list[str] | None:
    """The labels when every option carries one and they are A, B, C… in some other order."""
    matches = [_LABEL.match(o) for o in options]
    if not all(matches):
        return None
    letters = [m.group(1).upper() for m in matches if m is not None]
    if (
        sorted(letters) != list(LETTERS[: len(options)])
        or "".join(letters) == LETTERS[: len(options)]
    ):
        return None
    return letters


def strip_labels(options: list[str]) -> list[str] | None:
    """Options without "A. "/"(B) " labels, or None when not every option carries A, B, C… in order.

    "G. A. Siwabessy" alone is a person's initials, not a label, so it is left as written.
    """
    matches = [_LABEL.match(o) for o in options]
    if not all(matches):
        return None
    letters = "".join(m.group(1).upper() for m in matches if m is not None)
    if letters != LETTERS[: len(options)]:
        return None
    out = [o[m.end() :].strip() for o, m in zip(options, matches, strict=True) if m is not None]
    return out if all(out) else None


def split_label(text: str) -> tuple[str, str] | None:
    """("D", "Rendang") for "(D) Rendang" or "d. Rendang"; None for text without a label."""
    labelled = _LABEL.match(text)
    if labelled is None:
        return None
    return labelled.group(1).upper(), text[labelled.end() :]


def _no_duplicates(options: list[str], where: Where, column: str, changes: RowChanges) -> None:
    """Two options that read the same (spacing aside) are one option twice: the row is invalid.

    Case counts: ``GG``/``gg`` (genotypes), ``E=F/Q``/``E=F/q`` and ``sq``/``SQ`` are distinct
    answers, so options that differ only in case are kept, and counted (``Panitia Sembilan``
    beside ``Panitia sembilan`` may be one answer twice: the count says where to look).
    """
    first: dict[str, str] = {}
    for letter, text in zip(LETTERS, options, strict=False):
        key = spaced(text)
        if key in first:
            raise where.error(
                f"options {first[key]} and {letter} are the same ({text[:40]!r})",
                column,
                "duplicate_option",
            )
        first[key] = letter
    if len({folded(o) for o in options}) < len(options):
        changes.case_only = True


def folded(text: str) -> str:
    """Whitespace-collapsed, case-folded text: how repeated questions are recognised."""
    return " ".join(text.split()).casefold()


def spaced(text: str) -> str:
    """Whitespace-collapsed text: how repeated options are recognised (case counts)."""
    return " ".join(text.split())
