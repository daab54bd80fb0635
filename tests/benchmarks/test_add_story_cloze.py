"""``benchmark add`` on a story-cloze layout: the right ending and the wrong one in two columns.

Our own rows, in the shape IndoCloze publishes: four story sentences ``Kalimat-1``…``Kalimat-4``,
``Correct Ending`` and ``Incorrect Ending``, no answer column, one story told twice. Read as
four options with a gold that names none of them, the set could not load; read right, the
endings are the options, the right one is always first, so the proposal shuffles them.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from cultureqa.authoring.add import draft
from cultureqa.benchmarks.load import load_benchmark
from cultureqa.core.io import SourceError

ROOT = Path(__file__).resolve().parents[2]
HEADER = ["Kalimat-1", "Kalimat-2", "Kalimat-3", "Kalimat-4", "Correct Ending", "Incorrect Ending"]
STORIES = [
    ("Budi lapar sekali.", "Dia membuka kulkas.", "Kulkasnya kosong.", "Dia pergi ke warung.",
     "Budi membeli nasi bungkus.", "Budi tidur di kulkas."),
    ("Sari ingin belajar menari.", "Ibunya mendaftarkannya ke sanggar.", "Setiap Minggu dia "
     "berlatih.", "Setahun kemudian ada pentas.", "Sari menari jaipong di pentas.",
     "Sari lupa cara berjalan."),
    ("Hujan turun deras.", "Jalan depan rumah banjir.", "Andi tidak bisa ke sekolah.",
     "Gurunya mengirim tugas.", "Andi mengerjakan tugas di rumah.", "Andi berenang ke Bali."),
    ("Rina menanam cabai.", "Dia menyiramnya setiap pagi.", "Tanamannya tumbuh subur.",
     "Cabainya mulai merah.", "Rina memetik cabai untuk sambal.", "Rina menanam cabai di bulan."),
    ("Pak Joko membuka warung kopi.", "Awalnya sepi pembeli.", "Dia membuat kopi tubruk enak.",
     "Kabar itu menyebar.", "Warungnya menjadi ramai.", "Warungnya berubah menjadi kapal."),
]  # fmt: skip


def _write(path: Path, rows: list[tuple[str, ...]]) -> str:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        writer.writerows(rows)
    return str(path)


def test_the_endings_are_the_options_shuffled_and_the_story_is_the_question(
    tmp_path: Path,
) -> None:
    rows = [*STORIES, STORIES[1]]  # the second story told twice
    drafted = draft(ROOT, "planted", _write(tmp_path / "test.csv", rows), "id")
    columns = drafted.proposal.columns
    assert columns["options"] == {"from": ["Correct Ending", "Incorrect Ending"],
                                  "shuffle": {"seed": 0}}  # fmt: skip
    assert (columns["answer"], columns["answer_format"]) == ("{{ 0 }}", "index")
    assert columns["question"] == " ".join(f"{{{{ row['Kalimat-{n}'] }}}}" for n in range(1, 5))
    assert drafted.proposal.rows == {"duplicates": "drop"}
    notes = drafted.proposal.notes
    assert any(n.startswith("story-cloze layout: 'Correct Ending' is the right option and "
                            "'Incorrect Ending' the wrong one(s)") for n in notes)  # fmt: skip
    assert ("1 of 6 sampled rows repeat an earlier item (same language, question and options): "
            "proposed rows.duplicates: drop") in " ".join(notes)  # fmt: skip
    loaded = load_benchmark(drafted.spec, rows=(drafted.sample.frame, "planted"))
    items = loaded.whole["id"]
    assert len(items) == 5 and loaded.counts.dropped_by_reason() == {"duplicate_item": 1}
    assert (
        items[0].question == "Budi lapar sekali. Dia membuka kulkas. Kulkasnya kosong. Dia "
        "pergi ke warung."
    )
    for item, story in zip(items, STORIES, strict=True):
        assert item.options[item.answer_index] == story[4]  # the right ending, wherever it went
        assert sorted(item.options) == sorted(story[4:])
    assert {i.answer_index for i in items} == {0, 1}  # not every gold A


def test_letters_under_a_correct_name_are_a_gold_not_an_ending(tmp_path: Path) -> None:
    """``correct_answer: B`` beside ``incorrect_answer``: no ending texts, so no pairwise read."""
    path = tmp_path / "letters.csv"
    rows = [(s[0], s[4], s[5], "A", "B") for s in STORIES]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["question", "A", "B", "correct_answer", "incorrect_answer"])
        writer.writerows(rows)
    drafted = draft(ROOT, "planted", str(path), "id")
    assert drafted.proposal.columns["options"] == ["A", "B"]
    assert drafted.proposal.columns["answer"] == "correct_answer"


def test_without_a_story_the_layout_is_not_guessed(tmp_path: Path) -> None:
    """Endings alone, with nothing to ask: add refuses rather than invent a question."""
    path = tmp_path / "endings.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Correct Ending", "Incorrect Ending"])
        writer.writerows([s[4:] for s in STORIES])
    with pytest.raises(SourceError):
        draft(ROOT, "planted", str(path), "id")
