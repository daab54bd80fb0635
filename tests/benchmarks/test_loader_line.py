"""The one loader: each row's fate counted once, labels only as a consistent sequence, bounded
templates, and ``rows.keep`` errors that quote the value as rendered."""

from __future__ import annotations

import csv
import re
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from cultureqa.benchmarks.load import LoadedSource, load_benchmark
from cultureqa.benchmarks.spec import BenchmarkSpec, SpecError
from cultureqa.core.io import SourceError


def _spec(path: str, **over: Any) -> BenchmarkSpec:
    columns = {"id": "id", "question": "q", "options": ["o1", "o2", "o3"], "answer": "a"}
    columns.update(over.pop("columns", {}))
    cfg = {
        "name": "line",
        "source": {"kind": "file", "path": path},
        "columns": columns,
        "languages": {"en": {}},
        "settings": ["mcq-none-en"],
        **over,
    }
    return BenchmarkSpec.from_config(cfg)


def _csv(tmp_path: Path, rows: list[dict[str, Any]], name: str = "src.csv") -> str:
    with (tmp_path / name).open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return name


def _row(n: int, a: str = "A", **over: Any) -> dict[str, Any]:
    return {"id": f"r{n}", "q": f"Question {n}?", "o1": f"x{n}", "o2": f"y{n}", "o3": f"z{n}",
            "a": a, "split": "test", **over}  # fmt: skip


def _load(tmp_path: Path, spec: BenchmarkSpec) -> LoadedSource:
    return load_benchmark(spec, tmp_path)


# --- each row's fate counted once -------------------------------------------------------------


def test_every_row_is_skipped_dropped_or_loaded_exactly_once(tmp_path: Path) -> None:
    rows = [_row(n, a="ABC"[n % 3]) for n in range(1, 41)]
    rows[3]["o2"] = rows[3]["o1"]  # a repeated option: dropped
    rows[5]["split"] = "dev"  # skipped by rows.keep
    rows[7]["a"] = "Z"  # not a letter among the options: dropped
    spec = _spec(
        _csv(tmp_path, rows),
        rows={"invalid": "drop", "max_invalid_share": 0.1, "keep": {"split": "test"}},
        sample={"n": 30, "seed": 3},
    )
    loaded = _load(tmp_path, spec)
    record = loaded.counts.record()
    assert (record["rows_read"], record["rows_skipped"], record["rows_dropped"]) == (40, 1, 2)
    assert record["rows_loaded"] == 37 and loaded.counts.balanced()
    assert record["dropped_by_reason"] == {"answer_out_of_range": 1, "duplicate_option": 1}
    # the sample is drawn after validation: 30 asked, 30 valid items evaluated
    assert len(loaded.items["en"]) == 30 and len(loaded.whole["en"]) == 37


# --- option labels: a consistent sequence or an error -------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["B. konro", "kuah beulangong", "rawon"], r"option\(s\) A 'B. konro' start with a label"),
        (["A. konro", "A. rawon", "C. soto"], r"start with a label, but not every option"),
        (["A. konro", "rawon", "soto"], r"A 'A. konro' start with a label"),
        (["konro", "B.", "soto"], r"option\(s\) \['B'\] hold only a label \('B.'\), no text"),
    ],
)
def test_inconsistent_label_prefixes_are_an_error_naming_the_row(
    tmp_path: Path, options: list[str], message: str
) -> None:
    rows = [_row(1), _row(2, o1=options[0], o2=options[1], o3=options[2])]
    spec = _spec(_csv(tmp_path, rows))
    with pytest.raises(SourceError, match=rf"src.csv, row 2, column 'o1,o2,o3'.*{message}"):
        _load(tmp_path, spec)


def test_text_that_looks_like_a_label_is_text(tmp_path: Path) -> None:
    """TurkishMMLU's Roman numeral option "I." among five options, and initials, stay text."""
    turkish = {"o1": "I.", "o2": "II.", "o3": "I ve II"}
    initials = {"o1": "G. A. Siwabessy", "o2": "A. H. Nasution", "o3": "J. P. Coen"}
    spec = _spec(_csv(tmp_path, [_row(1, **turkish), _row(2, a="B", **initials)]))
    first, second = _load(tmp_path, spec).items["en"]
    assert first.options == ("I.", "II.", "I ve II")
    assert second.options == ("G. A. Siwabessy", "A. H. Nasution", "J. P. Coen")


def test_a_consistent_sequence_is_still_stripped(tmp_path: Path) -> None:
    rows = [_row(1, o1="A. konro", o2="B. rawon", o3="C. soto")]
    loaded = _load(tmp_path, _spec(_csv(tmp_path, rows)))
    assert loaded.items["en"][0].options == ("konro", "rawon", "soto")
    assert loaded.counts.labels_stripped == 1


def test_inconsistent_labels_can_be_dropped_and_counted(tmp_path: Path) -> None:
    rows = [_row(n) for n in range(1, 30)]
    rows[4]["o1"] = "B. konro"
    spec = _spec(_csv(tmp_path, rows), rows={"invalid": "drop"})
    loaded = _load(tmp_path, spec)
    assert loaded.counts.dropped_by_reason() == {"labels_inconsistent": 1}


