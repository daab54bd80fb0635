"""Typed view of ``conf/benchmark/*.yaml``.

Specs arrive as plain dicts from ``params.yaml``; parsing them into frozen dataclasses here means a
typo in a benchmark config fails at start-up with the key that is wrong, not deep inside a run.

A *field* (question, options, answer, id, a metadata value) is one string: a column name, a dotted
path into a nested record (``meta.country``), or a Jinja template over the row
(``"{{ premise }} {{ question }}"``), as lm-eval's ``doc_to_text`` / ``doc_to_choice``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from cultureqa.core.params_digest import DigestError
from cultureqa.core.params_digest import check as check_digest
from cultureqa.core.records import Setting

AnswerFormat = Literal["letter", "index", "text"]
InvalidRows = Literal["error", "drop"]
DuplicateItems = Literal["keep", "drop"]
OptionLabels = Literal["strip", "by_label", "keep"]
Severity = Literal["fail", "report"]
OptionsTransform = Literal["list", "letter_dict", "delimited", "record"]
SourceKind = Literal["file", "hf"]
SOURCE_FORMATS = ("csv", "tsv", "json", "jsonl", "parquet", "hf_disk", "hf_parquet")
TRANSFORMS = ("list", "letter_dict", "delimited", "record")
SCALAR_TYPES = ("bool", "int", "float", "str")
FIXED_FIELDS = ("location_clause", "question", "options", "letters")
"""Prompt placeholders every item fills; metadata names may not reuse them."""
SHUFFLE_FIELDS = ("options_order", "gold_source_position")
"""Metadata a shuffled item carries (``columns.options.shuffle``); slices may name them."""


class SpecError(ValueError):
    """A benchmark config is malformed; the message names the benchmark and key."""


@dataclass(frozen=True)
class SourceSpec:
    """Where the rows come from.

    ``kind: file`` reads ``path``: one file, a glob (``*``), or a pattern whose ``{name}`` parts
    capture metadata from the path (``data/sources/x/{country}/{subcategory}.json``). A directory
    in the Hugging Face layout (``save_to_disk`` or ``data/<split>-*.parquet``) is read offline.
    ``kind: hf`` downloads ``hf_dataset`` from the hub (network, ``pip install datasets``).
    """

    kind: SourceKind
    path: str | None = None
    format: str | None = None
    """csv, tsv, json, jsonl, parquet, hf_disk or hf_parquet; by default from the extension."""
    hf_dataset: str | None = None
    hf_config: str | None = None
    hf_split: str = "test"
    header: Literal["first_row", "none"] = "first_row"
    """``none``: a CSV/TSV file without a header row; ``columns`` names its fields in order."""
    columns: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...] | None:
        """The field names a headerless file is read with; None: its first row names them."""
        return self.columns if self.header == "none" else None


@dataclass(frozen=True)
class SampleSpec:
    """Which rows to keep: the first ``limit``, or a seeded (optionally stratified) sample."""

    limit: int | None = None
    n: int | None = None
    seed: int = 13
    stratify: tuple[str, ...] = ()


@dataclass(frozen=True)
class RowPolicy:
    """Which source rows become items, and what happens to a row that cannot.

    ``keep`` runs first, on the raw row: a Jinja boolean (``"{{ split == 'test' }}"``) or column
    conditions (``{split: test, lang: [id, en]}``); rows it rejects are *skipped* and counted apart.
    A kept row that breaks a loading rule (a repeated option, a missing gold, a blank separator row)
    is an error (``invalid: error``, the default, right for data we generate) or, with
    ``invalid: drop``, left out and listed with its file, row, id and reason; more drops than
    ``max_invalid_share`` of the kept rows fail the run.
    """

    invalid: InvalidRows = "error"
    max_invalid_share: float = 0.05
    keep: str | dict[str, tuple[str, ...]] | None = None
    duplicates: DuplicateItems = "keep"
    """drop: an item repeating an earlier item's question and options (same language) is left
    out, listed with reason ``duplicate_item``; keep: the expectation suite reports it."""


@dataclass(frozen=True)
class TemplateLimits:
    """Bounds on one Jinja render (a field, ``rows.keep``): its output size and its time.

    jinja2's sandbox stops unsafe attribute access but not work: ``{{ 'x' * 10**8 }}`` used to
    pass ``validate`` after 89 s at 7.2 GB. Past either bound the render is an error naming the
    template and the row.
    """

    max_chars: int = 100_000
    max_seconds: float = 1.0


@dataclass(frozen=True)
class LanguageColumns:
    """Field overrides for one language (translations live in sibling columns)."""

    question: str | None = None
    options: str | list[str] | None = None


@dataclass(frozen=True)
class ColumnMap:
    """How source fields become an :class:`~cultureqa.core.records.McqItem`."""

    id: str | None
    """None: ids are synthesized from the benchmark name and the source row."""
    question: str
    options: str | list[str]
    answer: str
    answer_format: AnswerFormat = "letter"
    metadata: tuple[str, ...] = ()
    """Metadata names; each is a column unless ``metadata_fields`` maps it to a path/template."""
    metadata_fields: dict[str, str] = field(default_factory=dict)
    options_transform: OptionsTransform = "list"
    options_sep: str = "|"
    metadata_types: dict[str, str | tuple[str, ...]] = field(default_factory=dict)
    """name → bool/int/float/str or the allowed values; checked on every load."""
    answer_sep: str | None = None
    """Set when a gold cell may name several right answers: a list, or a string split on it."""
    option_counts: tuple[int, ...] = ()
    """Allowed option counts when items differ (4 and 5); trailing empty options are then cut."""
    option_labels: OptionLabels = "strip"
    """strip "A. " labels only when they run A, B, C… in order (labels out of order are an error);
    by_label: order options by their labels and point the gold at its label; keep: leave as is."""
    language: str | None = None
    """Each item's language from a field (a path capture such as ``{lang}``, a column or a
    template); None: every row is one item per declared language (translations in columns)."""
    language_values: dict[str, str] = field(default_factory=dict)
    """Source value → declared language (``Sundanese: su``); unmapped values are used as is."""
    shuffle_seed: int | None = None
    """``options.shuffle: {seed}``: options reordered per item from the seed and the item's id."""


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
    rows: RowPolicy = field(default_factory=RowPolicy)
    normalize_region: bool = False
    description: str = ""
    expectations: str | None = None
    """GX suite (JSON) validating the loaded items; see ``cultureqa.validation``."""
    sample: SampleSpec = field(default_factory=SampleSpec)
    prompt_fallback: dict[str, str] = field(default_factory=dict)
    """language → language whose template it may use; without an entry a missing one is an error."""
    severity: dict[str, Severity] = field(default_factory=dict)
    """expectation type → fail (default) or report: a published dataset's imbalance is a fact
    about it, shown in the report and MLflow, not a reason to refuse evaluating it."""
    template_limits: TemplateLimits = field(default_factory=TemplateLimits)

    @property
    def item_fields(self) -> tuple[str, ...]:
        """Metadata every loaded item carries: the declared names, then the shuffle's record."""
        shuffle = SHUFFLE_FIELDS if self.columns.shuffle_seed is not None else ()
        return (*self.columns.metadata, *shuffle)

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> BenchmarkSpec:
        """Parse a benchmark config mapping, naming the benchmark and key on any error."""
        name = str(cfg.get("name", "<unnamed>"))
        try:
            return _parse(cfg)
        except (KeyError, TypeError, ValueError) as exc:
            raise SpecError(f"benchmark '{name}': {exc}") from exc

    @classmethod
    def from_params(cls, params: Mapping[str, Any], name: str) -> BenchmarkSpec:
        """``benchmarks.<name>`` of the composed params, parsed once its ``digest`` is checked.

        The stages declare only ``benchmarks.<name>.digest`` in ``dvc.yaml``
        (``cultureqa.core.params_digest``): a value edited in params.yaml without recomposing
        would not rerun them, so it is refused here with one line.
        """
        from cultureqa.core.config import select

        cfg = select(params, f"benchmarks.{name}")
        try:
            check_digest(cfg, f"benchmarks.{name}")
        except DigestError as exc:
            raise SpecError(str(exc)) from None
        return cls.from_config(cfg)


