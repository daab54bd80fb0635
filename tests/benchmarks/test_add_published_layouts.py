"""``benchmark add`` on five published layouts, with our own rows (tests/fixtures/.../add_layouts).

Each proposal must be right (the config loads every row as the file means it) or refuse with a
reason that names what ``add`` could not decide. The layouts: per-annotator keys nested in a
record (no annotator in every row), a per-question ``ID`` beside a unique ``MCQID`` with the
authors' instruction in every prompt, ``Ans`` with a ``Candidates`` column, a set with two
defective rows among twenty, and CommonsenseQA's record of labelled choices with the creator's
and the annotators' majority gold side by side.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from cultureqa.authoring.add import Drafted, draft
from cultureqa.authoring.sniff.ids import find_id
from cultureqa.authoring.sniff.instruction import find_instruction
from cultureqa.benchmarks.load import LoadCounts, load_benchmark
from cultureqa.core.io import SourceError
from cultureqa.core.records import McqItem

ROOT = Path(__file__).resolve().parents[2]
LAYOUTS = ROOT / "tests" / "fixtures" / "benchmarks" / "add_layouts"
GOLDS = [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3]
SUFFIX = ('Without any explanation, choose only one from the given alphabet choices (e.g., A, B, '
          'C). Provide as JSON format: {"answer_choice":""}')  # fmt: skip


def _draft(path: Path | str) -> Drafted:
    return draft(ROOT, "planted", str(path), "en")


def _items(drafted: Drafted, counts: LoadCounts | None = None) -> list[McqItem]:
    loaded = load_benchmark(drafted.spec, languages=["en"], rows=(drafted.sample.frame, "planted"))
    if counts is not None:
        counts.__dict__.update(loaded.counts.__dict__)
    return loaded.whole["en"]


def test_nested_annotator_keys_no_row_has_in_full_are_not_proposed() -> None:
    drafted = _draft(LAYOUTS / "annotators.json")
    columns = drafted.proposal.columns
    assert (columns["id"], columns["question"], columns["answer_format"]) == ("id", "question",
                                                                              "letter")  # fmt: skip
    assert columns["metadata"] == ["region"] and drafted.proposal.slices == [["region"]]
    assert any(n.startswith("'reason.W1', 'reason.W2', 'reason.W3', 'reason.W4', 'votes.W1', …: "
                            "in only some sampled rows, so not proposed") for n in
               drafted.proposal.notes)  # fmt: skip
    items = _items(drafted)
    assert [i.answer_index for i in items] == GOLDS and drafted.proposal.rows is None
    assert items[0].metadata == {"region": "Sumatra"}


def test_a_key_every_record_has_is_still_proposed(tmp_path: Path) -> None:
    """The plant: give every row W1's vote and ``votes.W1`` is a field again (as metadata)."""
    rows = json.loads((LAYOUTS / "annotators.json").read_text(encoding="utf-8"))
    for row in rows:
        row["votes"]["W1"] = "A"
        row["votes"]["W9"] = "B" if row["id"] < "ann-007" else "C"
    path = tmp_path / "annotators.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    metadata = _draft(path).proposal.columns["metadata"]
    assert {"w9": "votes.W9"} in metadata and not any("reason" in str(m) for m in metadata)


def test_the_gold_is_a_gold_column_never_the_choices_labels_nor_a_slice() -> None:
    """CommonsenseQA's layout: ``choices: {label: [A..E], text: [...]}`` has "A".."E" on every row.

    Read as the gold, every item had five golds and only the check caught it. The gold is
    ``answer_creator`` (the first gold column); ``answer_majority`` and the annotators' votes,
    equal to the gold on most rows, would give the answer away as metadata.
    """
    drafted = _draft(LAYOUTS / "csqa_votes.json")
    columns = drafted.proposal.columns
    assert (columns["answer"], columns["answer_format"]) == ("answer_creator", "letter")
    assert "answer_sep" not in columns
    assert columns["options"] == {"from": "choices", "transform": "record"}
    assert columns["metadata"] == ["category", "question_concept"]
    assert ["category"] in drafted.proposal.slices
    assert not any("answer" in name for s in drafted.proposal.slices for name in s)
    notes = drafted.proposal.notes
    assert any(n.startswith("'answer_majority' also names a gold (2 of 12 sampled rows differ "
                            "from 'answer_creator')") for n in notes)  # fmt: skip
    assert any(n.startswith("'answers.W1', 'answers.W2', 'answers.W3': equal to the gold")
               for n in notes)  # fmt: skip
    items = _items(drafted)
    assert [i.answer_index for i in items] == [0, 1, 2, 3, 4] * 2 + [0, 1]
    assert all(len(i.options) == 5 for i in items)


