"""``benchmark add`` on a geo-commonsense layout: one TSV per language, several golds per row.

Our own rows, in the shape GeoMLAMA publishes (``gd_prompt_{lang}.tsv``): a masked ``Prompt``,
the ``Corresponding Questions`` a chat model reads, ``Ans`` naming one or several of the
comma-separated ``Candidate Ans``, a short topic in ``Context``, a model's prediction, and a
blank separator line after each group of countries. Beside them lie ``gd_prompt_en_aug.tsv``
files (a headerless list of augmented prompts) that the same capture also matches.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from cultureqa.authoring.add import Drafted, draft
from cultureqa.authoring.sniff.fields import is_answer_like, is_options_name
from cultureqa.benchmarks.load import LoadCounts, load_benchmark
from cultureqa.core.io import SourceError
from cultureqa.core.records import McqItem

ROOT = Path(__file__).resolve().parents[2]
HEADER = ["Prompt", "Corresponding Questions", "Ans", "Candidate Ans", "Context", "GPT-3 Pred"]
GROUPS = {  # language: groups of (prompt, question, golds, candidates, topic), one per country
    "en": [
        [("In Japan people drive on the <mask>.", "Which side of the road do people drive on "
          "in Japan?", "left", "left, right, middle", "driving side"),
         ("In France people drive on the <mask>.", "Which side of the road do people drive on "
          "in France?", "right", "left, right, middle", "driving side")],
        [("The staple food in Japan is <mask>.", "What is the staple food in Japan?",
          "rice, noodles", "bread, rice, noodles, maize", "staple food"),
         ("The staple food in Kenya is <mask>.", "What is the staple food in Kenya?", "maize",
          "bread, rice, noodles, maize", "staple food")],
        [("Height in the United States is measured in <mask>.", "Which units measure height "
          "in the United States?", "feet, inch", "feet, inch, meter, centimeter", "unit"),
         ("Height in Indonesia is measured in <mask>.", "Which units measure height in "
          "Indonesia?", "meter, centimeter", "feet, inch, meter, centimeter", "unit")],
    ],
    "zh": [
        [("在日本，人们靠<mask>行驶。", "在日本，人们靠哪一侧行驶？", "左", "左, 右, 中间",
          "driving side"),
         ("在法国，人们靠<mask>行驶。", "在法国，人们靠哪一侧行驶？", "右", "左, 右, 中间",
          "driving side")],
        [("日本的主食是<mask>。", "日本的主食是什么？", "米饭, 面条", "面包, 米饭, 面条, 玉米",
          "staple food"),
         ("肯尼亚的主食是<mask>。", "肯尼亚的主食是什么？", "玉米", "面包, 米饭, 面条, 玉米",
          "staple food")],
    ],
}  # fmt: skip


def _layout(folder: Path, augmented: bool = False) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    for lang, groups in GROUPS.items():
        lines = ["\t".join(HEADER)]
        for group in groups:
            lines += ["\t".join([*row, "a guess"]) for row in group]
            lines.append("\t" * (len(HEADER) - 1))  # the separator line after each group
        (folder / f"gd_prompt_{lang}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
        if augmented:
            prompts = [row[0].replace("In ", "Usually in ") for g in groups for row in g]
            (folder / f"gd_prompt_{lang}_aug.tsv").write_text("\n".join(prompts) + "\n",
                                                              encoding="utf-8")  # fmt: skip
    return str(folder / "gd_prompt_{lang}.tsv")


def _items(drafted: Drafted, counts: LoadCounts) -> dict[str, list[McqItem]]:
    loaded = load_benchmark(drafted.spec, rows=(drafted.sample.frame, "planted"))
    counts.__dict__.update(loaded.counts.__dict__)
    return loaded.whole


def test_several_golds_among_delimited_candidates_are_proposed_and_load(tmp_path: Path) -> None:
    drafted = draft(ROOT, "planted", _layout(tmp_path / "geo"), None)
    columns = drafted.proposal.columns
    assert columns["question"] == "Corresponding Questions"  # not the masked Prompt
    assert columns["options"] == {"from": "Candidate Ans", "transform": "delimited", "sep": ","}
    gold = (columns["answer"], columns["answer_format"], columns["answer_sep"])
    assert gold == ("Ans", "text", ",")
    assert columns["language"] == "lang" and columns["option_counts"] == [3, 4]
    assert columns["metadata"] == ["Context"]  # the topic: a slice, not a cue, not the prediction
    assert drafted.proposal.rows is None  # blank separator lines are not invalid rows
    notes = drafted.proposal.notes
    label = ("'Context' is named like a cue but holds short repeated labels (3 values over 10 "
             "rows, e.g. 'driving side')")  # fmt: skip
    assert any(n.startswith(label) for n in notes)
    counts = LoadCounts()
    items = _items(drafted, counts)
    assert {lang: len(batch) for lang, batch in items.items()} == {"en": 6, "zh": 4}
    assert counts.dropped_by_reason() == {}
    assert counts.blank == 5  # the separator lines, skipped and counted as blank rows
    staple = next(i for i in items["en"] if i.question == "What is the staple food in Japan?")
    assert [staple.options[g] for g in staple.golds] == ["rice", "noodles"]
    units = next(i for i in items["en"] if "United States" in i.question)
    assert [units.options[g] for g in units.golds] == ["feet", "inch"]
    zh = next(i for i in items["zh"] if i.question == "日本的主食是什么？")
    assert [zh.options[g] for g in zh.golds] == ["米饭", "面条"]
    assert items["en"][0].metadata == {"Context": "driving side"}


def test_a_pattern_over_two_layouts_refuses_and_names_both(tmp_path: Path) -> None:
    """The capture also matches ``gd_prompt_en_aug.tsv``: another layout, and no language."""
    with pytest.raises(SourceError) as caught:
        draft(ROOT, "planted", _layout(tmp_path / "geo", augmented=True), None)
    message = str(caught.value)
    geo = tmp_path / "geo"
    assert (
        f"the pattern's files hold different layouts: 2 files ('{geo}/gd_prompt_en.tsv', "
        f"'{geo}/gd_prompt_zh.tsv') have 6 fields ('Ans', 'Candidate Ans', 'Context', …), but 2 "
        f"files ('{geo}/gd_prompt_en_aug.tsv', '{geo}/gd_prompt_zh_aug.tsv') have 1 field"
    ) in message
    assert "give add a pattern that matches one" in message


def test_a_blank_line_of_a_per_language_file_is_a_blank_row(tmp_path: Path) -> None:
    """The path capture fills every row's ``lang``; the row is blank all the same: skipped and
    counted as blank, not invalid, even under ``rows.invalid: error``."""
    drafted = draft(ROOT, "planted", _layout(tmp_path / "geo"), None)
    strict = replace(drafted.spec, rows=replace(drafted.spec.rows, invalid="error",
                                                max_invalid_share=0.0))  # fmt: skip
    loaded = load_benchmark(strict, rows=(drafted.sample.frame, "planted"))
    record = loaded.counts.record()
    assert (record["rows_blank"], record["rows_dropped"], record["rows_loaded"]) == (5, 0, 10)
    assert record["rows_read"] == 15
    assert "; 5 blank rows (separator lines) skipped and counted" in drafted.trial.note()


@pytest.mark.parametrize(
    ("name", "options", "answer"),
    [("Candidate Ans", True, False), ("answer_choices", True, False),
     ("candidate_answers", True, False), ("answerOptions", True, False),
     ("correct_choice", False, True), ("Ans", False, False), ("answer", False, True),
     ("choices", True, False)],
)  # fmt: skip
def test_a_compound_name_with_an_options_word_is_the_options(
    name: str, options: bool, answer: bool
) -> None:
    assert (is_options_name(name), is_answer_like(name)) == (options, answer)


def test_a_question_id_is_never_the_question(tmp_path: Path) -> None:
    """``question_id`` holds long unique tokens, but no words: ``question_text`` is the question."""
    rows = ["question_id\tquestion_text\tanswer\tA\tB\tC"]
    for n, (q, a, b, c, gold) in enumerate(
        [("Where is rendang from?", "Padang", "Bali", "Aceh", "A"),
         ("Which island is Bali?", "Java", "Bali", "Sumatra", "B"),
         ("Where is the saman dance from?", "Bali", "Papua", "Aceh", "C"),
         ("What is angklung made of?", "bamboo", "iron", "stone", "A")]
    ):  # fmt: skip
        rows.append(f"orig_q_{n:04d}_e7038612d21641ed\t{q}\t{gold}\t{a}\t{b}\t{c}")
    path = tmp_path / "qid.tsv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    columns = draft(ROOT, "planted", str(path), "en").proposal.columns
    assert (columns["question"], columns["id"]) == ("question_text", "question_id")
