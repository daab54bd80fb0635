"""Find the options in a sample and the form they take.

Forms, most specific first: a field named like options whose cells all parse as a list, an
ARC-style record (``{label: [...], text: [...]}`` or a list of ``{label, text}`` objects), an
object keyed by letter (``{"A": …}``, also as a JSON string) or a delimited string; one column per
option (``A``…``D``, ``option_a``, ``Pilihan-A``, ``choice_1``); then any other field whose every
cell parses as a record, letter object or list; then a delimited string, but only where each row's
gold text is one of its parts (a comma or a bar in free text is not evidence on its own).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pandas as pd

from cultureqa.authoring.sniff.fields import is_options_name, is_text, texts
from cultureqa.benchmarks.fields import FieldError, options_from
from cultureqa.benchmarks.load import label_order, strip_labels
from cultureqa.core.io import SourceError

OPTION_COLUMN = re.compile(
    r"^(?:option|choice|opt|op|ending|pilihan|opsi|answer)?[_ -]?([a-j]|\d{1,2})$", re.I
)
_SUFFIX = re.compile(r"^(?P<stem>.*?[A-Za-z_ -])(?P<label>\d{1,2}|[A-Ja-j])$")
STRUCTURED = ("record", "letter_dict", "list")
SEPARATORS = ("|", ";", "\n", ",")


@dataclass(frozen=True)
class Options:
    """The options field(s) as the config writes them, and each sampled row's option texts."""

    config: Any
    """``"col"``, ``[col, col]`` or ``{from: col, transform: …, sep: …}``."""
    used: tuple[str, ...]
    rows: list[list[str]]
    """Per sampled row: option texts as written (labels kept), trailing blanks cut."""
    notes: tuple[str, ...] = ()

    def counts(self) -> list[int] | None:
        """Declared option counts when rows differ (4 and 5 options), else None."""
        found = sorted({len(r) for r in self.rows} - {0, 1})
        return found if len(found) > 1 else None

    def labels(
        self, golds: list[str] | None = None, questions: list[str] | None = None
    ) -> tuple[str | None, list[str]]:
        """``option_labels`` to propose (None: the default, strip) and what was seen.

        ``golds``: each sampled row's gold as written, when golds are option texts. Markers like
        CLIcK's ``(a)``…``(e)``, which point into a passage, are content: an option that is only
        a marker, markers that are no A, B, C… sequence, or a gold that quotes its option with
        the marker say so, and where no labelled row says otherwise ``keep`` is proposed.
        """
        content = [
            i
            for i, r in enumerate(self.rows)
            if r and _marked(r, golds[i] if golds else "", questions[i] if questions else "")
        ]
        genuine = [i for i, r in enumerate(self.rows) if r and i not in content
                   and (strip_labels(r) is not None or label_order(r) is not None)]  # fmt: skip
        if content:
            first = self.rows[content[0]]
            seen = (f"options begin with markers that are their content in {len(content)} sampled "
                    f"rows (first: {first[:3]}; an option that is only a marker, markers out of "
                    "sequence, or a gold that quotes its marker)")  # fmt: skip
            if not genuine:
                return "keep", [f"{seen}: proposed option_labels: keep"]
            return None, [f"{seen}, while {len(genuine)} rows carry labels to strip: those rows "
                          "do not load (the trial load counts them); option_labels: keep would "
                          "keep both"]  # fmt: skip
        in_order = sum(strip_labels(r) is not None for r in self.rows if r)
        shuffled = [i for i, r in enumerate(self.rows) if r and label_order(r) is not None]
        if shuffled:
            return "by_label", [
                f"options carry labels out of order in {len(shuffled)} sampled rows (first: "
                f"{self.rows[shuffled[0]][:3]}): proposed option_labels: by_label"
            ]
        if in_order:
            return None, [f"options carry labels A., B., … in {in_order} sampled rows: stripped"]
        return None, []


def _marked(row: list[str], gold: str, question: str) -> bool:
    """Whether a row's label-like prefixes are content rather than labels to strip.

    Markers only (``(a)``…) or markers out of sequence are content when the question names them
    ("(a)~(e) 중 …"); otherwise options ``A)``…``E)`` are labels whose text was lost, a defect
    the trial load counts. A gold that quotes its option with the marker is content by itself.
    """
    if not all(_LABEL_LIKE.match(o) for o in row):
        return False
    named = any(m.group(0).strip() in question for o in row if (m := _LABEL_LIKE.match(o)))
    if any(_ONLY_MARKER.match(o) for o in row):
        return named
    if strip_labels(row) is None and label_order(row) is None:
        # "(a) - (c) - (b)": markers, but not as A, B, C… in any order; "R. A. Kartini" (an
        # initial) is no marker, so only the parenthesised form counts
        return named and all(_PARENTHESISED.match(o) for o in row)
    return bool(gold) and gold.strip() in row and gold.strip() not in (strip_labels(row) or [])


_LABEL_LIKE = re.compile(r"^\s*\(?[A-Ja-j][.)]\s*")
_PARENTHESISED = re.compile(r"^\s*\([A-Ja-j]\)")
_ONLY_MARKER = re.compile(r"^\s*\(?[A-Ja-j][.)]?\)?\s*$")


