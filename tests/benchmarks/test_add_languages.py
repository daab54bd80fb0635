"""``benchmark add`` gives each item its language from a path capture or a column, never mislabels.

Our own rows, written here: a three-language TSV set with one file per language (named by the
language, or by its code in a folder), a one-file set with a language column, and sets whose
captures and columns are splits or topics, which must never become languages. ``--language`` is the
fallback only when nothing per item is found, and a ``--language`` the items contradict is a note.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from cultureqa.authoring.add import Drafted, draft
from cultureqa.authoring.sniff.languages import language_code
from cultureqa.benchmarks.load import load_benchmark
from cultureqa.cli import main
from cultureqa.core.records import McqItem

ROOT = Path(__file__).resolve().parents[2]
ROWS = {  # language: (question, options A-C, gold letter)
    "id": [("Makanan khas Padang adalah", "rendang", "gudeg", "pempek", "A"),
           ("Tarian dari Aceh adalah", "kecak", "saman", "jaipong", "B"),
           ("Rumah adat Toraja adalah", "gadang", "joglo", "tongkonan", "C"),
           ("Kota yang terkenal dengan gudeg adalah", "Yogyakarta", "Medan", "Padang", "A")],
    "su": [("Kadaharan has Bandung nyaéta", "rendang", "batagor", "papeda", "B"),
           ("Ibukota Jawa Barat nyaéta", "Bogor", "Garut", "Bandung", "C"),
           ("Alat musik tina awi nyaéta", "angklung", "gamelan", "sasando", "A")],
    "en": [("A dish from Palembang is", "pempek", "gudeg", "rendang", "A"),
           ("Saman is a dance from", "Bali", "Aceh", "Java", "B"),
           ("Tongkonan houses are built by the", "Batak", "Dani", "Toraja", "C")],
}  # fmt: skip
NAMES = {"id": "indonesian", "su": "sundanese", "en": "english"}
HEADER = "question\tA\tB\tC\tanswer"


def _tsv(path: Path, rows: list[tuple[str, ...]], extra: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [HEADER + (f"\t{extra}" if extra else "")] + ["\t".join(r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _by_file(folder: Path, name: dict[str, str], layout: str) -> str:
    """One file per language at ``layout`` (``{lang}.tsv``, ``{lang}/test.tsv``)."""
    for lang, rows in ROWS.items():
        _tsv(folder / layout.format(lang=name.get(lang, lang)), rows)
    return str(folder / layout)


def _items(drafted: Drafted) -> dict[str, list[McqItem]]:
    loaded = load_benchmark(drafted.spec, rows=(drafted.sample.frame, "planted"))
    return loaded.whole


def _languages_of(items: dict[str, list[McqItem]]) -> dict[str, list[str]]:
    return {lang: sorted(i.question for i in batch) for lang, batch in items.items() if batch}


def _questions() -> dict[str, list[str]]:
    return {lang: sorted(r[0] for r in rows) for lang, rows in ROWS.items()}


@pytest.mark.parametrize(
    ("value", "code"),
    [("su", "su"), ("Sundanese", "su"), ("sun", "su"), ("ind", "id"), ("Bahasa Indonesia", "id"),
     ("id-ID", "id"), ("zh_Hant_TW", "zh"), ("KOR", "ko"), ("jv", "jv"), ("train", None),
     ("test", None), ("war", None), ("music", None), ("Indonesia", None), ("en-", None),
     ("pt-BR", "pt"), ("es-419", "es"), ("sr-Latn-RS", "sr"), ("zh-yue", "yue"),
     ("zh_yue_HK", "yue"), ("en_aug", None), ("fa_aug", None), ("id_test", None),
     ("su-x", None), ("zh-xyz", None)],
)  # fmt: skip
def test_a_value_is_a_language_only_by_the_table(value: str, code: str | None) -> None:
    assert language_code(value) == code


def test_one_file_per_language_named_by_the_language(tmp_path: Path) -> None:
    drafted = draft(ROOT, "planted", _by_file(tmp_path, NAMES, "{lang}.tsv"), None)
    columns = drafted.proposal.columns
    assert columns["language"] == {"from": "lang", "values": {"english": "en",
                                   "indonesian": "id", "sundanese": "su"}}  # fmt: skip
    assert columns["metadata"] == [] and drafted.proposal.slices == [["language"]]
    assert list(drafted.spec.languages) == ["en", "id", "su"]
    assert [s.name for s in drafted.spec.settings] == ["mcq-none-en", "mcq-none-id", "mcq-none-su"]
    assert (
        "language: each item its own, from path capture {lang} (english → en, indonesian → "
        "id, sundanese → su): columns.language, languages en, id, su"
    ) in drafted.proposal.notes
    assert _languages_of(_items(drafted)) == _questions()  # fmt: skip
    assert drafted.trial.note() == "trial load: 10 of 10 sampled rows become items"


def test_one_folder_per_language_code_needs_no_mapping(tmp_path: Path) -> None:
    drafted = draft(ROOT, "planted", _by_file(tmp_path, {}, "{lang}/test.tsv"), "id")
    assert drafted.proposal.columns["language"] == "lang"
    assert _languages_of(_items(drafted)) == _questions()
    assert not any(n.startswith("--language") for n in drafted.proposal.notes)  # id is one
    assert ("language: each item its own, from path capture {lang} (en, id, su): "
            "columns.language, languages en, id, su (not --language id for all)"
            ) in drafted.proposal.notes  # fmt: skip


def test_a_language_column_in_one_file(tmp_path: Path) -> None:
    codes = {"id": "ind", "su": "sun", "en": "eng"}  # ISO 639-2 codes, as some sets write them
    rows = [(*row, codes[lang]) for lang, batch in ROWS.items() for row in batch]
    _tsv(tmp_path / "all.tsv", rows, "lang")
    drafted = draft(ROOT, "planted", str(tmp_path / "all.tsv"), None)
    columns = drafted.proposal.columns
    assert columns["language"] == {"from": "lang", "values": {"eng": "en", "ind": "id",
                                                              "sun": "su"}}  # fmt: skip
    assert "lang" not in str(columns["metadata"]) and drafted.proposal.slices == [["language"]]
    assert _languages_of(_items(drafted)) == _questions()


def test_a_yes_no_flag_named_language_is_metadata_not_a_mapping_to_write(
    tmp_path: Path,
) -> None:
    """COPAL's ``Language`` column says whether an item needs the local language (0/1)."""
    rows = [(*row, str(n % 2)) for n, row in enumerate(ROWS["id"])]
    _tsv(tmp_path / "copal.tsv", rows, "Language")
    drafted = draft(ROOT, "planted", str(tmp_path / "copal.tsv"), "id")
    assert "language" not in drafted.proposal.columns
    assert drafted.proposal.columns["metadata"] == ["Language"]
    assert (
        "column 'Language' is named as a language but holds a yes/no flag (0, 1): not each "
        "item's language (it may say whether an item needs one)"
    ) in drafted.proposal.notes
    assert not any("map them by hand" in n for n in drafted.proposal.notes)


