"""Each layout ``benchmark add`` proposes: plant it in a fresh file and see the proposal load it."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cultureqa.authoring import scaffold
from cultureqa.authoring.add import Drafted, draft
from cultureqa.authoring.sniff import propose, read_sample, sample
from cultureqa.benchmarks.load import load_benchmark
from cultureqa.core.io import SourceError
from cultureqa.core.records import McqItem

ROOT = Path(__file__).resolve().parents[2]
DISHES = [  # dish, options, gold index, origin (as in data/sources/examples/LAYOUTS.md)
    ("rendang", ["Minangkabau", "Javanese", "Bugis", "Balinese"], 0, "Sumatra"),
    ("gudeg", ["Surabaya", "Medan", "Yogyakarta", "Makassar"], 2, "Java"),
    ("pempek", ["Pontianak", "Palembang", "Manado", "Kupang"], 1, "Sumatra"),
    ("papeda", ["Aceh", "Bali", "Lampung", "Maluku"], 3, "Maluku"),
    ("coto", ["Makassar", "Padang", "Denpasar", "Bandung"], 0, "Sulawesi"),
    ("gudeg manggar", ["Medan", "Yogyakarta", "Ambon", "Jambi"], 1, "Java"),
]


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return str(path)


def _drafted(path: str, language: str = "en") -> Drafted:
    return draft(ROOT, "planted", path, language)


def _items(drafted: Drafted) -> list[McqItem]:
    language = next(iter(drafted.spec.languages))
    loaded = load_benchmark(
        drafted.spec, languages=[language], rows=(drafted.sample.frame, "planted")
    )
    return loaded.whole[language]


def _golds(items: list[McqItem]) -> list[int]:
    return [i.answer_index for i in items]


def test_letter_prefixed_options_and_labelled_golds(tmp_path: Path) -> None:
    rows = [{"q": f"Where is {d} from?", **{f"option_{x}": f"({x}) {o}" for x, o in
             zip("abcd", opts, strict=True)}, "answer": f"({'ABCD'[g]}) {opts[g]}"}
            for d, opts, g, _ in DISHES]  # fmt: skip
    drafted = _drafted(_jsonl(tmp_path / "dishes.jsonl", rows))
    columns = drafted.proposal.columns
    assert columns["question"] == "q" and columns["answer_format"] == "letter"
    assert columns["options"] == ["option_a", "option_b", "option_c", "option_d"]
    assert "option_labels" not in columns  # A, B, C, D in order: the loader's default strips them
    assert any("labels A., B., … in 6 sampled rows: stripped" in n for n in drafted.proposal.notes)
    items = _items(drafted)
    assert items[0].options == ("Minangkabau", "Javanese", "Bugis", "Balinese")
    assert _golds(items) == [g for _, _, g, _ in DISHES]


def test_labelled_gold_that_names_another_options_text_is_dropped(tmp_path: Path) -> None:
    rows = [{"question": f"Where is {d} from?", "choices": [f"{x}. {o}" for x, o in
             zip("ABCD", opts, strict=True)], "answer": f"{'ABCD'[g]}. {opts[g]}"}
            for d, opts, g, _ in DISHES]  # fmt: skip
    rows[2]["answer"] = "B. Manado"  # option B of this row is Palembang
    drafted = _drafted(_jsonl(tmp_path / "dishes.jsonl", rows))
    assert drafted.proposal.columns["answer_format"] == "letter"
    assert any(
        "1 of 6 sampled golds name none of their row's options as a letter (first: "
        "'B. Manado' with 4 options)" in n
        for n in drafted.proposal.notes
    )
    assert drafted.trial.dropped == {"answer_label_mismatch": 1}
    assert drafted.proposal.rows == {"invalid": "drop", "max_invalid_share": 0.2}
    assert len(_items(drafted)) == 5  # the defective row is dropped, and only it
    strict = replace(drafted.spec, rows=replace(drafted.spec.rows, invalid="error"))
    with pytest.raises(SourceError, match=r"answer 'B. Manado' names option B, whose text is "
                       r"'Palembang'"):  # fmt: skip
        load_benchmark(strict, languages=["en"], rows=(drafted.sample.frame, "planted"))


def test_labels_out_of_order_propose_by_label(tmp_path: Path) -> None:
    rows = [{"question": f"Where is {d} from?", "options": [f"{x}. {o}" for x, o in
             zip("ABCD", opts, strict=True)], "answer": "ABCD"[g]}
            for d, opts, g, _ in DISHES]  # fmt: skip
    rows[0]["options"] = ["B. Javanese", "A. Minangkabau", "C. Bugis", "D. Balinese"]
    drafted = _drafted(_jsonl(tmp_path / "dishes.jsonl", rows))
    assert drafted.proposal.columns["option_labels"] == "by_label"
    assert _items(drafted)[0].options == ("Minangkabau", "Javanese", "Bugis", "Balinese")


@pytest.mark.parametrize("as_string", [True, False])
def test_json_object_options_under_any_name(tmp_path: Path, as_string: bool) -> None:
    def obj(opts: list[str]) -> Any:
        value = dict(zip("abcd", opts, strict=True))
        return json.dumps(value) if as_string else value

    rows = [{"soal": f"Dari mana {d}?", "alternatives": obj(opts), "kunci": "ABCD"[g]}
            for d, opts, g, _ in DISHES]  # fmt: skip
    drafted = _drafted(_jsonl(tmp_path / "dishes.jsonl", rows), "id")
    columns = drafted.proposal.columns
    assert columns["options"] == {"from": "alternatives", "transform": "letter_dict"}
    assert columns["question"] == "soal" and columns["answer"] == "kunci"
    assert _golds(_items(drafted)) == [g for _, _, g, _ in DISHES]


def test_nested_arc_choices_in_the_original_files_layout(tmp_path: Path) -> None:
    """ARC / OpenBookQA as first published: ``question: {stem, choices: [{label, text}]}``."""
    rows = [{"id": f"dish-{n}", "question": {"stem": f"Where is {d} from?", "choices": [
             {"label": x, "text": o} for x, o in zip("ABCD", opts, strict=True)]},
             "answerKey": "ABCD"[g], "meta": {"origin": origin}}
            for n, (d, opts, g, origin) in enumerate(DISHES)]  # fmt: skip
    drafted = _drafted(_jsonl(tmp_path / "arc.jsonl", rows))
    columns = drafted.proposal.columns
    assert columns["question"] == "question.stem" and columns["id"] == "id"
    assert columns["options"] == {"from": "question.choices", "transform": "record"}
    assert columns["metadata"] == [{"origin": "meta.origin"}]
    items = _items(drafted)
    assert items[1].options == tuple(DISHES[1][1]) and _golds(items) == [0, 2, 1, 3, 0, 1]


def test_delimited_candidates_need_the_gold_among_the_parts(tmp_path: Path) -> None:
    rows = [{"question": f"Where is {d} from?", "alternatives_text": "; ".join(opts),
             "answer": opts[g]} for d, opts, g, _ in DISHES]  # fmt: skip
    drafted = _drafted(_jsonl(tmp_path / "dishes.jsonl", rows))
    assert drafted.proposal.columns["options"] == {
        "from": "alternatives_text", "transform": "delimited", "sep": ";"
    }  # fmt: skip
    assert drafted.proposal.columns["answer_format"] == "text"
    assert _golds(_items(drafted)) == [g for _, _, g, _ in DISHES]
    for row, (_, opts, g, _) in zip(rows, DISHES, strict=True):
        row["answer"] = "ABCD"[g]  # letters: a ';' in free text is no evidence of options
        row["alternatives_text"] = ", ".join(opts)
    with pytest.raises(SourceError, match="cannot tell which field"):
        propose(read_sample(_jsonl(tmp_path / "letters.jsonl", rows)))


def test_cue_column_joins_the_question_in_a_template(tmp_path: Path) -> None:
    rows = [{"Pertanyaan": f"Dari mana {d}?", "Konteks": f"{d.title()} adalah makanan khas.",
             "pilihan": opts, "jawaban": g} for d, opts, g, _ in DISHES]  # fmt: skip
    rows[3]["Konteks"] = ""
    drafted = _drafted(_jsonl(tmp_path / "dishes.jsonl", rows), "id")
    question = drafted.proposal.columns["question"]
    assert question == (
        "{% if Konteks is string and Konteks.strip() %}{{ Konteks }}\n{% endif %}{{ Pertanyaan }}"
    )
    items = _items(drafted)
    assert items[0].question == "Rendang adalah makanan khas.\nDari mana rendang?"
    assert items[3].question == "Dari mana papeda?"


def test_copa_layout_gets_its_question_in_the_benchmark_language(tmp_path: Path) -> None:
    rows = [{"premise": "Keluarga itu mengadakan ngaben.", "question": "cause",
             "choice1": "Seorang anggota keluarga meninggal.", "choice2": "Seorang anak lahir.",
             "label": 0},
            {"premise": "Hari itu Nyepi di Bali.", "question": "effect",
             "choice1": "Bandara Ngurah Rai tutup.", "choice2": "Pantai penuh wisatawan.",
             "label": 0}]  # fmt: skip
    drafted = _drafted(_jsonl(tmp_path / "copa.jsonl", rows), "id")
    assert drafted.proposal.columns["metadata"] == [{"relation": "question"}]
    items = _items(drafted)
    assert items[0].question == "Keluarga itu mengadakan ngaben. Apa penyebabnya?"
    assert items[1].question.endswith("Apa yang terjadi sebagai akibatnya?")


def test_one_based_golds_are_shifted_and_said(tmp_path: Path) -> None:
    rows = [{"question": f"Where is {d} from?", "choices": opts, "answer": g + 1}
            for d, opts, g, _ in DISHES]  # fmt: skip
    drafted = _drafted(_jsonl(tmp_path / "dishes.jsonl", rows))
    columns = drafted.proposal.columns
    assert columns["answer"] == "{{ (answer | int) - 1 }}" and columns["answer_format"] == "index"
    assert any("golds run 1…k" in n for n in drafted.proposal.notes)
    assert _golds(_items(drafted)) == [g for _, _, g, _ in DISHES]


def test_split_column_becomes_a_filter_and_translations_a_language(tmp_path: Path) -> None:
    rows = [{"id": n, "context": f"Dari mana {d}?", "options": opts, "answer": "ABCD"[g],
             "context_en": f"Where is {d} from?", "options_en": opts, "split": "test"}
            for n, (d, opts, g, _) in enumerate(DISHES)]  # fmt: skip
    rows[0]["split"] = "dev"
    drafted = _drafted(_jsonl(tmp_path / "dishes.jsonl", rows), "id")
    proposal = drafted.proposal
    assert proposal.rows == {"keep": {"split": "test"}} and proposal.columns["metadata"] == []
    assert proposal.languages == {"en": {"question": "context_en", "options": "options_en"}}
    assert drafted.spec.languages["en"].question == "context_en"
    assert [s.name for s in drafted.spec.settings] == ["mcq-none-id", "mcq-none-en"]
    assert (drafted.trial.kept, drafted.trial.skipped, len(drafted.trial.rows)) == (5, 1, 5)


def test_model_output_is_never_metadata_or_a_slice(tmp_path: Path) -> None:
    for model in ("gpt4", "llama"):
        rows = [{"question": f"Where is {d} from?", "choices": opts, "answer": g,
                 "gpt4_response": "ABCD"[(g + 1) % 4], "origin": origin}
                for d, opts, g, origin in DISHES]  # fmt: skip
        _jsonl(tmp_path / "runs" / model / "dishes.jsonl", rows)
    proposal = propose(read_sample(str(tmp_path / "runs/{model}/dishes.jsonl")))
    assert proposal.columns["metadata"] == ["origin", "model"]  # a capture the user named
    assert proposal.slices == [["origin"]]
    assert any("'gpt4_response' looks like a model's output" in n for n in proposal.notes)


def test_pattern_sniffs_a_spread_of_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sample, "MAX_FILES", 3)
    for n, (d, opts, g, origin) in enumerate(DISHES):
        rows = [{"question": f"Where is {d} from?", "choices": opts, "answer": g}]
        _jsonl(tmp_path / "raw" / origin.lower() / f"dish{n}.jsonl", rows)
    read = read_sample(str(tmp_path / "raw/{island}/*.jsonl"))
    assert read.notes == ["sniffed 3 of 6 files (spread evenly)"] and len(read.frame) == 3
    proposal = propose(read)
    assert proposal.columns["metadata"] == ["island"] and proposal.columns["id"] is None
    assert proposal.slices == [["island"]]  # 4 islands over all 6 files, though 3 were read


def test_a_capture_with_many_values_is_metadata_not_a_slice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sample, "MAX_FILES", 4)
    for shard in range(60):
        d, opts, g, _ = DISHES[shard % 6]
        rows = [{"question": f"Where is {d} from? ({n})", "choices": opts, "answer": g}
                for n in range(2)]  # fmt: skip
        _jsonl(tmp_path / "shards" / f"{shard:03d}.jsonl", rows)
    proposal = propose(read_sample(str(tmp_path / "shards/{shard}.jsonl")))
    assert proposal.columns["metadata"] == ["shard"] and proposal.slices == []
    assert "'shard' takes 60 values over the files: not a slice" in proposal.notes


def test_copy_refuses_to_overwrite_and_leaves_nothing(tmp_path: Path) -> None:
    for island in ("bali", "java"):
        _jsonl(tmp_path / "raw" / island / "music.jsonl", [{"question": "q"}])
    root = tmp_path / "project"
    taken = root / "data/sources/isl/java/music.jsonl"
    _jsonl(taken, [{"question": "mine"}])
    read = read_sample(str(tmp_path / "raw/{island}/music.jsonl"))
    assert scaffold.target_path(read.path, root, "isl") == "data/sources/isl/{island}/music.jsonl"
    with pytest.raises(SourceError, match="exists already"):
        scaffold.copy_source(read, root, "isl")
    assert sorted(p.name for p in (root / "data/sources").rglob("*")) == [
        "isl", "java", "music.jsonl"
    ]  # fmt: skip
    assert "mine" in taken.read_text()


def test_a_top_level_gold_wins_over_a_nested_label(tmp_path: Path) -> None:
    rows = [{"question": f"Where is {d} from?", "choices": {"label": list("ABCD"), "text": opts},
             "gold": "ABCD"[g]} for d, opts, g, _ in DISHES]  # fmt: skip
    columns = propose(read_sample(_jsonl(tmp_path / "dishes.jsonl", rows))).columns
    assert columns["answer"] == "gold" and columns["options"]["transform"] == "record"


def _piqa(d: str, opts: list[str], g: int) -> dict[str, Any]:
    return {"goal": f"Where is {d} from?", "sol1": opts[0], "sol2": opts[g or 1], "label": 0}


def _winogrande(d: str, opts: list[str], g: int) -> dict[str, Any]:
    pair = [opts[g], opts[(g + 1) % 4]] if g % 2 else [opts[(g + 1) % 4], opts[g]]
    return {"sentence": f"{d} comes from _.", "option1": pair[0], "option2": pair[1],
            "answer": "1" if g % 2 else "2"}  # fmt: skip


def _siqa(d: str, opts: list[str], g: int) -> dict[str, Any]:
    return {"context": f"Ayu cooked {d} for her guests.", "question": "Where is it from?",
            "answerA": opts[0], "answerB": opts[1], "answerC": opts[2],
            "label": str(g % 3 + 1)}  # fmt: skip


def _culturalbench(d: str, opts: list[str], g: int) -> dict[str, Any]:
    return {"question_idx": d, "prompt_question": f"Where is {d} from?",
            **{f"prompt_option_{x}": o for x, o in zip("abcd", opts, strict=True)},
            "answer": "ABCD"[g], "country": "Indonesia"}  # fmt: skip


@pytest.mark.parametrize(
    ("build", "question", "options", "answer", "fmt"),
    [
        (_piqa, "goal", ["sol1", "sol2"], "label", "index"),
        (_winogrande, "sentence", ["option1", "option2"], "{{ (answer | int) - 1 }}", "index"),
        (_siqa, "{{ context }}\n{{ question }}", ["answerA", "answerB", "answerC"],
         "{{ (label | int) - 1 }}", "index"),
        (_culturalbench, "prompt_question", [f"prompt_option_{x}" for x in "abcd"], "answer",
         "letter"),
    ],
    ids=["piqa", "winogrande", "siqa", "culturalbench"],
)  # fmt: skip
def test_well_known_public_layouts(
    tmp_path: Path, build: Any, question: str, options: list[str], answer: str, fmt: str
) -> None:
    rows = [build(d, opts, g) for d, opts, g, _ in DISHES]
    drafted = _drafted(_jsonl(tmp_path / "layout.jsonl", rows))
    columns = drafted.proposal.columns
    assert (columns["question"], columns["options"]) == (question, options)
    assert (columns["answer"], columns["answer_format"]) == (answer, fmt)
    assert len(drafted.trial.rows) == len(rows) and not drafted.trial.dropped


def test_parquet_numpy_scalars_are_metadata_and_a_bool_is_typed(tmp_path: Path) -> None:
    import pandas as pd

    frame = pd.DataFrame(
        {"question": [f"Where is {d} from?" for d, *_ in DISHES],
         "choices": [opts for _, opts, _, _ in DISHES], "answer": [g for _, _, g, _ in DISHES],
         "grade": [1, 2, 1, 2, 1, 2], "halal": [True, False, True, True, False, True]}
    )  # fmt: skip
    frame.to_parquet(tmp_path / "dishes.parquet")
    drafted = _drafted(str(tmp_path / "dishes.parquet"))
    assert drafted.proposal.columns["metadata"] == ["grade", "halal"]
    assert drafted.proposal.columns["metadata_types"] == {"grade": "int", "halal": "bool"}
    assert drafted.proposal.slices == [["grade"], ["halal"]]
    assert _items(drafted)[1].metadata == {"grade": 2, "halal": False}