def find_options(
    fields: dict[str, pd.Series], answer: pd.Series, exclude: set[str], origin: str
) -> Options:
    """The options of the sample; raises SourceError when no field holds them."""
    free = {k: v for k, v in fields.items() if k not in exclude}
    named = [k for k in sorted(free, key=lambda f: f.count(".")) if is_options_name(k)]
    for name in named:
        found = _structured(name, free[name]) or _delimited(name, free[name], answer, True)
        if found is not None:
            return found
    columns = _option_columns(free) or column_run(free)
    if len(columns) >= 2:
        return _per_column(columns, fields)
    for name in free:
        found = _structured(name, free[name])
        if found is not None:
            return found
    for name in free:
        found = _delimited(name, free[name], answer, False)
        if found is not None:
            return found
    raise SourceError(
        origin,
        f"cannot tell which field(s) hold the options (fields: {sorted(free)}); "
        "write conf/benchmark/<name>.yaml by hand (docs/benchmark-configs.md)",
    )


def _option_columns(fields: dict[str, pd.Series]) -> list[str]:
    """``A``…``D`` or ``option_a``…: top-level columns, else the keys of one record.

    The least nested group of two or more wins, so ``prompts.0.option_a``… (SEA-HELM's one
    prompt record) are the options where no top-level column is.
    """
    groups: dict[str, list[str]] = {}
    for name in fields:
        parent, _, leaf_name = name.rpartition(".")
        if OPTION_COLUMN.match(leaf_name) and is_text(fields[name]):
            groups.setdefault(parent, []).append(name)
    usable = [g for p, g in groups.items() if len(g) >= 2 and not _letter_record(p, g, fields)]
    return min(usable, key=lambda g: g[0].count(".")) if usable else []


def _letter_record(parent: str, keys: list[str], fields: dict[str, pd.Series]) -> bool:
    """A record of options alone (``{"a": …, "d": …}``): one letter-object field, not columns."""
    return bool(parent) and len(keys) == sum(f.startswith(parent + ".") for f in fields)


def column_run(fields: dict[str, pd.Series]) -> list[str]:
    """Text columns that share a stem and run 0, 1, … / 1, 2, … / A, B, … (``sol1``, ``sol2``).

    The longest such run wins; a run of columns holding numbers is not options.
    """
    runs: dict[str, dict[str, str]] = {}
    for name, values in fields.items():
        match = _SUFFIX.match(name)
        if match and "." not in name and is_text(values):
            runs.setdefault(match["stem"], {})[match["label"].upper()] = name
    best: list[str] = []
    for labels in runs.values():
        for first in ("0", "1", "A"):
            run = _consecutive(labels, first)
            if len(run) > len(best):
                best = run
    return best if len(best) >= 2 else []


def _consecutive(labels: dict[str, str], first: str) -> list[str]:
    run = []
    code = first
    while code in labels:
        run.append(labels[code])
        code = str(int(code) + 1) if code.isdigit() else chr(ord(code) + 1)
    return run


def _structured(name: str, values: pd.Series) -> Options | None:
    present = values[values.map(lambda v: v is not None and not _blank(v))]
    if present.empty:
        return None
    for transform in STRUCTURED:
        rows = _parse_all(present, transform)
        if rows is not None:
            config = name if transform == "list" else {"from": name, "transform": transform}
            return Options(config, (name,), rows)
    return None


def _parse_all(values: pd.Series, transform: str) -> list[list[str]] | None:
    rows = []
    for value in values:
        try:
            parsed = options_from(value, transform, "|")
        except (FieldError, AttributeError, TypeError, KeyError):
            return None
        if len(parsed) < 2 or any(isinstance(p, dict | list) for p in parsed):
            return None
        rows.append(_trimmed([_text(p) for p in parsed]))
    return rows


def _delimited(name: str, values: pd.Series, answer: pd.Series, named: bool) -> Options | None:
    """A string split on one separator into 2–10 options on (nearly) every row with content.

    Rows blank in both this field and the answer (GeoMLAMA's separator lines) do not count
    against it; the trial load counts them. A gold is evidence when it is one of its row's parts
    or, for a multi-gold cell (``feet, inch``), when each of its parts is.
    """
    shown = texts(values)
    gold_all = answer.map(lambda v: "" if v is None else str(v).strip())
    rows_with_content = int(((gold_all != "") | values.index.isin(shown.index)).sum())
    if shown.empty or len(shown) < rows_with_content * 0.9:
        return None
    golds = gold_all.reindex(shown.index)
    for sep in SEPARATORS:
        rows = [[p.strip() for p in cell.split(sep)] for cell in shown]
        if not all(2 <= len(r) <= 10 and all(r) for r in rows):
            continue
        pairs = zip(golds, rows, strict=True)
        evidence = all(_named_in(g, r, sep) for g, r in pairs)
        if evidence or (named and sep != ","):
            config = {"from": name, "transform": "delimited", "sep": sep}
            parts = dict(zip(shown.index, rows, strict=True))
            return Options(config, (name,), [parts.get(i, []) for i in values.index])
    return None


def _named_in(gold: str, row: list[str], sep: str) -> bool:
    if gold in row:
        return True
    parts = [p.strip() for p in gold.split(sep)]
    return len(parts) > 1 and all(p in row for p in parts)


def _per_column(columns: list[str], fields: dict[str, pd.Series]) -> Options:
    frame = pd.DataFrame({c: fields[c] for c in columns})
    rows = [_trimmed([_text(v) for v in row]) for row in frame.itertuples(index=False)]
    return Options(columns, tuple(columns), rows)


def _trimmed(row: list[str]) -> list[str]:
    while row and not row[-1]:
        row = row[:-1]
    return row


def _text(value: Any) -> str:
    return "" if value is None or _blank(value) else str(value).strip()


def _blank(value: Any) -> bool:
    if isinstance(value, float) and value != value:
        return True
    return isinstance(value, str) and value.strip() in ("", "nan", "None")
