"""A region set as configuration (docs/region-sets.md §2): parsed once, every key named on error.

The two-hop method needs to know, per set, which regions exist and what gives each away (names,
demonyms, capitals, leak terms), over which universe a clue must be unique, which tables prove
it, and in which words a clue is written. None of that is code: a new set is a YAML file under
``conf/region_set/`` and the files it points at.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cultureqa.core.params_digest import KEY, DigestError
from cultureqa.core.params_digest import check as check_digest

GENERATED_TYPES = (
    "comparison", "intersection", "geographical", "entity", "temporal", "commonsense",
)  # fmt: skip
"""Clue types the engine proves from tables; the others need a generator (not offline).

Comparison and intersection come from indicators; geographical, entity, temporal and
commonsense from categories and named facts whose ``clue_type`` is that type (at least one must
exist: a commonsense clue needs a set whose facts table holds practices, such as the dishes one
is served and the ceremonies one witnesses in a province)."""
NAMED_TYPES = ("geographical", "entity", "temporal", "commonsense")
READERS = ("long", "wide_years", "excel", "membership", "facts")
FORMATS = ("case", "statement")
"""Item formats (docs/twohop-engine.md §1): ``case`` (a scenario, its question and six typed
options, the clue sentence opening the scenario) or ``statement`` (a sentence stem completed by
one of N options, the clue sentence and the set's frame opening the question)."""
MULTI_READERS = ("membership", "facts")
"""Readers whose regions may hold several values (a country's several languages)."""


class RegionSetError(ValueError):
    """A region-set config is incomplete or inconsistent; the message names set and key."""


def _need(section: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in section or section[key] is None:
        raise RegionSetError(f"region set {where}: missing key '{key}'")
    return section[key]


def _fact_categories(raw: Mapping[str, Any] | None, root: Path, name: str) -> tuple[Any, ...]:
    """``facts: {file, id_column, kinds: {kind: {clue_type, phrase, values?, value_is_region?}}}``.

    The named-fact table (``region,fact,value,source,source_version,year``) is one file; each
    declared fact kind becomes a category read from its rows, so a clue's facts are proved over
    the universe exactly as classifications are.
    """
    if not raw:
        return ()
    where = f"{name}.facts"
    out = []
    for kind, spec in dict(_need(raw, "kinds", where)).items():
        here = f"{where}.kinds.{kind}"
        clue_type = str(_need(spec, "clue_type", here))
        if clue_type not in NAMED_TYPES:
            raise RegionSetError(f"region set {here}: clue_type '{clue_type}' not in {NAMED_TYPES}")
        table = TableSpec.parse(
            {
                "id": str(kind), "file": _need(raw, "file", where), "reader": "facts",
                "id_column": raw.get("id_column") or "iso3", "value_column": "value",
                "filter": {"fact": str(kind)}, "values": spec.get("values") or (),
            },
            root, where,
        )  # fmt: skip
        out.append(
            Category(
                table,
                dict(_need(spec, "phrase", here)),
                clue_type,
                bool(spec.get("value_is_region", False)),
            )
        )
    return tuple(out)


def _scrub_limit(raw: Mapping[str, Any] | None, where: str) -> tuple[tuple[str, ...], int] | None:
    """``scrub_limit: {kinds: [...], max_terms: N}`` (optional)."""
    if not raw:
        return None
    return tuple(str(k) for k in _need(raw, "kinds", where)), int(_need(raw, "max_terms", where))


def _universe(raw: Any, where: str) -> tuple[str, tuple[str, ...]] | None:
    """``universe: {column, values}`` (optional; other keys of ``universe`` are ignored)."""
    if not isinstance(raw, Mapping) or "column" not in raw:
        return None
    values = tuple(str(v) for v in _need(raw, "values", where))
    if not values:
        raise RegionSetError(f"region set {where}: 'values' is empty")
    return str(raw["column"]), values


def _leak_table(regions: Mapping[str, Any], root: Path, where: str) -> dict[str, Any]:
    """``regions.leak_table: {file, id_column}`` (optional) as RegionColumns fields."""
    raw = regions.get("leak_table")
    if not raw:
        return {}
    return {
        "leak_table": root / str(_need(raw, "file", f"{where}.leak_table")),
        "leak_id_column": str(raw.get("id_column") or "iso3"),
        "frame_terms": tuple(str(t) for t in raw.get("frame_terms") or ()),
    }


_FORMAT_KEYS: dict[str, tuple[str, ...]] = {"case": (), "statement": ("statement",)}
"""Template keys each item format needs besides the clue types, ``frame`` and ``oracle``."""


def _source(raw: dict[str, Any], benchmarks: Mapping[str, Any] | None, name: str) -> dict[str, Any]:
    """``source`` with its format decided and a named benchmark's config resolved (``config``)."""
    where = f"region set {name}.source"
    bench = raw.get("benchmark")
    fmt = str(raw.get("format") or ("statement" if bench else "case"))
    if fmt not in FORMATS:
        raise RegionSetError(f"{where}.format: '{fmt}' is not one of {FORMATS}")
    out = {**raw, "format": fmt}
    if bench and not isinstance(raw.get("config"), Mapping) and benchmarks is not None:
        # without the benchmarks params (reading the tables alone) the source stays unresolved;
        # reading it then fails with one line (source.load_source)
        if str(bench) not in benchmarks:
            raise RegionSetError(f"{where}.benchmark: no benchmark '{bench}' in benchmarks")
        out["config"] = dict(benchmarks[str(bench)])
    return out


def _check_benchmark_digest(
    raw: Mapping[str, Any], config: Mapping[str, Any], where: str, bench: str
) -> None:
    """The benchmark's digest is its values', and the set carries it as ``benchmark_digest``.

    The twohop stages declare only ``region_sets.<set>.digest`` in ``dvc.yaml``; the set's
    ``source.benchmark_digest: ${benchmarks.${.benchmark}.digest}`` makes that digest follow the
    benchmark's values too, so an override of the benchmark reruns exactly the sets that read it.
    """
    try:
        check_digest(config, f"benchmarks.{bench}")
    except DigestError as exc:
        raise RegionSetError(str(exc)) from None
    carried, want = raw.get("benchmark_digest"), config.get(KEY)
    if carried != want:
        raise RegionSetError(
            f"params.yaml {where}.benchmark_digest: {carried}, but benchmarks.{bench}.digest is "
            f"{want}; declare `benchmark_digest: ${{benchmarks.${{.benchmark}}.digest}}` in the "
            "set's source and run `make params`"
        )


@dataclass(frozen=True)
class TableSpec:
    """Where one table lives and how to read it (one of :data:`READERS`)."""

    id: str
    file: Path
    reader: str
    id_column: str
    value_column: str = ""
    year: int | None = None
    sheet: str | None = None
    skiprows: int = 0
    column_pattern: str = "{year}"
    """``wide_years``: the value column's name from the year (``gnipc_{year}`` for the HDR)."""
    filter: Mapping[str, Any] = field(default_factory=dict)
    values: tuple[str, ...] = ()
    """``membership``: the groups kept (all when empty)."""

    @classmethod
    def parse(cls, raw: Mapping[str, Any], root: Path, where: str) -> TableSpec:
        """One table entry; an unknown reader or a reader's missing key fails here."""
        tid = str(_need(raw, "id", where))
        here = f"{where}.{tid}"
        reader = str(_need(raw, "reader", here))
        if reader not in READERS:
            raise RegionSetError(f"region set {here}: reader '{reader}' is not one of {READERS}")
        year = raw.get("year")
        if reader == "wide_years" and year is None:
            raise RegionSetError(f"region set {here}: reader wide_years needs 'year'")
        return cls(
            id=tid,
            file=root / str(_need(raw, "file", here)),
            reader=reader,
            id_column=str(_need(raw, "id_column", here)),
            value_column=str(raw.get("value_column") or ""),
            year=None if year is None else int(year),
            sheet=raw.get("sheet"),
            skiprows=int(raw.get("skiprows") or 0),
            column_pattern=str(raw.get("column_pattern") or "{year}"),
            filter=dict(raw.get("filter") or {}),
            values=tuple(str(v) for v in raw.get("values") or ()),
        )


@dataclass(frozen=True)
class Indicator:
    """A numeric table: what comparison and intersection clues are computed from."""

    table: TableSpec
    label: Mapping[str, str]
    unit: str
    thresholds: tuple[float, ...]
    min_gap_share: float
    decimals: int


@dataclass(frozen=True)
class Category:
    """A categorical table (one value per region, or memberships), or one kind of named fact."""

    table: TableSpec
    phrase: Mapping[str, Any]
    """Per language, the condition's words with ``{value}`` (``in {value}``), or a mapping of
    value → words (``{"true": "lying wholly on islands", "false": "not lying wholly …"}``)."""
    clue_type: str
    """The named clue type its facts support (geographical, entity, temporal), or '' (scopes)."""
    value_is_region: bool = False
    """The value is a region id of the set (a neighbour), written as that region's name."""

    @property
    def geographical(self) -> bool:
        """A geographical fact: a scope for any named clue, the type of geographical clues."""
        return self.clue_type == "geographical"


@dataclass(frozen=True)
class RegionColumns:
    """The regions table: id, a name column per language, the leak-term columns."""

    file: Path
    id: str
    names: Mapping[str, str]
    aliases: str
    demonyms: str
    capitals: str
    leak_terms: str
    leak_table: Path | None = None
    """The leak-term table (``iso3,term,kind,lang,source,source_version``), when the set has one."""
    leak_id_column: str = "iso3"
    frame_terms: tuple[str, ...] = ()
    """Leak-table terms that describe the source's own frame (the case bank's protagonists are
    Chinese: ``Chinese`` names them, not the country whose language it also is): kept in the
    text, never a leak, recorded."""


@dataclass(frozen=True)
class RegionSet:
    """Everything the generic two-hop build needs to know about one set of regions."""

    name: str
    noun: Mapping[str, str]
    languages: tuple[str, ...]
    regions: RegionColumns
    indicators: tuple[Indicator, ...]
    categories: tuple[Category, ...]
    groups: tuple[str, ...]
    """Categories whose value scopes comparisons and intersections ("in region R")."""
    clue_types: tuple[str, ...]
    not_generated: Mapping[str, str]
    templates: Mapping[str, Mapping[str, str]]
    replacements: Mapping[str, Mapping[str, str]]
    min_condition_holders: int
    source: Mapping[str, Any]
    coverage: Mapping[str, float] = field(default_factory=dict)
    """The bar the card measures the build against: min_items, min_regions, min_type_share."""
    scrub_limit: tuple[tuple[str, ...], int] | None = None
    """``scrub_limit: {kinds, max_terms}``: an item whose text lost more than ``max_terms`` terms
    of these kinds (the region's own practices, peoples…) is removed: what is left no longer
    reads as the scenario the source wrote ("colleagues called a local custom")."""
    universe: tuple[str, tuple[str, ...]] | None = None
    """``universe: {column, values}``: the regions a clue must single out one of are the rows of
    the regions table whose ``column`` holds one of ``values`` (a set may name regions created
    after the map its figures and claims use); all regions when absent."""
    clue_may_name: tuple[str, ...] = ()
    """Leak-term kinds a clue may state (a language, a currency): the facts the first hop is
    resolved from. The scenario, question and options may name none of them."""
    item_format: str = "case"
    """One of :data:`FORMATS`: ``source.format``; a benchmark source is ``statement`` unless it
    says otherwise."""

    def category(self, cid: str) -> Category:
        """The category named ``cid`` (every group is one)."""
        for c in self.categories:
            if c.table.id == cid:
                return c
        raise RegionSetError(f"region set {self.name}: no category '{cid}'")

    @classmethod
    def selected(cls, params: Mapping[str, Any], root: Path, name: str | None = None) -> RegionSet:
        """The set ``name`` (default ``twohop.region_set``) from the composed params."""
        name = str(params["twohop"]["region_set"] if name is None else name)
        sets = params.get("region_sets") or {}
        if name not in sets:
            raise RegionSetError(f"twohop.region_set: no region set '{name}' in region_sets")
        try:  # the stages declare only the digest in dvc.yaml: it must be the values'
            check_digest(sets[name], f"region_sets.{name}")
        except DigestError as exc:
            raise RegionSetError(str(exc)) from None
        source, benchmarks = sets[name].get("source") or {}, params.get("benchmarks") or {}
        if source.get("benchmark") in benchmarks:  # an unknown one fails in from_params
            bench = str(source["benchmark"])
            _check_benchmark_digest(source, benchmarks[bench], f"region_sets.{name}.source", bench)
        return cls.from_params(sets[name], root, params.get("benchmarks"))

    @classmethod
    def from_params(
        cls,
        raw: Mapping[str, Any],
        root: Path,
        benchmarks: Mapping[str, Any] | None = None,
    ) -> RegionSet:
        """Parse ``region_sets.<name>``; unprovable clue types must be declared not generated.

        ``benchmarks`` (the composed ``benchmarks`` params) resolves ``source.benchmark``.
        """
        name = str(_need(raw, "name", "?"))
        languages = tuple(str(x) for x in _need(raw, "languages", name))
        regions = dict(_need(raw, "regions", name))
        names = dict(_need(regions, "names", f"{name}.regions"))
        if missing := [lang for lang in languages if lang not in names]:
            raise RegionSetError(f"region set {name}.regions.names: no column for {missing}")
        columns = RegionColumns(
            file=root / str(_need(regions, "file", f"{name}.regions")),
            id=str(_need(regions, "id", f"{name}.regions")),
            names=names,
            aliases=str(regions.get("aliases") or ""),
            demonyms=str(regions.get("demonyms") or ""),
            capitals=str(regions.get("capitals") or ""),
            leak_terms=str(regions.get("leak_terms") or ""),
            **_leak_table(regions, root, f"{name}.regions"),
        )
        indicators = tuple(
            Indicator(
                TableSpec.parse(i, root, f"{name}.indicators"),
                dict(_need(i, "label", f"{name}.indicators")),
                str(i.get("unit") or ""),
                tuple(float(t) for t in _need(i, "thresholds", f"{name}.indicators")),
                float(_need(i, "min_gap_share", f"{name}.indicators")),
                int(i.get("decimals") or 0),
            )
            for i in raw.get("indicators") or ()
        )
        categories = tuple(
            Category(
                TableSpec.parse(c, root, f"{name}.categories"),
                dict(_need(c, "phrase", f"{name}.categories")),
                "geographical" if c.get("geographical", False) else "",
            )
            for c in raw.get("categories") or ()
        ) + _fact_categories(raw.get("facts"), root, name)
        clue_types = tuple(str(x) for x in _need(raw, "clue_types", name))
        not_generated = {str(k): str(v) for k, v in dict(raw.get("not_generated") or {}).items()}
        if bad := [c for c in clue_types if c not in GENERATED_TYPES]:
            raise RegionSetError(
                f"region set {name}.clue_types: {bad} cannot be proved from tables offline "
                f"(generated: {GENERATED_TYPES}); declare them under not_generated with the reason"
            )
        if unbacked := [
            c
            for c in clue_types
            if c in NAMED_TYPES and not any(k.clue_type == c for k in categories)
        ]:
            raise RegionSetError(
                f"region set {name}.clue_types: no category or fact kind supports {unbacked}; "
                "declare them under not_generated with the reason"
            )
        templates = {str(k): dict(v) for k, v in dict(_need(raw, "templates", name)).items()}
        source = _source(dict(_need(raw, "source", name)), benchmarks, name)
        for lang in languages:
            for ctype in (*clue_types, "frame", "oracle", *_FORMAT_KEYS[source["format"]]):
                if ctype not in templates.get(lang, {}):
                    raise RegionSetError(f"region set {name}.templates.{lang}: no '{ctype}'")
        out = cls(
            name=name,
            noun=dict(_need(raw, "noun", name)),
            languages=languages,
            regions=columns,
            indicators=indicators,
            categories=categories,
            groups=tuple(str(g) for g in _need(raw, "groups", name)),
            clue_types=clue_types,
            not_generated=not_generated,
            templates=templates,
            replacements={
                str(k): dict(v) for k, v in dict(_need(raw, "replacements", name)).items()
            },
            min_condition_holders=int(raw.get("min_condition_holders") or 3),
            source=source,
            item_format=str(source["format"]),
            clue_may_name=tuple(str(k) for k in raw.get("clue_may_name") or ()),
            scrub_limit=_scrub_limit(raw.get("scrub_limit"), f"{name}.scrub_limit"),
            coverage={str(k): float(v) for k, v in dict(raw.get("coverage") or {}).items()},
            universe=_universe(raw.get("universe"), f"{name}.universe"),
        )
        for group in out.groups:
            out.category(group)  # every scope category must exist
        return out


def set_dirs(twohop: Mapping[str, Any], name: str) -> tuple[str, str]:
    """One set's build and metrics folders: ``<paths.build>/<set>``, ``<paths.metrics>/<set>``.

    Every set is its own DVC stage (``twohop_build@<set>``), so each writes its own folder.
    """
    paths = twohop["paths"]
    return f"{paths['build']}/{name}", f"{paths['metrics']}/{name}"
