"""Ingest on files in the published IndoCulture layout (Indonesian only) and on bad rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from cultureqa.benchmarks.load import load_benchmark
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.io import SourceError
from cultureqa.knowledge.provinces import load_knowledge_base
from cultureqa.mocqa_build.clues import ClueGenerator
from cultureqa.mocqa_build.expand import expand_template
from cultureqa.mocqa_build.ingest import ingest
from cultureqa.mocqa_build.templates import load_templates

ROWS = [
    {
        "id": "x1",
        "province": "Sumatera Utara",
        "topic": "Wedding",
        "is_province_specific": "True",
        "context": "Dalam pesta pernikahan adat, orang tua pengantin menyelimutkan selembar",
        "options": "['A. kain songket', 'B. kain tapis', 'C. kain ulos']",
        "answer": "C",
    },
    {
        "id": "x2",
        "province": "Jawa Barat",
        "topic": "Art",
        "is_province_specific": "False",
        "context": "Permainan tradisional anak-anak disebut",
        "options": "['A. congklak', 'B. egrang', 'C. gasing']",
        "answer": "A",
    },
    {
        "id": "x3",
        "province": "Bali",
        "topic": "Death",
        "is_province_specific": "True",
        "context": "Jenazah umat Hindu disucikan melalui upacara kremasi yang disebut",
        "options": "['A. ngaben', \"B. rambu solo'\", 'C. saur matua']",
        "answer": "A",
    },
]


def _spec(path: Path, params: dict[str, Any]) -> BenchmarkSpec:
    cfg = dict(params["benchmarks"]["indoculture"])
    cfg["source"] = {"kind": "file", "path": str(path)}
    return BenchmarkSpec.from_config(cfg)


@pytest.fixture(scope="module")
def params(tmp_path_factory: pytest.TempPathFactory, mocqa_helpers) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    return mocqa_helpers["compose"](tmp_path_factory.mktemp("conf"))


def test_indonesian_only_source_gives_empty_english_side(
    tmp_path: Path, params, mocqa_helpers
) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "indoculture.csv"
    pd.DataFrame(ROWS).to_csv(path, index=False)
    spec = _spec(path, params)
    result = ingest(spec, load_benchmark(spec, tmp_path, languages=("id", "en"), absent="skip"))
    assert list(result.items["source_id"]) == ["x1", "x3"]
    assert list(result.items["province"]) == ["North Sumatra", "Bali"]  # names normalised
    assert result.metrics["languages_in_source"] == ["id"]
    assert (result.items["context_en"] == "").all()
    root = mocqa_helpers["root"]
    generator = ClueGenerator(
        load_knowledge_base(),
        load_templates((root / "data/knowledge/clue_templates.yaml").resolve()),
    )
    expanded = expand_template(result.items, generator)
    assert expanded.metrics["kept"] == 2 * 6 and expanded.metrics["removed"] == 2 * 6
    assert set(expanded.removed["reason"]) == {"no en source text"}
    only_id = expand_template(result.items, generator, languages=("id",))
    assert only_id.metrics["input"] == only_id.metrics["kept"] == 12


def test_bad_rows_name_file_row_and_column(tmp_path: Path, params) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "bad.csv"
    rows = [dict(r) for r in ROWS]
    rows[1]["province"] = "Atlantis"
    pd.DataFrame(rows).to_csv(path, index=False)
    spec = _spec(path, params)
    with pytest.raises(SourceError, match=r"row 2, column 'province'.*Atlantis"):
        ingest(spec, load_benchmark(spec, tmp_path, languages=("id", "en"), absent="skip"))
    pd.DataFrame(ROWS).drop(columns=["is_province_specific"]).to_csv(path, index=False)
    with pytest.raises(SourceError, match="is_province_specific"):
        ingest(spec, load_benchmark(spec, tmp_path, languages=("id", "en"), absent="skip"))


def _bilingual(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {**r, "context_en": f"English {r['id']}", "options_en": "['A. a', 'B. b', 'C. c']"}
        for r in rows
    ]


def test_an_item_lacking_english_is_dropped_with_its_reason_not_kept_empty(
    tmp_path: Path, params
) -> None:  # type: ignore[no-untyped-def]
    rows = _bilingual(ROWS)
    rows[2]["context_en"] = ""  # x3: Indonesian fine, English empty
    path = tmp_path / "both.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    cfg = dict(params["benchmarks"]["indoculture"])
    cfg.update(source={"kind": "file", "path": str(path)}, rows={"invalid": "error"})
    spec = BenchmarkSpec.from_config(cfg)
    with pytest.raises(SourceError, match=r"row 3, column 'context_en': empty value"):
        load_benchmark(spec, tmp_path, languages=("id", "en"), absent="skip")
    cfg["rows"] = {"invalid": "drop", "max_invalid_share": 0.5}
    spec = BenchmarkSpec.from_config(cfg)
    result = ingest(spec, load_benchmark(spec, tmp_path, languages=("id", "en"), absent="skip"))
    assert list(result.items["source_id"]) == ["x1"]  # x2 general, x3 without English
    assert (result.items["context_en"] != "").all()
    assert result.metrics["removed_by_reason"] == {
        "no usable en text (empty_question)": 1,
        "not province-specific": 1,
    }
    assert result.metrics["load"]["rows_loaded"] == 2


def test_a_declared_sample_is_drawn_from_valid_rows(tmp_path: Path, params) -> None:  # type: ignore[no-untyped-def]
    rows = []
    for n in range(12):
        row = dict(ROWS[n % 3], id=f"s{n}")
        rows.append(row)
    for n in (1, 4, 7):
        rows[n]["answer"] = "Z"  # invalid: dropped before sampling
    path = tmp_path / "many.csv"
    pd.DataFrame(_bilingual(rows)).to_csv(path, index=False)
    cfg = dict(params["benchmarks"]["indoculture"])
    cfg.update(
        source={"kind": "file", "path": str(path)},
        rows={"invalid": "drop", "max_invalid_share": 0.3},
        sample={"n": 8, "seed": 5},
    )
    spec = BenchmarkSpec.from_config(cfg)
    loaded = load_benchmark(spec, tmp_path, languages=("id", "en"), absent="skip")
    assert len(loaded.items["id"]) == len(loaded.items["en"]) == 8  # 8 asked, 8 valid
    result = ingest(spec, loaded)
    assert result.metrics["sampled"] is True
    assert result.metrics["load"]["rows_dropped"] == 3
    metrics = result.metrics
    assert metrics["input"] == metrics["kept"] + metrics["removed"] == 12  # every row counted
    assert metrics["removed_by_reason"]["not in the declared sample"] == 1
