"""Single-hop source questions of a region set, in one shape whatever their origin.

Three readers, chosen by ``source.reader`` in the region set, none tied to a region:

* ``case_bank``: the cross-cultural case bank (``case_bank.csv`` + the constructed items JSONL);
  the narrative is the context, the item's six typed options are kept (type F correct), the
  country column is matched to the regions table by name or alias.
* ``jsonl``: one JSON object a line with ``source_id, region, language, context, question`` and
  ``options`` (types ``A``…``F``, ``F`` correct): what a new region set provides.

Output columns: :data:`SOURCE_COLUMNS`. A row whose region is not in the table is an error naming
file and row; nothing is dropped silently.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.cases.construct import CORRECT_TYPE, TYPES, validate_item
from cultureqa.cases.ingest import load_cases
from cultureqa.core.io import SourceError
from cultureqa.regions.generation.tables import Region
from cultureqa.regions.sources.benchmark import benchmark_rows

TYPE_COLUMNS = tuple(f"type_{t}" for t in TYPES)
SOURCE_COLUMNS = (
    "source_id", "region", "language", "context", "question", "options", "answer", "topic",
)  # fmt: skip
READERS = ("case_bank", "jsonl", "benchmark")


@dataclass
class Sources:
    """The set's source rows, and the rows of its source left out, counted by reason."""

    frame: pd.DataFrame
    dropped: Counter[str] = field(default_factory=Counter)


def _region_index(regions: Mapping[str, Region]) -> dict[str, str]:
    """Lower-cased id, names and aliases → region id.

    A name or alias that two regions share is no key (a package's translation may give one
    country another's English name: Guarani ``Mexico`` for Malaysia); the regions table's own
    names and ids always are, and win.
    """
    index: dict[str, str] = {}
    shared: set[str] = set()
    for region in regions.values():
        for term in region.terms:
            if term.kind in ("name", "alias"):
                key = term.text.lower()
                if index.setdefault(key, region.id) != region.id:
                    shared.add(key)
    for key in shared:
        del index[key]
    for region in regions.values():
        index[region.id.lower()] = region.id
        for name in region.names.values():
            index[name.lower()] = region.id
    return index


def _json_lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    if not path.exists():
        raise SourceError(path, "source items not found")
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SourceError(path, f"not JSON ({exc.msg})", number) from None
        if not isinstance(record, dict):
            raise SourceError(path, "not a JSON object", number)
        out.append((number, record))
    return out


def _typed(path: Path, row: int, source_id: str, options: Any) -> dict[str, Any]:
    """Six typed options in type order, the correct type's letter the answer."""
    try:
        item = validate_item(source_id, {"question": "?", "options": options})
    except ValueError as exc:
        raise SourceError(path, str(exc), row, "options") from None
    return {"options": [item.options[t] for t in TYPES], "answer": CORRECT_TYPE}


def reader_of(source: Mapping[str, Any]) -> str:
    """The declared reader; ``source: {benchmark: <name>}`` alone means the benchmark reader."""
    return str(source.get("reader") or ("benchmark" if source.get("benchmark") else ""))


def load_source(
    source: Mapping[str, Any], regions: Mapping[str, Region], root: Path, languages: tuple[str, ...]
) -> Sources:
    """The set's source questions as :data:`SOURCE_COLUMNS` rows, and what was left out."""
    reader = reader_of(source)
    index = _region_index(regions)
    rows: list[dict[str, Any]] = []
    dropped: Counter[str] = Counter()
    if reader == "benchmark":
        config = source.get("config")
        if not isinstance(config, Mapping):
            raise SourceError(
                "region set source", f"benchmark '{source.get('benchmark')}' is not configured"
            )
        read = benchmark_rows(config, source, index, root, languages)
        rows, dropped = read.rows, read.dropped
        for lang in read.languages_absent:
            dropped[f"no {lang} columns in the source"] += len({r["source_id"] for r in rows})
    elif reader == "case_bank":
        cases = load_cases(root / str(source["cases"]))
        column = str(source.get("region_column", "country"))
        by_id = {str(r["case_id"]): r for r in cases.to_dict("records")}
        path = root / str(source["items"])
        for row, record in _json_lines(path):
            cid = str(record.get("case_id", ""))
            case = by_id.get(cid)
            if case is None:
                raise SourceError(path, f"case '{cid}' is not in the case bank", row, "case_id")
            rid = index.get(str(case[column]).strip().lower())
            if rid is None:
                raise SourceError(path, f"'{case[column]}' is not a region of the set", row, column)
            rows.append(
                {
                    "source_id": cid, "region": rid, "language": languages[0],
                    "context": str(case["narrative"]), "question": str(record.get("question", "")),
                    **_typed(path, row, cid, record.get("options")), "topic": str(case["domain"]),
                }
            )  # fmt: skip
    elif reader == "jsonl":
        path = root / str(source["items"])
        for row, record in _json_lines(path):
            sid = str(record.get("source_id", ""))
            rid = index.get(str(record.get("region", "")).strip().lower())
            if rid is None:
                raise SourceError(path, f"'{record.get('region')}' is not a region", row, "region")
            language = str(record.get("language", languages[0]))
            if language not in languages:
                raise SourceError(
                    path, f"language '{language}' not in {languages}", row, "language"
                )
            rows.append(
                {
                    "source_id": sid, "region": rid, "language": language,
                    "context": str(record.get("context", "")),
                    "question": str(record.get("question", "")),
                    **_typed(path, row, sid, record.get("options")),
                    "topic": str(record.get("topic", "")),
                }
            )  # fmt: skip
    else:
        raise SourceError("region set source", f"unknown reader '{reader}' {READERS}")
    frame = pd.DataFrame(rows, columns=list(SOURCE_COLUMNS))
    dupes = frame.duplicated(["source_id", "language"])
    if dupes.any():
        raise SourceError(
            "region set source", f"repeated source ids {sorted(frame[dupes].source_id)}"
        )
    return Sources(frame, dropped)
