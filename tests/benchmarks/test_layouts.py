"""Each source layout loads by config alone, with the values the layout means (not just any)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from omegaconf import OmegaConf

from cultureqa.benchmarks.checks import check_templates, load_checked
from cultureqa.benchmarks.fields import options_from
from cultureqa.benchmarks.sources import sample_record, source_provenance
from cultureqa.benchmarks.spec import BenchmarkSpec, SpecError
from cultureqa.core.io import SourceError
from cultureqa.core.records import McqItem, Setting
from cultureqa.evaluation.prompts import Template, TemplateError
from cultureqa.evaluation.runner import SettingPlan, render_prompt

ROOT = Path(__file__).resolve().parents[2]


def _spec(name: str, **over: Any) -> BenchmarkSpec:
    raw: Any = OmegaConf.to_container(OmegaConf.load(ROOT / f"conf/benchmark/{name}.yaml"))
    raw.update(over)
    return BenchmarkSpec.from_config(raw)


def _items(name: str, **over: Any) -> list[McqItem]:
    loaded = load_checked(_spec(name, **over), ROOT)
    return loaded.items["en"]


def test_nested_record_options_and_dotted_metadata() -> None:
    items = _items("traditional_houses")
    assert items[0].options == ("Batak Toba", "Minangkabau", "Toraja", "Dayak")
    assert items[0].answer_index == 1 and items[0].metadata == {"island": "Sumatra"}


def test_record_labels_order_texts() -> None:
    record = {
        "label": ["2", "1", "10", "3", "4", "5", "6", "7", "8", "9"],
        "text": list("bakcdefghi"),
    }
    assert options_from(record, "record", "|") == list("abcdefghik")
    with pytest.raises(ValueError, match="2 labels but 1 texts"):
        options_from({"label": ["A", "B"], "text": ["x"]}, "record", "|")


def test_letter_dict_options_any_key_case() -> None:
    items = _items("regional_dances")
    assert items[3].options == ("Bali", "East Java", "Aceh", "West Sumatra")  # keys a, b, c, d
    assert items[3].answer_index == 3
    with pytest.raises(ValueError, match=r"option keys \['A', 'C'\] are not the consecutive"):
        options_from('{"A": "x", "C": "y"}', "letter_dict", "|")


def test_delimited_options_with_text_answers() -> None:
    items = _items("regional_dishes")
    assert items[0].options == ("Minangkabau", "Javanese", "Bugis", "Balinese")
    assert [i.answer_index for i in items] == [0, 2, 1, 3, 1]


def test_multi_file_metadata_from_path() -> None:
    items = _items("island_culture")
    found = {(i.metadata["island"], i.metadata["topic"]) for i in items}
    assert found == {("bali", "calendar"), ("bali", "music"), ("java", "language"),
                     ("java", "music"), ("sumatra", "language")}  # fmt: skip


def test_multi_file_errors_name_the_file(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "data/sources/island_culture/islands", tmp_path / "islands")
    bad = tmp_path / "islands/java/music.json"
    bad.write_text(bad.read_text().replace('"answer": 2', '"answer": 5'))
    source = {"kind": "file", "path": str(tmp_path / "islands/{island}/{topic}.json")}
    with pytest.raises(SourceError, match=r"java/music.json, row 1, column 'answer': answer '5'"):
        load_checked(_spec("island_culture", source=source), ROOT)


def test_question_joined_by_template() -> None:
    items = _items("cultural_copa")
    assert (
        items[0].question == "A Balinese Hindu family held a ngaben ceremony. What was the cause?"
    )
    assert items[2].question.endswith("What happened as a result?")
    assert items[0].metadata == {"relation": "cause"}


def test_template_with_an_undefined_name_is_a_row_error() -> None:
    columns = dict(_spec("cultural_copa").columns.__dict__)
    with pytest.raises(SourceError, match=r"missing column\(s\) \['premis'\]"):
        _items("cultural_copa", columns={"id": "idx", "question": "{{ premis }}",
                                         "options": ["choice1", "choice2"], "answer": "label",
                                         "answer_format": "index"})  # fmt: skip
    assert columns["question"].startswith("{{ premise }}")


def test_tsv_synthesized_ids_initials_and_letter_forms() -> None:
    items = _items("national_figures")
    assert [i.id for i in items] == [f"national_figures-00000{n}" for n in range(1, 6)]
    assert items[1].options == ("J. P. Coen", "A. H. Nasution", "G. A. Siwabessy", "H. B. Jassin")
    assert [i.answer_index for i in items] == [1, 2, 0, 3, 1]  # B, (c), A., d), b
    assert items[0].metadata == {"born": 1587}


@pytest.mark.parametrize("name", ["landmarks_hf_disk", "landmarks_hf_parquet"])
def test_hugging_face_layouts_offline(name: str) -> None:
    items = _items(name)
    assert [i.answer_index for i in items] == [0, 1, 2, 3, 0]
    assert items[2].options[2] == "East Nusa Tenggara" and items[2].metadata == {
        "island": "Lesser Sunda"
    }


def test_hugging_face_missing_split_is_named() -> None:
    source = {
        "kind": "hf",
        "path": "data/sources/landmarks_hf_disk",
        "hf_split": "dev",
    }
    with pytest.raises(SourceError, match=r"no split 'dev' \(found \['test'\]\)"):
        _items("landmarks_hf_disk", source=source)


def test_limit_and_seeded_stratified_sample_are_recorded() -> None:
    first = _items("island_culture", limit=2)
    assert [i.id for i in first] == ["bal-cal-1", "bal-mus-1"]
    sample = {"n": 3, "seed": 7, "stratify": ["island"]}
    spec = _spec("island_culture", sample=sample)
    one, two = load_checked(spec, ROOT), load_checked(spec, ROOT)
    ids = [i.id for i in one.items["en"]]
    assert ids == [i.id for i in two.items["en"]] and len(ids) == 3
    assert {i.metadata["island"] for i in one.items["en"]} == {"bali", "java", "sumatra"}
    assert sample_record(spec, one.source) == {
        "rows_read": 5, "rows_skipped": 0, "rows_kept": 3, "limit": None,
        "sample": {**sample, "stratify": ["island"]},
    }  # fmt: skip
    with pytest.raises(SourceError, match=r"sample.stratify names missing column\(s\) \['isle'\]"):
        _items("island_culture", sample={"n": 2, "stratify": ["isle"]})
    with pytest.raises(SpecError, match=r"sample\.n must be a positive integer"):
        _spec("island_culture", sample={"n": 0})


def test_synthesized_ids_survive_sampling() -> None:
    every = {i.question: i.id for i in _items("national_figures")}
    sampled = _items("national_figures", sample={"n": 2, "seed": 1})
    assert all(every[i.question] == i.id for i in sampled)


def test_metadata_in_prompt_templates(tmp_path: Path) -> None:
    item = _items("island_culture")[0]
    template = Template(tmp_path / "t.txt", "[{island}/{topic}] {question}\n{options}")
    plan = SettingPlan(Setting.parse("mcq-none-en"), template)
    assert render_prompt(item, plan, "").startswith("[bali/calendar] On Nyepi")
    folder = tmp_path / "prompts/island_culture/mcq"
    folder.mkdir(parents=True)
    (folder / "zero_shot.en.txt").write_text("{region} {question}\n{options}")
    with pytest.raises(TemplateError, match=r"placeholder\(s\) \['region'\] are neither"):
        check_templates(_spec("island_culture"), tmp_path, "zero_shot")


def test_metadata_may_not_shadow_prompt_fields() -> None:
    with pytest.raises(SpecError, match=r"\['question'\] are reserved"):
        columns = {"id": "idx", "question": "premise", "options": ["choice1", "choice2"],
                   "answer": "label", "metadata": ["question"]}  # fmt: skip
        _spec("cultural_copa", columns=columns)


def test_clashing_path_capture_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "qid").mkdir()
    row = {"qid": "x", "question": "q?", "options": ["a", "b"], "answer": 0}
    (tmp_path / "qid/t.json").write_text(json.dumps([row]))
    source = {"kind": "file", "path": str(tmp_path / "{qid}/{topic}.json")}
    with pytest.raises(SourceError, match=r"path captures \['qid'\] clash"):
        _items("island_culture", source=source)


def test_provenance_hashes_every_source_file_and_the_sample() -> None:
    spec = _spec("island_culture", sample={"n": 3, "seed": 7})
    record = source_provenance(spec, ROOT)
    assert len(record["files"]) == 5 and len(record["md5"]) == 32
    assert record["sample"] == {"n": 3, "seed": 7, "stratify": []} and record["limit"] is None
    single = source_provenance(_spec("national_figures", limit=2), ROOT)
    assert single["md5"] == next(iter(single["files"].values())) and single["limit"] == 2
    folder = source_provenance(_spec("landmarks_hf_disk"), ROOT)
    assert any(f.endswith("state.json") for f in folder["files"])


def test_record_options_as_a_list_of_label_text_objects() -> None:
    """ARC's original files: ``question.choices`` is ``[{label, text}, …]``, in any order."""
    choices = [{"label": "B", "text": "Toraja"}, {"label": "A", "text": "Bugis"}]
    assert options_from(choices, "record", "|") == ["Bugis", "Toraja"]
    with pytest.raises(ValueError, match="objects each need 'label' and 'text'"):
        options_from([{"label": "A"}, {"label": "B", "text": "x"}], "record", "|")


@pytest.mark.parametrize("sample", [None, {"n": 30, "seed": 3}])
def test_validate_tables_built_in_chunks_equal_the_items_tables(
    sample: dict[str, Any] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``validate`` loads tables a few items at a time (a million items as objects cost a
    gigabyte); the tables must be the ones the items give, sample and language order included."""
    import cultureqa.benchmarks.load.pipeline as pipeline

    raw: Any = OmegaConf.to_container(OmegaConf.load(ROOT / "params.yaml").benchmarks.indoculture)
    spec = BenchmarkSpec.from_config({**raw, "sample": sample, "limit": None})
    items = load_checked(spec, ROOT)
    monkeypatch.setattr(pipeline, "FRAME_CHUNK", 7)
    tables = load_checked(spec, ROOT, keep_items=False)
    assert tables.items == {} and tables.sampled == items.sampled == (sample is not None)
    pd.testing.assert_frame_equal(tables.whole_frame, items.whole_frame)
    pd.testing.assert_frame_equal(tables.frame, items.frame)
    assert sample_record(spec, tables.source) == sample_record(spec, items.source)
    assert set(items.whole_frame["language"]) == {"en", "id"} and len(items.frame) == (
        60 if sample else len(items.whole_frame)
    )