_TOP_KEYS = {
    "name", "version", "description", "source", "columns", "languages", "settings", "slices",
    "location", "rows", "normalize_region", "expectations", "limit", "sample",
    "prompt_fallback", "severity", "template_limits", "digest",
}  # fmt: skip
"""``digest`` is the composed config's hash (``cultureqa.core.params_digest``): read by
:meth:`BenchmarkSpec.from_params`, never part of the spec, so it keys no stored load."""
_COLUMN_KEYS = {
    "id", "question", "options", "answer", "answer_format", "metadata", "metadata_types",
    "answer_sep", "option_counts", "option_labels", "language",
}  # fmt: skip


def _parse(cfg: Mapping[str, Any]) -> BenchmarkSpec:
    if "filter_true" in cfg:
        raise ValueError(
            "filter_true was replaced by rows.keep: a Jinja boolean over the row "
            "(\"{{ is_valid }}\") or column conditions ({is_valid: 'True'}); "
            "docs/benchmark-configs.md: Rows"
        )
    _known_keys(cfg, _TOP_KEYS, "")
    languages = {
        str(lang): LanguageColumns(
            question=(over or {}).get("question"),
            options=_options_field((over or {}).get("options"))[0],
        )
        for lang, over in dict(cfg["languages"]).items()
    }
    settings = tuple(Setting.parse(str(s)) for s in cfg["settings"])
    for setting in settings:
        if setting.language not in languages:
            raise ValueError(f"setting '{setting.name}' uses undeclared language")
    columns = _columns(dict(cfg["columns"]))
    if columns.language is not None:
        unevaluated = sorted(set(languages) - {s.language for s in settings})
        if unevaluated:
            raise ValueError(
                f"columns.language gives items their own language, but no setting evaluates "
                f"{unevaluated}; add settings for them (prompt_fallback maps a language to a "
                "template language) or remove them from languages"
            )
    fallback = {str(k): str(v) for k, v in dict(cfg.get("prompt_fallback") or {}).items()}
    loc = dict(cfg.get("location") or {})
    return BenchmarkSpec(
        name=str(cfg["name"]),
        version=int(cfg.get("version", 1)),
        source=_source(dict(cfg["source"])),
        columns=columns,
        languages=languages,
        settings=settings,
        slices=tuple(tuple(s) for s in cfg.get("slices") or ()),
        location=LocationSpec(
            country=dict(loc.get("country") or {}),
            region_column=loc.get("region_column"),
            region_names=loc.get("region_names"),
            clause=dict(loc.get("clause") or {}),
        ),
        rows=_rows(cfg.get("rows")),
        normalize_region=bool(cfg.get("normalize_region", False)),
        description=str(cfg.get("description", "")),
        expectations=cfg.get("expectations"),
        sample=_sample(cfg.get("limit"), cfg.get("sample")),
        prompt_fallback=fallback,
        severity=_severity(cfg.get("severity")),
        template_limits=_template_limits(cfg.get("template_limits")),
    )


