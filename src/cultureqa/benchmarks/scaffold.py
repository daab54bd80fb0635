"""Sniff a multiple-choice file's layout and write its benchmark config, fixture and entries.

Used by ``cultureqa benchmark add``. The sniffer only proposes: every guess lands in a YAML the
user can read and edit, and the contract test then loads the fixture through it. A field it cannot
tell is an error naming the columns it saw, never a silent default.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from cultureqa.benchmarks.fields import FieldError, options_from
from cultureqa.benchmarks.load import parse_letter
from cultureqa.benchmarks.sources import read_any
from cultureqa.io import SourceError, atomic_path, write_text

_ID = ("id", "qid", "idx", "uid", "question_id", "item_id", "no", "nomor", "번호")
_QUESTION = ("question", "prompt", "query", "stem", "context", "text", "sentence", "goal",
             "pertanyaan", "soal", "질문")  # fmt: skip
_OPTIONS = ("choices", "options", "candidates", "answers", "endings", "pilihan")
_ANSWER = ("answer", "answerkey", "answer_key", "label", "gold", "correct", "target",
           "kunci", "jawaban", "정답")  # fmt: skip
_OPTION_COLUMN = re.compile(
    r"^(?:option|choice|opt|op|ending|pilihan|opsi)?[_ -]?([a-j]|\d{1,2})$", re.I
)
_MODEL_OUTPUT = re.compile(r"pred|output|response|completion|generated|model|logit|score", re.I)
"""Columns holding a model's answers: never proposed as metadata to slice by."""


@dataclass
class Layout:
    """What the sniffer found: a ``columns`` mapping for the benchmark config."""

    columns: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def _pick(frame: pd.DataFrame, names: tuple[str, ...]) -> str | None:
    lowered = {str(c).lower(): str(c) for c in frame.columns}
    return next((lowered[n] for n in names if n in lowered), None)


def sniff(frame: pd.DataFrame, origin: str) -> Layout:
    """Guess the field mapping of ``frame``; raises SourceError for a field it cannot tell."""
    seen = [str(c) for c in frame.columns]
    question = _pick(frame, _QUESTION)
    answer = _pick(frame, _ANSWER)
    if question is None or answer is None:
        missing = "question" if question is None else "answer"
        raise SourceError(
            origin,
            f"cannot tell which column holds the {missing} (columns: {seen}); "
            "write conf/benchmark/<name>.yaml by hand (README)",
        )
    options, transform = _sniff_options(frame, origin, seen)
    id_column = _pick(frame, _ID)
    if id_column is not None and frame[id_column].astype(str).duplicated().any():
        id_column = None
    columns: dict[str, Any] = {"id": id_column, "question": question}
    columns["options"] = {"from": options, "transform": transform} if transform else options
    n_options = _option_count(frame, options, transform)
    columns["answer"] = answer
    several = _several_golds(frame[answer])
    columns["answer_format"] = _answer_format(frame[answer], n_options, several)
    if several:
        columns["answer_sep"] = ","
    counts = _option_counts(frame, options)
    if counts:
        columns["option_counts"] = counts
    used = {id_column, question, answer, *(options if isinstance(options, list) else [options])}
    columns["metadata"] = [
        c for c in seen if c not in used and not _MODEL_OUTPUT.search(c) and _is_category(frame[c])
    ]
    layout = Layout(columns)
    if id_column is None:
        layout.notes.append("no unique id column: ids are synthesized from the row")
    return layout


def _sniff_options(frame: pd.DataFrame, origin: str, seen: list[str]) -> tuple[Any, str | None]:
    column = _pick(frame, _OPTIONS)
    if column is not None:
        return column, _transform(frame[column].iloc[0])
    numbered = [c for c in seen if _OPTION_COLUMN.match(c)]
    if len(numbered) >= 2:
        return numbered, None
    raise SourceError(origin, f"cannot tell which column(s) hold the options (columns: {seen}); "
                      "write conf/benchmark/<name>.yaml by hand (README)")  # fmt: skip


def _transform(value: Any) -> str | None:
    """The options transform a sample cell needs (None: a plain list)."""
    for name in ("list", "record", "letter_dict"):
        try:
            options_from(value, name, "|")
        except (FieldError, AttributeError, TypeError):
            continue
        return None if name == "list" else name
    if isinstance(value, str) and "|" in value:
        return "delimited"
    return None


def _option_count(frame: pd.DataFrame, options: Any, transform: str | None) -> int:
    if isinstance(options, list):
        return len(options)
    return max(len(options_from(v, transform or "list", "|")) for v in frame[options].head(50))


def _several_golds(values: pd.Series) -> bool:
    """Whether some gold cells list several letters ("A, C")."""
    texts = values.astype(str).str.strip()
    return bool(texts.str.fullmatch(r"[A-Ja-j](\s*,\s*[A-Ja-j])+").any())


def _option_counts(frame: pd.DataFrame, options: Any) -> list[int] | None:
    """Declared option counts when option columns end blank on some rows (4 and 5 options)."""
    if not isinstance(options, list):
        return None
    filled = frame[options].astype(str).map(lambda v: v.strip() not in ("", "nan", "None"))
    counts = sorted({_filled_prefix(row) for row in filled.to_numpy()} - {0, 1})
    return counts if len(counts) > 1 else None