def test_translation_columns_beside_a_language_column_are_a_note(tmp_path: Path) -> None:
    """Items with their own language cannot also be each row in every language: a note says so."""
    rows = [(*row, f"{row[0]} (en)", lang) for lang, batch in ROWS.items() for row in batch]
    path = tmp_path / "both.tsv"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"{HEADER}\tquestion_en\tlanguage"] + ["\t".join(r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    drafted = draft(ROOT, "planted", str(path), None)
    assert drafted.proposal.columns["language"] == "language"
    assert drafted.proposal.languages == {} and list(drafted.spec.languages) == ["en", "id", "su"]
    assert (
        "question_en: translations beside the question not proposed, since each item has one "
        "language; declare them by hand without columns.language"
    ) in drafted.proposal.notes
    assert _languages_of(_items(drafted)) == _questions()


def test_split_and_topic_captures_and_columns_are_never_languages(tmp_path: Path) -> None:
    topics = ("food", "dance", "house", "food")
    for split in ("train", "test", "validation"):
        rows = [(f"{q} ({split})", *rest, t) for (q, *rest), t in zip(ROWS["id"], topics,
                                                                       strict=True)]  # fmt: skip
        _tsv(tmp_path / "id" / f"{split}.tsv", rows, "topic")
    drafted = draft(ROOT, "planted", str(tmp_path / "id" / "{split}.tsv"), "id")
    columns = drafted.proposal.columns
    assert "language" not in columns and columns["metadata"] == ["topic"]
    assert drafted.proposal.rows == {"keep": {"split": "test"}}  # a split, and still no language
    assert list(drafted.spec.languages) == ["id"]
    assert (
        "language: every item is 'id' (--language id); no path capture or column holds "
        "language codes or names"
    ) in drafted.proposal.notes
    items = _items(drafted)
    assert list(items) == ["id"] and len(items["id"]) == 4
    assert all(i.question.endswith("(test)") for i in items["id"])


def test_a_capture_named_lang_that_holds_no_language_says_so(tmp_path: Path) -> None:
    """Registers (``halus``, ``loma``) beside ``english``: not all languages, so none is."""
    levels = {"id": "halus", "su": "loma", "en": "english"}
    drafted = draft(ROOT, "planted", _by_file(tmp_path, levels, "{lang}.tsv"), None)
    assert "language" not in drafted.proposal.columns
    assert any(n.startswith("path capture {lang} is named as a language but holds values add "
                            "does not know as languages (halus, loma)")
               for n in drafted.proposal.notes)  # fmt: skip
    assert any(n.startswith("language: every item is 'en' (no --language given; the questions are "
                            "in Latin script, which does not name a language: pass --language")
               for n in drafted.proposal.notes)  # fmt: skip


def test_a_language_the_items_contradict_is_one_line(tmp_path: Path) -> None:
    source = _by_file(tmp_path, NAMES, "{lang}.tsv")
    (tmp_path / "english.tsv").unlink()
    drafted = draft(ROOT, "planted", source, "en")
    conflict = [n for n in drafted.proposal.notes if n.startswith("--language")]
    assert conflict == ["--language en conflicts with the languages the items carry (id, su, "
                        "from path capture 'lang'): each item is tagged with its own, none with "
                        "en"]  # fmt: skip
    assert "\n" not in conflict[0] and list(drafted.spec.languages) == ["id", "su"]
    assert all(i.language != "en" for batch in _items(drafted).values() for i in batch)


CJK = {  # Korean and Chinese rows of our own, and the same questions in English
    "ko": [("김치의 주재료는 무엇입니까?", "배추", "쌀", "콩", "A"),
           ("한복은 어느 나라의 옷입니까?", "일본", "한국", "중국", "B")],
    "zh": [("端午节吃什么？", "月饼", "汤圆", "粽子", "C"),
           ("京剧起源于哪个城市？", "北京", "上海", "广州", "A")],
    "en": [("What is the main ingredient of kimchi?", "cabbage", "rice", "beans", "A"),
           ("Which dish is eaten at the Dragon Boat Festival?", "mooncake", "tangyuan",
            "zongzi", "C")],
}  # fmt: skip


def test_questions_in_their_script_make_a_capture_languages(tmp_path: Path) -> None:
    source = str(tmp_path / "{lang}" / "test.tsv")
    for lang, rows in CJK.items():
        _tsv(tmp_path / lang / "test.tsv", rows)
    drafted = draft(ROOT, "planted", source, None)
    assert drafted.proposal.columns["language"] == "lang"
    assert {k: len(v) for k, v in _items(drafted).items()} == {"en": 2, "ko": 2, "zh": 2}


def test_a_culture_in_english_questions_is_no_language(tmp_path: Path) -> None:
    """``{culture}/test.tsv`` named ko and zh, every question in English: not their language."""
    for culture in ("ko", "zh"):  # each culture's own wording, so no item repeats another
        rows = [(f"{q} ({culture.upper()})", *rest) for q, *rest in CJK["en"]]
        _tsv(tmp_path / culture / "test.tsv", rows)
    drafted = draft(ROOT, "planted", str(tmp_path / "{culture}" / "test.tsv"), "en")
    assert "language" not in drafted.proposal.columns
    assert ("path capture 'culture' names languages (ko, zh) but only 0% of the questions tagged "
            "ko are in its script: not each item's language (it may say what an item is about)"
            ) in drafted.proposal.notes  # fmt: skip
    assert {k: len(v) for k, v in _items(drafted).items()} == {"en": 4}


def test_a_file_in_another_script_among_english_ones_is_a_note(tmp_path: Path) -> None:
    """No capture names the language (``{part}``: topics), so all items are 'en', and it says so."""
    _tsv(tmp_path / "dishes.tsv", CJK["en"])
    _tsv(tmp_path / "festivals.tsv", CJK["zh"])
    drafted = draft(ROOT, "planted", str(tmp_path / "{part}.tsv"), None)
    assert "language" not in drafted.proposal.columns
    assert (
        "2 of 4 sampled questions are written in another script (2 in Han) than 'en' (Latin): "
        "give items their own language with columns.language (a path capture or column; "
        "docs/benchmarks-loading.md) or pass --language"
    ) in drafted.proposal.notes
    ko = draft(ROOT, "planted", str(tmp_path / "dishes.tsv"), "ko")
    assert (
        "2 of 2 sampled questions are written in another script (2 in Latin) than 'ko' (Han, "
        "Hangul): give items their own language with columns.language (a path capture or "
        "column; docs/benchmarks-loading.md) or pass --language"
    ) in ko.proposal.notes
    assert not any(
        "script" in n
        for n in draft(ROOT, "planted", str(tmp_path / "dishes.tsv"), "en").proposal.notes
    )


@pytest.mark.parametrize(
    ("column", "values"),
    [("culture", ("Malay", "Indonesian")), ("country", ("ID", "DE"))],
)
def test_a_column_of_language_names_or_country_codes_needs_a_language_name(
    tmp_path: Path, column: str, values: tuple[str, str]
) -> None:
    rows = [(*row, values[n % 2]) for n, row in enumerate(ROWS["en"] + ROWS["en"])]
    rows = [(f"{q} ({n})", *rest) for n, (q, *rest) in enumerate(rows)]
    _tsv(tmp_path / "one.tsv", rows, column)
    drafted = draft(ROOT, "planted", str(tmp_path / "one.tsv"), "en")
    assert "language" not in drafted.proposal.columns
    assert any(n.startswith(f"column '{column}' holds language names or codes (")
               and "not proposed as each item's language" in n
               for n in drafted.proposal.notes)  # fmt: skip
    assert list(drafted.spec.languages) == ["en"]
    renamed = tmp_path / "renamed.tsv"  # the plant: the same values under a language's name
    renamed.write_text((tmp_path / "one.tsv").read_text().replace(column, "lang_code"))
    assert "language" in draft(ROOT, "planted", str(renamed), "en").proposal.columns


@pytest.mark.parametrize("layout", ["files", "column"])
def test_add_writes_a_multilingual_config_that_passes_contract_and_check(
    project: Path,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    contract: Callable[[str], None],
    layout: str,
) -> None:
    raw = tmp_path_factory.mktemp("downloads")
    if layout == "files":
        source = _by_file(raw, NAMES, "{lang}.tsv")
    else:
        rows = [(*row, NAMES[lang].title()) for lang, batch in ROWS.items() for row in batch]
        _tsv(raw / "all.tsv", rows, "Language")
        source = str(raw / "all.tsv")
    args = ["--root", str(project), "benchmark", "add", "multi", "--from", source, "--no-test"]
    assert main([*args, "--language", "jv"]) == 0, capsys.readouterr()
    out = capsys.readouterr().out
    contract("multi")  # the contract run `add` makes, in this process (conftest.py says why)
    assert "note     --language jv conflicts with the languages the items carry (en, id, su" in out
    config = OmegaConf.load(project / "conf/benchmark/multi.yaml")
    assert list(config.languages) == ["en", "id", "su"]
    assert OmegaConf.to_container(config.slices) == [["language"]]
    assert main(["--root", str(project), "benchmark", "check", "multi"]) == 0
    out = capsys.readouterr().out
    assert "expectation checks pass" in out
