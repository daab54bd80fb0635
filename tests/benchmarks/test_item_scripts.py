"""Languages any code names, detected from the script when none is given, checked against it.

Our own rows, written here in the XCOPA layout (one JSONL per language at
``{lang}/test.{lang}.jsonl``) for five languages the project's prompts do not cover (Estonian,
Haitian Creole, Quechua, Thai, Chinese), and one-language files in Thai, Russian and English.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from cultureqa.authoring.add import draft
from cultureqa.benchmarks.load import items_frame, load_benchmark
from cultureqa.benchmarks.scripts import guess_language, mismatch, text_script
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.cli import main
from cultureqa.core.io import SourceError
from cultureqa.validation.mcq_expectations import script_problems
from cultureqa.validation.suites import run_suite

ROOT = Path(__file__).resolve().parents[2]
PREMISES = {  # language: (question, option A, option B, gold)
    "et": [("Mees keeras kraani lahti. Mis juhtus seejärel?", "Vesi voolas", "Tuli kustus", "A"),
           ("Tüdruk leidis oma voodist putuka. Mis oli põhjus?", "Ta lamas", "Aken oli lahti",
            "B"),
           ("Naine lõi haamriga naela. Mis juhtus seejärel?", "Nael läks sisse", "Lind laulis",
            "A")],
    "ht": [("Nonm lan louvri robinè a. Kisa k te pase apre?", "Dlo a koule", "Limyè a etenn",
            "A"),
           ("Tifi a jwenn yon ensèk nan kabann li. Poukisa?", "Li te dòmi", "Fenèt la te louvri",
            "B"),
           ("Fanm nan frape klou a ak mato. Kisa k te pase apre?", "Klou a antre", "Zwazo a chante",
            "A")],
    "qu": [("Qharika pilata kicharqan. Imataq qhipaman karqan?", "Yaku purirqan", "Nina wañurqan",
            "A"),
           ("Sipasqa puñunanpi palamata tarirqan. Imanaqtintaq?", "Puñurqan", "Ventana kicharisqa",
            "B"),
           ("Warmi martillowan clavota waqtarqan. Imataq qhipaman karqan?", "Clavo yaykurqan",
            "Pisqu takirqan", "A")],
    "th": [("ชายคนนั้นเปิดก๊อกน้ำ เกิดอะไรขึ้นต่อมา", "น้ำไหลออกมา", "ไฟดับ", "A"),
           ("เด็กผู้หญิงเจอแมลงบนเตียง สาเหตุคืออะไร", "เธอนอนหลับ", "หน้าต่างเปิดอยู่", "B"),
           ("ผู้หญิงตอกตะปูด้วยค้อน เกิดอะไรขึ้นต่อมา", "ตะปูจมลงไป", "นกร้องเพลง", "A")],
    "zh": [("那个男人打开了水龙头。接下来发生了什么？", "水流了出来", "灯灭了", "A"),
           ("女孩在床上发现了一只虫子。原因是什么？", "她睡着了", "窗户开着", "B"),
           ("女人用锤子敲钉子。接下来发生了什么？", "钉子钉进去了", "鸟在唱歌", "A")],
}  # fmt: skip


def _xcopa(folder: Path, languages: tuple[str, ...] = tuple(PREMISES)) -> str:
    for lang in languages:
        path = folder / lang / f"test.{lang}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = [{"premise": q, "choice1": a, "choice2": b, "label": gold}
                for q, a, b, gold in PREMISES[lang]]  # fmt: skip
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return str(folder / "{lang}" / "test.{lang}.jsonl")


def _one_file(path: Path, rows: list[tuple[str, str, str, str]]) -> str:
    lines = ["question\tA\tB\tanswer"] + ["\t".join(r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def test_any_iso_code_is_each_items_language(tmp_path: Path) -> None:
    drafted = draft(ROOT, "planted", _xcopa(tmp_path / "xcopa"), None)
    assert drafted.proposal.columns["language"] == "lang"
    assert list(drafted.spec.languages) == ["et", "ht", "qu", "th", "zh"]
    assert drafted.trial.note() == "trial load: 15 of 15 sampled rows become items"


def test_check_prints_items_per_language_and_passes(
    project: Path,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    contract: Callable[[str], None],
) -> None:
    source = _xcopa(tmp_path_factory.mktemp("downloads") / "xcopa")
    args = ["--root", str(project), "benchmark", "add", "xcopa", "--from", source, "--no-test"]
    assert main(args) == 0
    contract("xcopa")  # the contract run `add` makes, in this process (conftest.py says why)
    capsys.readouterr()
    assert main(["--root", str(project), "benchmark", "check", "xcopa"]) == 0
    out = capsys.readouterr().out
    assert "items per language: et 3, ht 3, qu 3, th 3, zh 3" in out


def test_validate_fails_a_set_whose_language_is_not_its_script(tmp_path: Path) -> None:
    """Thai and Chinese questions declared English: validate fails, naming each item."""
    rows = [(q, a, b, g) for lang in ("th", "zh", "et") for q, a, b, g in PREMISES[lang]]
    spec = BenchmarkSpec.from_config({
        "name": "mixed", "source": {"kind": "file", "path": _one_file(tmp_path / "m.tsv", rows)},
        "columns": {"question": "question", "options": ["A", "B"], "answer": "answer"},
        "languages": {"en": {}}, "settings": ["mcq-none-en"],
    })  # fmt: skip
    items = items_frame(load_benchmark(spec).items["en"])
    report = run_suite(ROOT / "expectations/generic_mcq_items.json", items, root=ROOT)
    failed = {f["expectation"]: f["detail"] for f in report.failures}
    assert list(failed) == ["expect_question_scripts_to_match_language"]
    lines = failed["expect_question_scripts_to_match_language"]
    assert lines.startswith("6 items are written in another script than their language's")
    assert "mixed-000001 (en): question written in Thai (0 of " in lines
    assert "mixed-000004 (en): question written in Han (0 of " in lines
    assert "mixed-000007" not in lines  # Estonian is Latin: rightly 'en' as far as script goes


def test_add_refuses_a_language_its_rows_contradict(
    project: Path, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--language en`` on Thai and Chinese rows: the contract test on the fixture says so."""
    rows = [(q, a, b, g) for lang in ("th", "zh") for q, a, b, g in PREMISES[lang]]
    source = _one_file(tmp_path_factory.mktemp("downloads") / "mixed.tsv", rows)
    args = ["--root", str(project), "benchmark", "add", "mixed", "--from", source]
    assert main([*args, "--language", "en"]) != 0
    assert "the contract test failed for 'mixed'" in capsys.readouterr().err