def _known_keys(cfg: Mapping[str, Any], known: set[str], where: str) -> None:
    unknown = sorted(set(map(str, cfg)) - known)
    if unknown:
        raise ValueError(f"unknown key(s) {[where + k for k in unknown]}; known: {sorted(known)}")


def _source(src: dict[str, Any]) -> SourceSpec:
    known = {"kind", "path", "format", "hf_dataset", "hf_config", "hf_split", "header", "columns"}
    _known_keys(src, known, "source.")
    if src.get("kind") not in ("file", "hf"):
        raise ValueError(f"source.kind must be 'file' or 'hf', got {src.get('kind')!r}")
    if src["kind"] == "file" and not src.get("path"):
        raise ValueError("source.path is required when source.kind is 'file'")
    if src["kind"] == "hf" and not (src.get("hf_dataset") or src.get("path")):
        raise ValueError("source.hf_dataset (hub) or source.path (local copy) is required")
    if src.get("format") is not None and src["format"] not in SOURCE_FORMATS:
        raise ValueError(f"source.format must be one of {list(SOURCE_FORMATS)}")
    header, names = _header(src)
    return SourceSpec(
        kind=src["kind"],
        path=src.get("path"),
        format=src.get("format"),
        hf_dataset=src.get("hf_dataset"),
        hf_config=src.get("hf_config"),
        hf_split=str(src.get("hf_split", "test")),
        header=header,
        columns=names,
    )