# --- templates: bounded in size and time --------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{{ 'x' * 10**8 }}", "the product would hold 100,000,000 characters"),
        ("{{ q * 10**8 }}", "the product would hold"),
        ("{{ 'x'.ljust(10**9) }}", "the string method was asked for"),
        ("{% for i in range(3000) %}{% for j in range(3000) %}{% endfor %}{% endfor %}{{ q }}",
         "took longer than template_limits.max_seconds 0.5 s"),
        ("{% for i in range(100000) %}{{ q }}{% endfor %}", "rendered 100,0"),
        ("{{ 9 ** (10**9) }}", "the power would have"),
        ("{{ q|center(10**9) }}", "the filter 'center' was asked for 1,000,000,000"),
        ("{{ '%999999999s' % q }}", "the format string asks for 999,999,999"),
        ("{{ '%*s' % (10**9, q) }}", "the format was asked for"),
        ("{{ '{:>999999999}'.format(q) }}", "the format string asks for"),
        ("{{ '{:>{w}}'.format(q, w=10**9) }}", "the format was asked for"),
        ("{{ '%999999999s'|format(q) }}", "the format string asks for"),
        ("{{ ([q * 1000] * 10000)|join }}", "the product would hold"),
        ("{{ ('x' * 90000)|replace('x', 'yy') }}", "the filter 'replace' would build"),
        ("{{ ('x' * 90000).replace('x', 'yy') }}", "the string method would build"),
        ("{{ ('x\\n' * 40000)|indent(100) }}", "the filter 'indent' would build"),
        ("{{ ('x' * 9000)|wordwrap(1, wrapstring='-' * 50) }}", "the filter 'wordwrap' would"),
        ("{% set ns = namespace(s=q) %}{% for i in range(60) %}{% set ns.s = ns.s ~ ns.s %}"
         "{% endfor %}{{ ns.s|length }}", "the result would hold"),
    ],
)  # fmt: skip
def test_a_runaway_template_is_an_error_naming_template_and_row(
    tmp_path: Path, template: str, message: str
) -> None:
    spec = _spec(
        _csv(tmp_path, [_row(1), _row(2)]),
        columns={"question": template},
        template_limits={"max_chars": 100_000, "max_seconds": 0.5},
    )
    start = time.monotonic()
    tracemalloc.start()
    try:
        with pytest.raises(SourceError, match=r"src.csv, row 1, column '.*': template ") as caught:
            _load(tmp_path, spec)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
    assert time.monotonic() - start < 5
    assert peak < 50_000_000, f"the refused render allocated {peak:,} bytes"


@pytest.mark.parametrize(
    ("template", "message"),
    [("{{ 1 // 0 }}", "failed: ZeroDivisionError: integer division or modulo by zero"),
     ("{{ '%d' % q }}", "failed: TypeError: %d format: a real number is required, not str"),
     ("{{ q.nope() }}", "failed: ")],
)  # fmt: skip
def test_a_template_raising_any_error_is_one_row_error(
    tmp_path: Path, template: str, message: str
) -> None:
    spec = _spec(_csv(tmp_path, [_row(1), _row(2)]), columns={"question": template})
    with pytest.raises(SourceError, match=r"src.csv, row 1, column '.*': template .*") as caught:
        _load(tmp_path, spec)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_template_that_does_not_parse_is_one_line_naming_it(tmp_path: Path) -> None:
    spec = _spec(_csv(tmp_path, [_row(1)]), columns={"question": "{{ q if }}\n{{ q }}"})
    with pytest.raises(SourceError, match=r"src.csv: template .* is not valid Jinja: .*line 1"):
        _load(tmp_path, spec)


def test_template_limits_are_checked_keys() -> None:
    with pytest.raises(SpecError, match=r"template_limits\.max_seconds must be a positive number"):
        _spec("x.csv", template_limits={"max_seconds": 0})
    with pytest.raises(SpecError, match=r"unknown key\(s\) \['template_limits.seconds'\]"):
        _spec("x.csv", template_limits={"seconds": 1})


def test_an_ordinary_template_loop_is_not_limited(tmp_path: Path) -> None:
    template = "{% for w in q.split() %}{{ w|upper }} {% endfor %}"
    spec = _spec(_csv(tmp_path, [_row(1)]), columns={"question": template})
    assert _load(tmp_path, spec).items["en"][0].question == "QUESTION 1?"


def test_rows_keep_error_quotes_the_value_as_rendered(tmp_path: Path) -> None:
    long = "Split Of The Benchmark Named In Full, Well Past Forty Characters"
    spec = _spec(_csv(tmp_path, [_row(1, split=long)]), rows={"keep": "{{ split }}"})
    with pytest.raises(SourceError, match="must render True or False") as caught:
        _load(tmp_path, spec)
    assert repr(long) in str(caught.value)


# --- encodings ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("encoding", "name", "said"),
    [
        ("utf-16", "src.csv", "UTF-16 little-endian (byte-order mark ff fe)"),
        ("utf-16-be", "src.tsv", "UTF-16 big-endian (no byte-order mark"),
        ("utf-16-le", "src.jsonl", "UTF-16 little-endian (no byte-order mark"),
    ],
)
def test_a_utf16_file_is_named_utf16(tmp_path: Path, encoding: str, name: str, said: str) -> None:
    if name.endswith(".jsonl"):
        body = '{"id": "r1", "q": "Apa?", "o1": "x", "o2": "y", "o3": "z", "a": "A"}\n'
    else:
        sep = "\t" if name.endswith(".tsv") else ","
        body = sep.join(["id", "q", "o1", "o2", "o3", "a"]) + "\n"
        body += sep.join(["r1", "Makanan khas?", "rendang", "gudeg", "soto", "A"]) + "\n"
    (tmp_path / name).write_text(body, encoding=encoding)
    with pytest.raises(
        SourceError, match=rf"{name}: file is {re.escape(said)}.*not UTF-8; save it"
    ):
        _load(tmp_path, _spec(name))