def test_a_script_of_one_language_names_the_language_without_flag(tmp_path: Path) -> None:
    drafted = draft(ROOT, "planted", _one_file(tmp_path / "thai.tsv", PREMISES["th"]), None)
    assert list(drafted.spec.languages) == ["th"]
    said = "language: every item is 'th' (no --language given; the questions are written in Thai"
    assert any(n.startswith(said) for n in drafted.proposal.notes)


def test_latin_text_without_a_language_says_it_is_tagged_en(tmp_path: Path) -> None:
    drafted = draft(ROOT, "planted", _one_file(tmp_path / "ht.tsv", PREMISES["ht"]), None)
    assert list(drafted.spec.languages) == ["en"]
    assert any("the questions are in Latin script, which does not name a language: pass "
               "--language with any BCP 47 code" in n for n in drafted.proposal.notes)  # fmt: skip


def test_a_shared_script_without_a_language_is_refused(tmp_path: Path) -> None:
    rows = [("Какой город является столицей Индонезии?", "Джакарта", "Бандунг", "A"),
            ("Какое блюдо родом из Паданга?", "Гудег", "Ренданг", "B")]  # fmt: skip
    refused = r"the questions are written in Cyrillic, which several languages share, and no "
    with pytest.raises(SourceError, match=refused):
        draft(ROOT, "planted", _one_file(tmp_path / "ru.tsv", rows), None)


@pytest.mark.parametrize(
    ("text", "script", "language", "wrong"),
    [("ชายคนนั้นเปิดก๊อกน้ำ", "Thai", "en", True),
     ("那个男人打开了水龙头。", "Hani", "en", True),
     ("その男は蛇口を開けた。", "Jpan", "ja", False),
     ("그 남자는 수도꼭지를 열었다", "Kore", "ko", False),
     ("那个男人打开了水龙头。", "Hani", "ja", False),
     ("Nonm lan louvri robinè a.", "Latn", "ht", False),
     ("Nonm lan louvri robinè a.", "Latn", "th", True),
     ("2 + 2 = ?", None, "th", False)],
)  # fmt: skip
def test_a_texts_script_against_its_language(
    text: str, script: str | None, language: str, wrong: bool
) -> None:
    assert text_script(text) == script
    assert (mismatch(text, language) is not None) == wrong


def test_the_script_names_a_language_only_when_one_language_writes_it() -> None:
    assert guess_language(["ชายคนนั้นเปิดก๊อกน้ำ", "ไฟดับ"]) == ("th", "Thai")
    assert guess_language(["그 남자는 수도꼭지를 열었다"]) == ("ko", "Korean (Hangul)")
    assert guess_language(["那个男人打开了水龙头。"]) == ("zh", "Han")
    assert guess_language(["Какой город?"]) is None and guess_language(["The man"]) is None


def test_the_script_check_lists_each_mislabelled_item() -> None:
    frame = pd.DataFrame({
        "item_id": ["a", "b", "c"], "language": ["en", "en", "th"],
        "question": ["Which city?", "ชายคนนั้นเปิดก๊อกน้ำ", "ชายคนนั้นเปิดก๊อกน้ำ"],
    })  # fmt: skip
    problems = script_problems(frame)
    assert list(problems) == ["b (en)"]
    assert problems["b (en)"].startswith("question written in Thai (0 of ")