def _filled_prefix(flags: Any) -> int:
    n = len(flags)
    while n and not flags[n - 1]:
        n -= 1
    return n


def _answer_format(values: pd.Series, n_options: int, several: bool = False) -> str:
    """letter, index or text, judged on the non-blank cells (a missing gold is the loader's)."""
    texts = values.astype(str).str.strip()
    texts = texts[~texts.isin(["", "nan", "None"])]
    if several:
        texts = texts.str.split(",").str[0].str.strip()
    if texts.str.fullmatch(r"-?\d+").all():
        numbers = texts.astype(int)
        if numbers.min() >= 0 and numbers.max() < n_options:
            return "index"
    if all(parse_letter(t) is not None for t in texts):
        return "letter"
    return "text"


def _is_category(values: pd.Series) -> bool:
    if values.map(lambda v: isinstance(v, str | int | bool)).all():
        distinct = values.astype(str).nunique()
        return bool(1 < distinct <= max(2, min(50, len(values) // 2)))
    return False


def write_fixture(
    source: Path, frame: pd.DataFrame, target_dir: Path, name: str, split: str = "test"
) -> Path:
    """The first five rows in the source's format (a dataset folder: the hub's parquet layout)."""
    head = frame.head(5)
    if source.is_dir():
        target = target_dir / name / "data" / f"{split}-00000-of-00001.parquet"
        target.parent.mkdir(parents=True, exist_ok=True)
    else:
        target = target_dir / f"{name}{source.suffix.lower()}"
    with atomic_path(target) as tmp:
        _write_like(head, source, tmp)
    return target


def _write_like(frame: pd.DataFrame, source: Path, tmp: Path) -> None:
    suffix = source.suffix.lower()
    if source.is_dir() or suffix in (".parquet", ".pq"):
        frame.to_parquet(tmp, index=False)
    elif suffix in (".tsv", ".tab"):
        frame.to_csv(tmp, sep="\t", index=False)
    elif suffix == ".csv":
        frame.to_csv(tmp, index=False)
    elif suffix in (".jsonl", ".ndjson"):
        frame.to_json(tmp, orient="records", lines=True, force_ascii=False)
    else:
        tmp.write_text(json.dumps(frame.to_dict("records"), ensure_ascii=False, default=str))


def place_source(source: Path, root: Path, name: str) -> str:
    """Copy a source from outside ``data/sources/<name>/`` into it (its own DVC dependency)."""
    tracked = (root / "data" / "sources" / name).resolve()
    if tracked in source.resolve().parents:
        return str(source.resolve().relative_to(root.resolve()))
    target = tracked / source.name
    if target.exists():
        raise SourceError(target, "exists already; remove it or pass a file under data/sources")
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        shutil.copy2(source, target)
    return str(target.relative_to(root.resolve()))


def benchmark_yaml(name: str, path: str, layout: Layout, language: str, split: str | None) -> str:
    """The config text for ``conf/benchmark/<name>.yaml`` (``split`` for a dataset folder)."""
    source: dict[str, Any] = {"kind": "file", "path": path}
    if split is not None:
        source = {"kind": "hf", "path": path, "hf_split": split}
    config = {
        "name": name,
        "version": 1,
        "description": f"Added by `cultureqa benchmark add` from {path}.",
        "source": source,
        "columns": layout.columns,
        "languages": {language: {}},
        "settings": [f"mcq-none-{language}"],
        "slices": [[m] for m in layout.columns["metadata"]],
        "expectations": "expectations/generic_mcq_items.json",
    }
    header = "# Written by `cultureqa benchmark add`; edit freely (README: Add a benchmark).\n"
    return header + yaml.safe_dump(config, sort_keys=False, allow_unicode=True, width=100)


def add_config_entries(config_path: Path, name: str) -> None:
    """Add the defaults entry and the ``evaluate.benchmarks`` entry to ``conf/config.yaml``."""
    text = config_path.read_text(encoding="utf-8")
    entry = f"  - benchmark@benchmarks.{name}: {name}\n"
    if entry not in text:
        last = list(re.finditer(r"^  - benchmark@benchmarks\.\S+: \S+.*\n", text, re.M))
        if not last:
            raise SourceError(config_path, "no 'benchmark@benchmarks.' entry to add after")
        text = text[: last[-1].end()] + entry + text[last[-1].end() :]
    match = re.search(r"^(  benchmarks: \[)([^\]]*)\]", text, re.M)
    if match is None:
        raise SourceError(config_path, "no 'evaluate.benchmarks: [...]' list found")
    names = [n.strip() for n in match.group(2).split(",") if n.strip()]
    if name not in names:
        text = (
            text[: match.start()]
            + f"{match.group(1)}{', '.join([*names, name])}]"
            + text[match.end() :]
        )
    write_text(config_path, text)


def load_for_sniffing(path: Path) -> tuple[pd.DataFrame, str]:
    """The file (or a dataset folder's test, train or validation split) and the split read."""
    if path.is_dir():
        for split in ("test", "train", "validation"):
            try:
                return read_any(path, None, split), split
            except SourceError:
                continue
    return read_any(path), "test"