def _header(src: dict[str, Any]) -> tuple[Literal["first_row", "none"], tuple[str, ...]]:
    """``source.header`` (``first_row`` or ``none``) and, for ``none``, the ``source.columns``."""
    header = src.get("header", "first_row")
    if header not in ("first_row", "none"):
        raise ValueError(f"source.header must be 'first_row' or 'none', got {header!r}")
    names = src.get("columns")
    if header == "first_row":
        if names is not None:
            raise ValueError("source.columns names the fields of a file without a header row: "
                             "set source.header: none with it")  # fmt: skip
        return "first_row", ()
    if not isinstance(names, list | tuple) or not names:
        raise ValueError("source.header: none needs source.columns, the file's field names in "
                         "order")  # fmt: skip
    shown = [str(n).strip() for n in names]
    if "" in shown or len(set(shown)) < len(shown):
        raise ValueError(f"source.columns must be distinct non-empty names, got {shown}")
    return "none", tuple(shown)


def _columns(cols: dict[str, Any]) -> ColumnMap:
    _known_keys(cols, _COLUMN_KEYS, "columns.")
    if cols.get("answer_format", "letter") not in ("letter", "index", "text"):
        raise ValueError("columns.answer_format must be letter, index or text")
    options, transform, sep = _options_field(cols["options"])
    shuffle = _shuffle(cols["options"])
    language, language_values = _language(cols.get("language"))
    names, fields = _metadata(cols.get("metadata") or ())
    reserved = sorted(
        set(names) & set(FIXED_FIELDS + (SHUFFLE_FIELDS if shuffle is not None else ()))
    )
    if reserved:
        raise ValueError(f"metadata name(s) {reserved} are reserved prompt fields; rename them")
    types = {str(k): _type_decl(k, v) for k, v in dict(cols.get("metadata_types") or {}).items()}
    labels = cols.get("option_labels", "strip")
    if labels not in ("strip", "by_label", "keep"):
        raise ValueError(f"columns.option_labels must be strip, by_label or keep, got {labels!r}")
    counts = tuple(sorted(int(c) for c in cols.get("option_counts") or ()))
    if any(not 2 <= c <= 10 for c in counts):
        raise ValueError(f"columns.option_counts must be numbers from 2 to 10, got {list(counts)}")
    answer_sep = cols.get("answer_sep")
    if answer_sep is not None and (not isinstance(answer_sep, str) or not answer_sep.strip()):
        raise ValueError(f"columns.answer_sep must be a non-blank string, got {answer_sep!r}")
    unknown = sorted(set(types) - set(names))
    if unknown:
        raise ValueError(f"columns.metadata_types names {unknown}, which are not in metadata")
    return ColumnMap(
        id=None if cols.get("id") in (None, "") else str(cols["id"]),
        question=str(cols["question"]),
        options=options if options is not None else "",
        answer=str(cols["answer"]),
        answer_format=cols.get("answer_format", "letter"),
        metadata=names,
        metadata_fields=fields,
        options_transform=transform,
        options_sep=sep,
        metadata_types=types,
        answer_sep=answer_sep,
        option_counts=counts,
        option_labels=labels,
        language=language,
        language_values=language_values,
        shuffle_seed=shuffle,
    )


def _options_field(value: Any) -> tuple[str | list[str] | None, OptionsTransform, str]:
    """``"col"``, ``[col, col]`` or ``{from: field, transform: …, sep: …}``."""
    if isinstance(value, Mapping):
        _known_keys(value, {"from", "transform", "sep", "shuffle"}, "options.")
        transform = value.get("transform", "list")
        if transform not in TRANSFORMS:
            raise ValueError(f"options.transform must be one of {list(TRANSFORMS)}")
        return _str_or_list(value["from"]), transform, str(value.get("sep", "|"))
    return _str_or_list(value), "list", "|"


def _shuffle(value: Any) -> int | None:
    """``options.shuffle: {seed: 7}`` (seed required: the order must be reproducible)."""
    if not isinstance(value, Mapping) or value.get("shuffle") is None:
        return None
    shuffle = value["shuffle"]
    if not isinstance(shuffle, Mapping):
        raise ValueError(f"options.shuffle must be {{seed: <integer>}}, got {shuffle!r}")
    _known_keys(shuffle, {"seed"}, "options.shuffle.")
    seed = shuffle.get("seed")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"options.shuffle.seed must be an integer, got {seed!r}")
    return seed


