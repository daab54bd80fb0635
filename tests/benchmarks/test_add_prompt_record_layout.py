"""``benchmark add`` on a layout with the question inside a one-record list, per language file.

Our own rows, in the shape SEA-HELM publishes Global-MMLU-Lite (``global_mmlu_lite_{lang}_test
.jsonl``): ``metadata`` (with the row's language and subject), ``prompts: [{question, option_a,
…, subject}]``, a ``label`` that the Burmese file writes as Burmese letters (က ခ ဂ ဃ), and an
``id`` that numbers each file's rows from 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cultureqa.authoring.add import Drafted, draft
from cultureqa.authoring.sniff.answers import find_format
from cultureqa.benchmarks.load import load_benchmark
from cultureqa.core.records import McqItem

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = {  # language: (question, four options), gold B, C, D, A, B, C in turn
    "en": ["Which island is Mount Rinjani on?", "Where is Lake Toba?",
           "Which city is the capital of Myanmar?", "What is the main river of Bangkok?",
           "Which country is Angkor Wat in?", "What is the currency of Vietnam?"],
    "my": ["ရင်ဂျာနီတောင်သည် မည်သည့်ကျွန်းပေါ်တွင် ရှိသနည်း။", "တိုဘာကန်သည် ဘယ်မှာရှိသနည်း။",
           "မြန်မာနိုင်ငံ၏ မြို့တော်သည် အဘယ်နည်း။", "ဘန်ကောက်၏ အဓိကမြစ်သည် အဘယ်နည်း။",
           "အင်္ဂကိုဝပ်သည် မည်သည့်နိုင်ငံတွင် ရှိသနည်း။", "ဗီယက်နမ်၏ ငွေကြေးသည် အဘယ်နည်း။"],
}  # fmt: skip
GOLDS = [1, 2, 3, 0, 1, 2]
BURMESE = "ကခဂဃ"
SUBJECTS = ["geography", "geography", "geography", "culture", "culture", "economics"]


def _layout(folder: Path) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    for lang, questions in QUESTIONS.items():
        rows = []
        for n, (question, gold) in enumerate(zip(questions, GOLDS, strict=True)):
            record = {"question": question, "subject": SUBJECTS[n]}
            record |= {f"option_{x}": f"{question[:6]} {x}{n}" for x in "abcd"}
            label = BURMESE[gold] if lang == "my" else "ABCD"[gold]
            meta = {"language": lang, "subject": SUBJECTS[n], "sample_id": f"s/{n}"}
            rows.append({"metadata": meta, "prompts": [record], "label": label, "id": n})
        path = folder / f"global_mmlu_lite_{lang}_test.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return str(folder / "global_mmlu_lite_{lang}_test.jsonl")


def _items(drafted: Drafted) -> dict[str, list[McqItem]]:
    return load_benchmark(drafted.spec, rows=(drafted.sample.frame, "planted")).whole


def test_the_prompt_record_and_burmese_letters_are_read(tmp_path: Path) -> None:
    drafted = draft(ROOT, "planted", _layout(tmp_path / "lite"), None)
    columns = drafted.proposal.columns
    assert columns["question"] == "prompts.0.question"
    assert columns["options"] == [f"prompts.0.option_{x}" for x in "abcd"]
    assert columns["answer"] == ("{{ {'က': 'A', 'ခ': 'B', 'ဂ': 'C', 'ဃ': 'D'}.get(label, label) }}")
    assert columns["answer_format"] == "letter" and columns["language"] == "lang"
    assert columns["metadata"] == [{"sample_id": "metadata.sample_id"},
                                   {"subject": "metadata.subject"}]  # fmt: skip
    notes = drafted.proposal.notes
    assert "6 sampled golds are Myanmar letters (က ခ ဂ ဃ): read as A/B/C/D by a template" in notes
    assert ("'metadata.language' repeats the item language ('lang') on every sampled row: not "
            "proposed again") in notes  # fmt: skip
    assert (
        "'prompts.0.subject' repeats 'metadata.subject' on every sampled row: not proposed "
        "again" in notes
    )
    assert any(n.startswith("'id': numbers named as an id that repeat") for n in notes)
    assert drafted.trial.note() == "trial load: 12 of 12 sampled rows become items"
    items = _items(drafted)
    for lang in QUESTIONS:
        assert [i.answer_index for i in items[lang]] == GOLDS
        assert [i.question for i in items[lang]] == QUESTIONS[lang]
    assert items["my"][0].metadata == {"sample_id": "s/0", "subject": "geography"}


def test_a_namesake_with_other_values_keeps_its_path_as_its_name(tmp_path: Path) -> None:
    path = _layout(tmp_path / "lite")
    for file in (tmp_path / "lite").iterdir():
        rows = [json.loads(line) for line in file.read_text("utf-8").splitlines()]
        for n, row in enumerate(rows):
            row["prompts"][0]["subject"] = "history" if n % 2 else "arts"
        file.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    metadata = draft(ROOT, "planted", path, None).proposal.columns["metadata"]
    assert {"prompts_0_subject": "prompts.0.subject"} in metadata
    assert {"subject": "metadata.subject"} in metadata


@pytest.mark.parametrize(
    ("golds", "letters"),
    [(["ก", "ข", "ค"], {"ก": "A", "ข": "B", "ค": "C"}),
     (["가", "라"], {"가": "A", "나": "B", "다": "C", "라": "D"}),
     (["B", "Г"], {"А": "A", "Б": "B", "В": "C", "Г": "D"}),
     (["A", "ခ", "ข"], {}), (["A", "Rendang"], {})],
)  # fmt: skip
def test_option_letters_of_other_scripts(golds: list[str], letters: dict[str, str]) -> None:
    """Thai, Hangul, Cyrillic letters map to A, B, …; two scripts at once or a word do not."""
    import pandas as pd

    rows = [["w", "x", "y", "z"]] * len(golds)
    found = find_format(pd.Series(golds), rows, "label", "planted")
    assert found.letters == letters


def test_a_passage_in_the_prompt_record_joins_the_question(tmp_path: Path) -> None:
    """Belebele as SEA-HELM writes it: ``prompts: [{text, question, choice1…4}]``."""
    passage = ("Angklung dijieun tina awi. Alat musik ieu asalna ti Jawa Barat sarta dimaénkeun "
               "ku cara digoyangkeun.")  # fmt: skip
    rows = [
        {"id": n, "label": "ABCD"[g], "metadata": {"language": "su"},
         "prompts": [{"text": f"{passage} ({n})", "question": f"Angklung dijieun tina naon? {n}",
                      **{f"choice{k + 1}": f"{w} {n}" for k, w in
                         enumerate(["awi", "kai", "beusi", "batu"])}}]}
        for n, g in enumerate(GOLDS)
    ]  # fmt: skip
    path = tmp_path / "su_belebele.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    drafted = draft(ROOT, "planted", str(path), "su")
    columns = drafted.proposal.columns
    assert columns["question"] == "{{ prompts[0].text }}\n{{ prompts[0].question }}"
    assert columns["options"] == [f"prompts.0.choice{k}" for k in range(1, 5)]
    items = load_benchmark(drafted.spec, rows=(drafted.sample.frame, "planted")).whole["su"]
    assert items[2].question == f"{passage} (2)\nAngklung dijieun tina naon? 2"
    assert [i.answer_index for i in items] == GOLDS


@pytest.mark.parametrize(
    ("name", "shown"),
    [("question", "question"), ("meta.island", "meta.island"),
     ("prompts.0.text", "prompts[0].text"), ("Kalimat-1", "row['Kalimat-1']"),
     ("row.x", "row['row.x']"), ("a.0.b-c", "row['a.0.b-c']")],
)  # fmt: skip
def test_a_template_names_a_path_through_a_list_by_index(name: str, shown: str) -> None:
    from cultureqa.authoring.sniff.question import ref

    assert ref(name) == shown