def test_a_vote_that_often_differs_from_the_gold_is_still_metadata(tmp_path: Path) -> None:
    """The plant for the agreement rule: votes that match the gold on 6 of 12 rows stay metadata."""
    rows = json.loads((LAYOUTS / "csqa_votes.json").read_text(encoding="utf-8"))
    for i, row in enumerate(rows):
        row["answers"]["W1"] = row["answer_creator"] if i % 2 else "E"
    path = tmp_path / "votes.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    metadata = _draft(path).proposal.columns["metadata"]
    assert {"w1": "answers.W1"} in metadata and {"w2": "answers.W2"} not in metadata


def test_agreement_with_the_gold_must_be_beyond_chance() -> None:
    """A vote equal to varied golds on 10 of 12 rows gives the answer away; a constant "A" beside
    golds that are all "A" (a skewed set) and 4 of 5 agreements on two letters are chance."""
    from cultureqa.authoring.sniff.propose import _gold_givers

    varied = pd.Series(list("ABCDEABCDEAB"))
    vote = pd.Series(list("ABCDEABCDEBA"))
    assert _gold_givers({"answer": varied, "vote": vote}, "answer", set())[0] == {"vote"}
    skewed = pd.Series(["A"] * 12)
    assert _gold_givers({"answer": skewed, "flag": skewed.copy()}, "answer", set())[0] == set()
    two = pd.Series(list("ABABA"))
    coin = pd.Series(list("ABABB"))
    assert _gold_givers({"answer": two, "coin": coin}, "answer", set())[0] == set()


def test_mcqid_is_the_id_and_the_authors_instruction_is_stripped() -> None:
    drafted = _draft(LAYOUTS / "mcqid.csv")
    columns = drafted.proposal.columns
    assert columns["id"] == "MCQID"  # ID repeats (two MCQs per source question): not an id
    assert columns["question"] == f"{{{{ prompt.removesuffix({json.dumps(SUFFIX)}) }}}}"
    assert columns["options"] == {"from": "choices", "transform": "letter_dict"}
    assert (columns["answer"], columns["answer_format"]) == ("answer_idx", "letter")
    assert columns["metadata"] == ["ID", "topic"] and drafted.proposal.slices == [["topic"]]
    assert f"ends with the instruction {SUFFIX!r}" in " ".join(drafted.proposal.notes)
    items = _items(drafted)
    assert items[1].id == "Ind-00_2" and items[1].question == "Which city is known for gudeg?"
    assert all("JSON" not in i.question for i in items)
    assert [i.answer_index for i in items] == GOLDS


def test_ans_with_candidates(tmp_path: Path) -> None:
    drafted = _draft(LAYOUTS / "ans_candidates.jsonl")
    columns = drafted.proposal.columns
    assert (columns["id"], columns["question"], columns["answer"]) == ("No", "Question", "Ans")
    assert columns["options"] == {"from": "Candidates", "transform": "delimited", "sep": "\n"}
    assert columns["answer_format"] == "letter" and columns["metadata"] == ["Category"]
    items = _items(drafted)
    assert items[0].options == ("Rendang", "Gudeg", "Papeda", "Coto")
    assert [i.answer_index for i in items] == GOLDS
    rows = [json.loads(line) for line in (LAYOUTS / "ans_candidates.jsonl").open(encoding="utf-8")]
    for row in rows:  # candidates as a list and Ans as the right candidate's text
        options = [c[3:] for c in row["Candidates"].split("\n")]
        row["Candidates"], row["Ans"] = options, options["ABCD".index(row["Ans"])]
    path = tmp_path / "ans_text.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    as_text = _draft(path)
    assert as_text.proposal.columns["answer_format"] == "text"
    assert [i.answer_index for i in _items(as_text)] == GOLDS


def test_defective_rows_are_proposed_dropped_with_their_count() -> None:
    drafted = _draft(LAYOUTS / "defective.jsonl")
    assert drafted.proposal.rows == {"invalid": "drop", "max_invalid_share": 0.1}
    assert drafted.trial.dropped == {"answer_out_of_range": 1, "duplicate_option": 1}
    assert ("2 of 20 sampled rows are defective (answer_out_of_range 1, duplicate_option 1): "
            "proposed rows.invalid: drop") in " ".join(drafted.proposal.notes)  # fmt: skip
    counts = LoadCounts()
    items = _items(drafted, counts)
    assert len(items) == 18 and [(d.row, d.reason) for d in counts.dropped] == [
        (5, "duplicate_option"), (14, "answer_out_of_range")
    ]  # fmt: skip
    rows = replace(drafted.spec.rows, invalid="error")
    strict = replace(drafted, spec=replace(drafted.spec, rows=rows))
    with pytest.raises(SourceError, match="row 5"):
        _items(strict)


