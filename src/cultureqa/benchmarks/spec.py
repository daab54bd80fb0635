"""Typed view of ``conf/benchmark/*.yaml``.

Specs arrive as plain dicts from ``params.yaml``; parsing them into frozen dataclasses here means a
typo in a benchmark config fails at start-up with the key that is wrong, not deep inside a run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from cultureqa.records import Setting

AnswerFormat = Literal["letter", "index", "text"]


class SpecError(ValueError):
    """A benchmark config is malformed; the message names the benchmark and key."""


@dataclass(frozen=True)
class SourceSpec:
    """Where the rows come from: a local file, or a Hugging Face dataset (needs network)."""

    kind: Literal["file", "hf"]
    path: str | None = None
    hf_dataset: str | None = None
    hf_config: str | None = None
    hf_split: str = "test"


@dataclass(frozen=True)
class LanguageColumns:
    """Column overrides for one language (translations live in sibling columns)."""

    question: str | None = None
    options: str | list[str] | None = None


@dataclass(frozen=True)
class ColumnMap:
    """How source columns become an :class:`~cultureqa.records.McqItem`."""

    id: str
    question: str
    options: str | list[str]
    answer: str
    answer_format: AnswerFormat = "letter"
    metadata: tuple[str, ...] = ()


@dataclass(frozen=True)
class LocationSpec:
    """Location context: the country and, optionally, a per-row region column."""

    country: dict[str, str] = field(default_factory=dict)
    region_column: str | None = None
    region_names: str | None = None
    clause: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class BenchmarkSpec:
    """A complete benchmark declaration."""

    name: str
    version: int
    source: SourceSpec
    columns: ColumnMap
    languages: dict[str, LanguageColumns]
    settings: tuple[Setting, ...]
    slices: tuple[tuple[str, ...], ...] = ()
    location: LocationSpec = field(default_factory=LocationSpec)
    filter_true: str | None = None
    normalize_region: bool = False
    description: str = ""
    expectations: str | None = None
    """GX suite (JSON) validating the loaded items; see ``cultureqa.validation``."""

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> BenchmarkSpec:
        """Parse a benchmark config mapping, naming the benchmark and key on any error."""
        name = str(cfg.get("name", "<unnamed>"))
        try:
            return _parse(cfg)
        except (KeyError, TypeError, ValueError) as exc:
            raise SpecError(f"benchmark '{name}': {exc}") from exc


def _parse(cfg: Mapping[str, Any]) -> BenchmarkSpec:
    src = dict(cfg["source"])
    if src.get("kind") not in ("file", "hf"):
        raise ValueError(f"source.kind must be 'file' or 'hf', got {src.get('kind')!r}")
    if src["kind"] == "file" and not src.get("path"):
        raise ValueError("source.path is required when source.kind is 'file'")
    cols = dict(cfg["columns"])
    if cols.get("answer_format", "letter") not in ("letter", "index", "text"):
        raise ValueError("columns.answer_format must be letter, index or text")
    columns = ColumnMap(
        id=cols["id"],
        question=cols["question"],
        options=_str_or_list(cols["options"]),
        answer=cols["answer"],
        answer_format=cols.get("answer_format", "letter"),
        metadata=tuple(cols.get("metadata") or ()),
    )
    languages = {
        str(lang): LanguageColumns(
            question=(over or {}).get("question"),
            options=_str_or_list((over or {}).get("options")),
        )
        for lang, over in dict(cfg["languages"]).items()
    }
    settings = tuple(Setting.parse(str(s)) for s in cfg["settings"])
    for setting in settings:
        if setting.language not in languages:
            raise ValueError(f"setting '{setting.name}' uses undeclared language")
    loc = dict(cfg.get("location") or {})
    location = LocationSpec(
        country=dict(loc.get("country") or {}),
        region_column=loc.get("region_column"),
        region_names=loc.get("region_names"),
        clause=dict(loc.get("clause") or {}),
    )
    return BenchmarkSpec(
        name=str(cfg["name"]),
        version=int(cfg.get("version", 1)),
        source=SourceSpec(
            kind=src["kind"],
            path=src.get("path"),
            hf_dataset=src.get("hf_dataset"),
            hf_config=src.get("hf_config"),
            hf_split=str(src.get("hf_split", "test")),
        ),
        columns=columns,
        languages=languages,
        settings=settings,
        slices=tuple(tuple(s) for s in cfg.get("slices") or ()),
        location=location,
        filter_true=cfg.get("filter_true"),
        normalize_region=bool(cfg.get("normalize_region", False)),
        description=str(cfg.get("description", "")),
        expectations=cfg.get("expectations"),
    )


def _str_or_list(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    return [str(v) for v in value]