def _language(value: Any) -> tuple[str | None, dict[str, str]]:
    """``language: <field>`` or ``language: {from: <field>, values: {source value: code}}``."""
    if value is None:
        return None, {}
    if isinstance(value, Mapping):
        _known_keys(value, {"from", "values"}, "language.")
        if not value.get("from"):
            raise ValueError("columns.language.from must name a field")
        values = {str(k): str(v) for k, v in dict(value.get("values") or {}).items()}
        return str(value["from"]), values
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"columns.language must be a field or {{from, values}}, got {value!r}")
    return value, {}


def _template_limits(value: Any) -> TemplateLimits:
    if value is None:
        return TemplateLimits()
    limits = dict(value)
    _known_keys(limits, {"max_chars", "max_seconds"}, "template_limits.")
    chars = limits.get("max_chars", TemplateLimits.max_chars)
    seconds = limits.get("max_seconds", TemplateLimits.max_seconds)
    if isinstance(chars, bool) or not isinstance(chars, int) or chars < 1:
        raise ValueError(f"template_limits.max_chars must be a positive integer, got {chars!r}")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
        raise ValueError(f"template_limits.max_seconds must be a positive number, got {seconds!r}")
    return TemplateLimits(max_chars=chars, max_seconds=float(seconds))


def _metadata(entries: Any) -> tuple[tuple[str, ...], dict[str, str]]:
    """Metadata list entries: ``name`` (a column) or ``{name: field}`` (path or template)."""
    names: list[str] = []
    fields: dict[str, str] = {}
    for entry in entries:
        if isinstance(entry, Mapping):
            for key, expr in entry.items():
                names.append(str(key))
                fields[str(key)] = str(expr)
        else:
            names.append(str(entry))
    return tuple(names), fields


def _type_decl(name: Any, value: Any) -> str | tuple[str, ...]:
    if isinstance(value, str):
        if value not in SCALAR_TYPES:
            raise ValueError(f"metadata_types.{name} must be one of {list(SCALAR_TYPES)} or a list")
        return value
    return tuple(str(v) for v in value)


def _rows(value: Any) -> RowPolicy:
    if value is None:
        return RowPolicy()
    rows = dict(value)
    _known_keys(rows, {"invalid", "max_invalid_share", "keep", "duplicates"}, "rows.")
    duplicates = rows.get("duplicates", "keep")
    if duplicates not in ("keep", "drop"):
        raise ValueError(f"rows.duplicates must be keep or drop, got {duplicates!r}")
    invalid = rows.get("invalid", "error")
    if invalid not in ("error", "drop"):
        raise ValueError(f"rows.invalid must be error or drop, got {invalid!r}")
    share = rows.get("max_invalid_share", 0.05)
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share < 1:
        raise ValueError(f"rows.max_invalid_share must be a number in [0, 1), got {share!r}")
    keep = rows.get("keep")
    if isinstance(keep, Mapping):
        keep = {
            str(k): tuple(str(x) for x in (v if isinstance(v, list | tuple) else [v]))
            for k, v in keep.items()
        }
    elif keep is not None and not isinstance(keep, str):
        raise ValueError("rows.keep must be a Jinja boolean template or {column: value(s)}")
    return RowPolicy(
        invalid=invalid, max_invalid_share=float(share), keep=keep, duplicates=duplicates
    )


def _severity(value: Any) -> dict[str, Severity]:
    found: dict[str, Severity] = {}
    for key, level in dict(value or {}).items():
        if level not in ("fail", "report"):
            raise ValueError(f"severity.{key} must be fail or report, got {level!r}")
        found[str(key)] = level
    return found


def _sample(limit: Any, sample: Any) -> SampleSpec:
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a positive integer, got {limit!r}")
    if sample is None:
        return SampleSpec(limit=limit)
    sample = dict(sample)
    _known_keys(sample, {"n", "seed", "stratify"}, "sample.")
    n = sample.get("n")
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"sample.n must be a positive integer, got {n!r}")
    return SampleSpec(
        limit=limit,
        n=n,
        seed=int(sample.get("seed", 13)),
        stratify=tuple(str(s) for s in sample.get("stratify") or ()),
    )


def _str_or_list(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    return [str(v) for v in value]