def _mixed(tmp_path: Path) -> Path:
    """Golds as letters on half the rows and as option texts on the other half."""
    rows: list[dict[str, Any]] = []
    for line in (LAYOUTS / "defective.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        row["options"] = list(dict.fromkeys(row["options"] + ["Flores"]))[:4]
        gold = min(int(row["answer"]), 3)
        row["answer"] = "ABCD"[gold] if len(rows) % 2 else row["options"][gold]
        rows.append(row)
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_proposal_that_reads_half_the_rows_refuses_and_names_itself(tmp_path: Path) -> None:
    with pytest.raises(SourceError) as caught:
        _draft(_mixed(tmp_path))
    message = str(caught.value)
    assert "reads 10 of 20 sampled rows" in message
    guesses = "(question 'question', options 'options', answer 'answer')"
    assert f"the proposed config {guesses}" in message
    assert "add misread a field, not that the rows are defective" in message
    assert "fix the row" not in message


def test_id_needs_uniqueness_and_shape_not_a_name() -> None:
    import pandas as pd

    question = pd.Series([f"Where is dish {n} from?" for n in range(4)])
    fields = {
        "question": question,
        "ID": pd.Series(["a-1", "a-1", "a-2", "a-2"]),  # named, repeats
        "year": pd.Series([1990, 1991, 1992, 1993]),  # unique numbers, no id name
        "dish": pd.Series(["rendang", "gudeg", "pempek", "papeda"]),  # unique words
        "ref": pd.Series(["MCQ-01", "MCQ-02", "MCQ-03", "MCQ-04"]),  # codes: an id by shape
    }
    assert find_id(fields, set(), "question") == "ref"
    fields["questionId"] = pd.Series(["1", "2", "3", "4"])
    assert find_id(fields, set(), "question") == "questionId"  # a name that says id wins
    fields["questionId"] = pd.Series(["1", "2", "3", " "])
    assert find_id(fields, set(), "question") == "ref"  # a blank id on a question row: no id


@pytest.mark.parametrize(
    ("questions", "prefix", "suffix"),
    [
        (["Where is rendang from? Answer with a letter only.",
          "Who dances saman? Answer with a letter only.",
          "What is papeda? Answer with a letter only."], "", "Answer with a letter only."),
        (["Jawablah pertanyaan berikut.\nDari mana rendang?",
          "Jawablah pertanyaan berikut.\nSiapa penari saman?",
          "Jawablah pertanyaan berikut.\nApa itu papeda?"], "Jawablah pertanyaan berikut.\n", ""),
        (["Where is rendang from?", "Where is gudeg from?", "Where is papeda from?"], None, None),
        (["In Indonesia, rendang is from where?", "In Indonesia, gudeg is from where?",
          "In Indonesia, papeda is from where?"], None, None),
    ],
    ids=["suffix", "prefix", "shared-question-words", "shared-clause"],
)  # fmt: skip
def test_an_instruction_is_a_whole_sentence_every_question_shares(
    questions: list[str], prefix: str | None, suffix: str | None
) -> None:
    import pandas as pd

    found = find_instruction(pd.Series(questions))
    if prefix is None:
        assert found is None
    else:
        assert found is not None and (found.prefix, found.suffix) == (prefix, suffix)


def test_a_proposal_that_reads_no_row_names_the_field_it_could_not_read(tmp_path: Path) -> None:
    rows = [{"question": f"Which island is item {n} from?", "options": ["Bali", "Bali", "Java"],
             "answer": 2} for n in range(6)]  # fmt: skip
    path = tmp_path / "none.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(SourceError) as caught:
        _draft(path)
    message = str(caught.value)
    assert ("the proposed config reads none of the 6 sampled rows: 'options' fails on 6 of 6 "
            "(first, row 1: options A and B are the same ('Bali')); add could not tell how to "
            "read 'options'") in message  # fmt: skip
    assert "fix the row" not in message


def test_an_instruction_after_padded_questions_is_still_stripped(tmp_path: Path) -> None:
    lines = (LAYOUTS / "mcqid.csv").read_text(encoding="utf-8")
    path = tmp_path / "padded.csv"
    path.write_text(lines.replace('""answer_choice"":""""}"', '""answer_choice"":""""}\n  "'),
                    encoding="utf-8")  # fmt: skip
    drafted = _draft(path)
    assert drafted.proposal.columns["question"].startswith("{{ prompt.strip().removesuffix(")
    assert [i.question for i in _items(drafted)][:2] == [
        "Which dish is cooked for hours in coconut milk and chilli in West Sumatra?",
        "Which city is known for gudeg?",
    ]  # fmt: skip


def test_a_saved_index_without_a_header_is_no_metadata(tmp_path: Path) -> None:
    """CMMLU's subject CSVs start with a blank header cell over 0, 1, 2, … (pandas' index)."""
    rows = [json.loads(line) for line in (LAYOUTS / "ans_candidates.jsonl").open(encoding="utf-8")]
    for subject, part in (("food", rows[:6]), ("arts", rows[6:])):
        frame = pd.DataFrame(
            {"Question": [r["Question"] for r in part], "Answer": [r["Ans"] for r in part]}
            | {
                letter: [r["Candidates"].split("\n")[i][3:] for r in part]
                for i, letter in enumerate("ABCD")
            }
        )
        frame.to_csv(tmp_path / f"{subject}.csv")  # the index written under a blank header
    drafted = _draft(tmp_path / "{subject}.csv")
    columns = drafted.proposal.columns
    assert columns["metadata"] == ["subject"] and columns["id"] is None
    assert ("'Unnamed: 0': a column without a header holding row numbers (a saved table's "
            "index): not proposed as metadata") in drafted.proposal.notes  # fmt: skip
    assert [i.answer_index for i in _items(drafted)] == GOLDS[6:] + GOLDS[:6]
    words = pd.read_csv(tmp_path / "food.csv", index_col=0)
    words.index = ["easy", "hard"] * 3  # a blank header over words: a field that lost its name
    words.to_csv(tmp_path / "food.csv")
    assert _draft(tmp_path / "food.csv").proposal.columns["metadata"] == [
        {"unnamed_0": "Unnamed: 0"}
    ]


def _marked_rows() -> list[dict[str, Any]]:
    """Korean-exam items whose options quote passage markers (a)…(e), beside plain ones."""
    plain = [{"question": f"질문 {n}", "choices": [f"답 {n}{x}" for x in "가나다라"],
              "answer": f"답 {n}{'가나다라'[n % 4]}"} for n in range(12)]  # fmt: skip
    marked = [
        {"question": "(a)~(d) 중 잘못 고친 것은?", "answer": "(b) : 푸르-+-어 → 푸르러",
         "choices": ["(a) : 예쁘-+-어도 → 예뻐도", "(b) : 푸르-+-어 → 푸르러",
                     "(c) : 살-+-니 → 사니", "(d) : 긋-+-은 → 그은"]},
        {"question": "밑줄 친 (a)~(d) 중 높임 표현은?", "answer": "(c)",
         "choices": ["(a)", "(b)", "(c)", "(d)"]},
        {"question": "(a)~(d)를 순서대로 배열한 것은?", "answer": "(a) - (c) - (b) - (d)",
         "choices": ["(a) - (b) - (c) - (d)", "(a) - (c) - (b) - (d)", "(b) - (a) - (c) - (d)",
                     "(b) - (c) - (a) - (d)"]},
    ]  # fmt: skip
    return plain + marked


def test_markers_that_are_content_are_kept_not_stripped(tmp_path: Path) -> None:
    path = tmp_path / "exam.json"
    path.write_text(json.dumps(_marked_rows(), ensure_ascii=False), encoding="utf-8")
    drafted = _draft(path)
    assert drafted.proposal.columns["option_labels"] == "keep"
    assert any(n.startswith("options begin with markers that are their content in 3 sampled rows")
               for n in drafted.proposal.notes)  # fmt: skip
    assert not any("name none of their row's options" in n for n in drafted.proposal.notes)
    items = _items(drafted)
    assert len(items) == 15 and items[12].options[1] == "(b) : 푸르-+-어 → 푸르러"
    assert [i.answer_index for i in items[12:]] == [1, 2, 1]


def test_markers_beside_labels_to_strip_are_a_note_not_keep(tmp_path: Path) -> None:
    """Rows whose golds show their labels are labels: keep would leave them; strip stays."""
    rows = _marked_rows()
    for row in rows[:12]:
        row["choices"] = [f"{x}. {c}" for x, c in zip("ABCD", row["choices"], strict=True)]
    path = tmp_path / "exam.json"
    path.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    drafted = _draft(path)
    assert "option_labels" not in drafted.proposal.columns
    assert any(
        n.startswith("options begin with markers that are their content in 3 sampled rows")
        and "while 12 rows carry labels to strip" in n
        for n in drafted.proposal.notes
    )
    assert drafted.trial.kept - len(drafted.trial.rows) >= 1  # the marked rows, counted


def test_bare_labels_the_question_never_names_are_lost_options_not_content(
    tmp_path: Path,
) -> None:
    """TurkishMMLU has rows whose options are only ``A)``…``E)``: their text was lost."""
    rows = _marked_rows()[:12]
    rows.append({"question": "Hangi element soy gazdır?", "answer": "B)",
                 "choices": ["A)", "B)", "C)", "D)"]})  # fmt: skip
    path = tmp_path / "exam.json"
    path.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    drafted = _draft(path)
    assert "option_labels" not in drafted.proposal.columns
    assert drafted.trial.dropped == {"label_only_option": 1}
