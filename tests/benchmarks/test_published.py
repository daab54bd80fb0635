"""Published benchmarks load as they are: each test plants one defect of real data.

Row policy (error / drop with counted, listed drops and a maximum share), row filter, any column
name, several right answers, variable option counts, options labelled out of order, binary text,
non-finite floats, JSONL line numbers and byte-order marks.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from cultureqa.benchmarks.load import LoadedSource, load_benchmark
from cultureqa.benchmarks.spec import BenchmarkSpec, SpecError
from cultureqa.core.io import SourceError


def _spec(path: str, **over: Any) -> BenchmarkSpec:
    columns = {"id": "id", "question": "q", "options": ["o1", "o2", "o3"], "answer": "a"}
    columns.update(over.pop("columns", {}))
    cfg = {
        "name": "pub",
        "source": {"kind": "file", "path": path},
        "columns": columns,
        "languages": {"en": {}},
        "settings": ["mcq-none-en"],
        **over,
    }
    return BenchmarkSpec.from_config(cfg)


def _csv(tmp_path: Path, rows: list[dict[str, Any]], name: str = "pub.csv") -> str:
    path = tmp_path / name
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return name


def _row(n: int, a: str = "A", **over: Any) -> dict[str, Any]:
    return {"id": f"r{n}", "q": f"Question {n}?", "o1": f"x{n}", "o2": f"y{n}", "o3": f"z{n}",
            "a": a, **over}  # fmt: skip


def _load(tmp_path: Path, spec: BenchmarkSpec) -> LoadedSource:
    return load_benchmark(spec, tmp_path)


# --- 1. row policy ----------------------------------------------------------------------------

DIRTY = [
    _row(1),
    _row(2, o2="x2"),  # an option repeated
    {"id": "", "q": "", "o1": "", "o2": "", "o3": "", "a": ""},  # a blank separator row
    _row(4, a=""),  # a missing gold
    *[_row(n, a="ABC"[n % 3]) for n in range(5, 80)],
]


def test_an_invalid_row_is_an_error_by_default(tmp_path: Path) -> None:
    name = _csv(tmp_path, DIRTY)
    with pytest.raises(SourceError, match=r"pub.csv, row 2, column 'o1,o2,o3': options A and B"):
        _load(tmp_path, _spec(name))


def test_drop_leaves_invalid_rows_out_counted_by_reason_and_listed(tmp_path: Path) -> None:
    name = _csv(tmp_path, DIRTY)
    loaded = _load(tmp_path, _spec(name, rows={"invalid": "drop"}))
    assert len(loaded.items["en"]) == len(DIRTY) - 3
    counts = loaded.counts
    assert counts.dropped_by_reason() == {"duplicate_option": 1, "missing_gold": 1}
    listed = {(d.row, d.item_id, d.reason) for d in counts.dropped}
    assert listed == {(2, "r2", "duplicate_option"), (4, "r4", "missing_gold")}
    record = counts.record()
    assert record["rows_dropped"] == 2 and record["dropped"][0]["file"] == "pub.csv"
    assert record["rows_blank"] == 1  # the separator row: skipped and counted, not invalid


def test_drops_beyond_the_declared_share_fail(tmp_path: Path) -> None:
    name = _csv(tmp_path, DIRTY)
    policy = {"invalid": "drop", "max_invalid_share": 0.02}
    with pytest.raises(SourceError, match=r"2 of 78 rows \(2.6%\) are invalid, more than"):
        _load(tmp_path, _spec(name, rows=policy))


# --- 2. row filter ----------------------------------------------------------------------------


def test_a_template_filter_skips_rows_before_anything_else(tmp_path: Path) -> None:
    rows = [_row(n, a="ABC"[n % 3], split="test" if n % 2 else "train") for n in range(1, 41)]
    rows[1]["o2"] = rows[1]["o1"]  # invalid, but in the train split: skipped, never checked
    name = _csv(tmp_path, rows)
    loaded = _load(tmp_path, _spec(name, rows={"keep": "{{ split == 'test' }}"}))
    assert len(loaded.items["en"]) == 20 and loaded.counts.skipped == 20
    assert not loaded.counts.dropped


def test_column_conditions_filter(tmp_path: Path) -> None:
    rows = [_row(n, a="ABC"[n % 3], lang=["id", "en", "ko"][n % 3]) for n in range(1, 31)]
    name = _csv(tmp_path, rows)
    loaded = _load(tmp_path, _spec(name, rows={"keep": {"lang": ["id", "ko"]}}))
    assert loaded.counts.skipped == 10 and len(loaded.items["en"]) == 20


def test_a_filter_that_is_not_boolean_names_the_row(tmp_path: Path) -> None:
    name = _csv(tmp_path, [_row(1), _row(2)])
    with pytest.raises(SourceError, match=r"row 1, column 'rows.keep': .* must render True or"):
        _load(tmp_path, _spec(name, rows={"keep": "{{ q }}"}))


def test_filter_true_is_replaced_with_a_pointer() -> None:
    with pytest.raises(SpecError, match=r"filter_true was replaced by rows\.keep"):
        _spec("x.csv", filter_true="{{ ok }}")


# --- 3. any column name -----------------------------------------------------------------------


def test_columns_with_hyphens_spaces_dots_and_hangul(tmp_path: Path) -> None:
    rows = [{"no": f"k{n}", "Kalimat-1": f"Kalimat {n}", "question text": "mana?",
             "질문": f"질문 {n}", "opt.a": f"a{n}", "opt.b": f"b{n}", "정답": "B"}
            for n in range(3)]  # fmt: skip
    name = _csv(tmp_path, rows)
    spec = _spec(name, columns={
        "id": "no", "question": "{{ row['Kalimat-1'] }} {{ row['question text'] }} {{ 질문 }}",
        "options": ["opt.a", "opt.b"], "answer": "정답", "metadata": ["질문"],
    })  # fmt: skip
    [first, *_] = _load(tmp_path, spec).items["en"]
    assert first.question == "Kalimat 0 mana? 질문 0" and first.options == ("a0", "b0")
    assert first.answer_letter == "B" and first.metadata == {"질문": "질문 0"}
    typo = _spec(name, columns={"id": "no", "question": "{{ row['Kalimat-2'] }}",
                                "options": ["opt.a", "opt.b"], "answer": "정답"})  # fmt: skip
    with pytest.raises(SourceError, match=r"missing column\(s\) \['Kalimat-2'\]"):
        _load(tmp_path, typo)


# --- 4. several right answers -----------------------------------------------------------------


def test_a_gold_set_in_a_delimited_cell(tmp_path: Path) -> None:
    rows = [{"id": "u1", "q": "Units of length?", "o1": "feet", "o2": "kilogram", "o3": "inch",
             "a": "feet, inch"},
            {"id": "u2", "q": "Salty?", "o1": "Salt, pepper", "o2": "sugar", "o3": "honey",
             "a": "Salt, pepper"}]  # fmt: skip
    name = _csv(tmp_path, rows)
    spec = _spec(name, columns={"answer_format": "text", "answer_sep": ","})
    loaded = _load(tmp_path, spec)
    several, whole = loaded.items["en"]
    assert several.golds == (0, 2) and several.gold_letters == "A,C"
    assert whole.golds == (0,)  # the whole cell is one option's text: one gold
    assert loaded.counts.multi_gold == 1
    with pytest.raises(SourceError, match="'feet, inch' is not the text of any option"):
        _load(tmp_path, _spec(name, columns={"answer_format": "text"}))


def test_a_gold_list_column_needs_the_declaration(tmp_path: Path) -> None:
    path = tmp_path / "pub.jsonl"
    rows = [{"id": "l1", "q": "Q?", "o1": "a", "o2": "b", "o3": "c", "a": ["A", "C"]}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(SourceError, match=r"lists several golds; set columns\.answer_sep"):
        _load(tmp_path, _spec("pub.jsonl"))
    [item] = _load(tmp_path, _spec("pub.jsonl", columns={"answer_sep": ","})).items["en"]
    assert item.gold_letters == "A,C"


def test_scoring_counts_any_gold_right() -> None:
    from cultureqa.core.records import McqItem
    from cultureqa.evaluation.runner import _score_generation, _score_loglik
    from cultureqa.llm.base import GenerateResponse, LoglikResponse

    item = McqItem("m", "Q?", ("feet", "kg", "inch"), 0, "en", {}, (0, 2))
    assert _score_generation(item, GenerateResponse(text="C", status="ok"))["correct"]
    assert not _score_generation(item, GenerateResponse(text="B", status="ok"))["correct"]
    row = _score_loglik(item, LoglikResponse(logprobs=(-3.0, -2.0, -1.0), status="ok"))
    assert row["correct"] and row["gold"] == "A,C"


# --- 5. variable option counts ----------------------------------------------------------------


def _mixed(tmp_path: Path) -> str:
    rows = [_row(n, a="ABCD"[n % 4], o4=f"w{n}", o5=f"v{n}" if n % 2 else "") for n in range(40)]
    return _csv(tmp_path, rows)


def test_mixed_option_counts_need_a_declaration(tmp_path: Path) -> None:
    name = _mixed(tmp_path)
    opts = {"options": ["o1", "o2", "o3", "o4", "o5"]}
    with pytest.raises(SourceError, match=r"option\(s\) \['E'\] are empty"):
        _load(tmp_path, _spec(name, columns=opts))
    loaded = _load(tmp_path, _spec(name, columns={**opts, "option_counts": [4, 5]}))
    assert {len(i.options) for i in loaded.items["en"]} == {4, 5}
    assert loaded.counts.option_counts == {4: 20, 5: 20}
    with pytest.raises(SourceError, match=r"5 options, not one of columns.option_counts \[4\]"):
        _load(tmp_path, _spec(name, columns={**opts, "option_counts": [4]}))


# --- #25: labels, binary text, non-finite floats, JSONL, BOM -----------------------------------


def test_labels_out_of_order_are_an_error_or_mapped_when_declared(tmp_path: Path) -> None:
    rows = [{"id": "d1", "q": "Dish?", "o1": "B. konro", "o2": "A. kuah beulangong",
             "o3": "C. rawon", "a": "A"}]  # fmt: skip
    name = _csv(tmp_path, rows)
    with pytest.raises(SourceError, match=r"row 1, .*labels B, A, C, not A, B, C… in order"):
        _load(tmp_path, _spec(name))
    loaded = _load(tmp_path, _spec(name, columns={"option_labels": "by_label"}))
    [item] = loaded.items["en"]
    assert item.options == ("kuah beulangong", "konro", "rawon") and item.answer_letter == "A"
    assert loaded.counts.labels_reordered == 1
    index = _csv(tmp_path, [{**rows[0], "a": "0"}], "index.csv")  # position 0 is "B. konro"
    by_index = {"option_labels": "by_label", "answer_format": "index"}
    [moved] = _load(tmp_path, _spec(index, columns=by_index)).items["en"]
    assert moved.options[moved.answer_index] == "konro"


def test_an_option_that_is_only_a_label_is_an_error(tmp_path: Path) -> None:
    name = _csv(tmp_path, [{"id": "d1", "q": "Q?", "o1": "A. x", "o2": "B. ", "o3": "C. z",
                            "a": "A"}])  # fmt: skip
    with pytest.raises(SourceError, match=r"option\(s\) \['B'\] hold only a label \('B.'\)"):
        _load(tmp_path, _spec(name))


def test_binary_parquet_text_is_decoded_and_non_text_is_named(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        [{**_row(n, a="ABC"[n % 3]), "q": f"Rumoh {n}?".encode()} for n in range(3)]
    )
    frame.to_parquet(tmp_path / "pub.parquet")
    [item, *_] = _load(tmp_path, _spec("pub.parquet")).items["en"]
    assert item.question == "Rumoh 0?"
    frame.loc[2, "q"] = b"\xff\xfe"
    frame.to_parquet(tmp_path / "bad.parquet")
    with pytest.raises(SourceError, match=r"bad.parquet, row 3, column 'q': binary value is not"):
        _load(tmp_path, _spec("bad.parquet"))


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_non_finite_float_metadata_is_an_error_or_dropped(tmp_path: Path, value: str) -> None:
    rows = [_row(n, a="ABC"[n % 3], score="0.5") for n in range(1, 30)]
    rows[3]["score"] = value
    name = _csv(tmp_path, rows)
    typed = {"metadata": ["score"], "metadata_types": {"score": "float"}}
    with pytest.raises(SourceError, match=r"row 4, column 'score': expected a finite number"):
        _load(tmp_path, _spec(name, columns=typed))
    loaded = _load(tmp_path, _spec(name, columns=typed, rows={"invalid": "drop"}))
    assert loaded.counts.dropped_by_reason() == {"metadata_type": 1}


def test_jsonl_errors_name_the_line_and_a_bom_is_accepted(tmp_path: Path) -> None:
    good = [json.dumps(_row(n)) for n in range(1, 4)]
    path = tmp_path / "pub.jsonl"
    path.write_text("\ufeff" + good[0] + "\n\n" + good[1] + "\n" + good[2] + "\n", "utf-8")
    items = _load(tmp_path, _spec("pub.jsonl")).items["en"]
    assert [i.id for i in items] == ["r1", "r2", "r3"]
    path.write_text(good[0] + "\n" + good[1] + "\n{'id': 'r3'}\n", "utf-8")
    with pytest.raises(SourceError, match=r"pub.jsonl: line 3 is not valid JSON"):
        _load(tmp_path, _spec("pub.jsonl"))
    path.write_text(good[0] + "\n\n" + json.dumps(_row(3, a="Q")) + "\n", "utf-8")
    with pytest.raises(SourceError, match=r"pub.jsonl, row 3, column 'a'"):  # row = line
        _load(tmp_path, _spec("pub.jsonl"))


def test_a_csv_bom_is_not_part_of_the_first_column(tmp_path: Path) -> None:
    name = _csv(tmp_path, [_row(1), _row(2, a="B")])
    path = tmp_path / name
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert [i.id for i in _load(tmp_path, _spec(name)).items["en"]] == ["r1", "r2"]


# --- sampling after drops; stratify errors name the column -----------------------------------


def test_a_sample_draws_from_valid_rows(tmp_path: Path) -> None:
    name = _csv(tmp_path, DIRTY)
    spec = _spec(name, rows={"invalid": "drop"}, sample={"n": 30, "seed": 3})
    loaded = _load(tmp_path, spec)
    assert len(loaded.items["en"]) == 30 and len(loaded.whole["en"]) == len(DIRTY) - 3
    assert loaded.sampled and len(loaded.counts.dropped) == 2 and loaded.counts.blank == 1


def test_stratify_by_a_metadata_name_says_which_column(tmp_path: Path) -> None:
    rows = [_row(n, a="ABC"[n % 3], Wilayah="Bali" if n % 2 else "Aceh") for n in range(20)]
    name = _csv(tmp_path, rows)
    spec = _spec(name, columns={"metadata": [{"region": "Wilayah"}]},
                 sample={"n": 10, "stratify": ["region"]})  # fmt: skip
    with pytest.raises(SourceError, match="'region' is a metadata name; stratify by its source "
                                          "column 'Wilayah'"):  # fmt: skip
        _load(tmp_path, spec)
