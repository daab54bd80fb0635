"""``cultureqa benchmark add/check`` and ``params check`` in a scratch copy of the project."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from cultureqa.cli import main
from cultureqa.core.params_digest import digest

ROOT = Path(__file__).resolve().parents[2]
CITIES = [  # city, options, gold letter, region (capitals as of 2024, Kemendagri)
    ("Medan", ["North Sumatra", "Aceh", "Riau", "Jambi"], "A", "Sumatra"),
    ("Padang", ["Riau", "West Sumatra", "Jambi", "Aceh"], "B", "Sumatra"),
    ("Semarang", ["East Java", "Bali", "Central Java", "Banten"], "C", "Java"),
    ("Denpasar", ["Banten", "East Java", "Lampung", "Bali"], "D", "Bali"),
    ("Surabaya", ["East Java", "Bali", "Banten", "Lampung"], "A", "Java"),
    ("Serang", ["Bali", "Banten", "Lampung", "Jambi"], "B", "Java"),
    ("Mataram", ["Bali", "Banten", "West Nusa Tenggara", "Jambi"], "C", "Nusa Tenggara"),
    ("Kupang", ["Bali", "Banten", "Jambi", "East Nusa Tenggara"], "D", "Nusa Tenggara"),
]
ROWS = [(f"Which province's capital is {c}?", *o, g, r) for c, o, g, r in CITIES]


def _csv(path: Path) -> Path:
    lines = ["Question,A,B,C,D,Answer,Region"]
    lines += [",".join(f'"{cell}"' for cell in row) for row in ROWS]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_add_writes_config_fixture_entries_and_passes_the_contract(
    project: Path, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = _csv(tmp_path_factory.mktemp("downloads") / "capitals.csv")
    args = ["--root", str(project), "benchmark", "add", "capitals", "--from", str(outside)]
    assert main(args) == 0, capsys.readouterr()
    config = OmegaConf.load(project / "conf/benchmark/capitals.yaml")
    assert config.source.path == "data/sources/capitals/capitals.csv"  # copied: DVC-tracked
    assert config.columns.options == ["A", "B", "C", "D"] and config.columns.id is None
    assert config.columns.answer_format == "letter" and list(config.columns.metadata) == ["Region"]
    fixture = project / "tests/fixtures/benchmarks/capitals.csv"
    assert len(fixture.read_text().splitlines()) == 6  # header + five rows
    params = OmegaConf.load(project / "params.yaml")
    assert "capitals" in params.benchmarks and "capitals" in params.evaluate.benchmarks
    assert main(["--root", str(project), "benchmark", "check", "capitals"]) == 0
    out = capsys.readouterr().out
    assert "ids are synthesized" in out and "ok: 19 expectation checks pass" in out
    assert main(["--root", str(project), "params", "check"]) == 0


def test_add_copies_a_file_into_the_benchmarks_own_folder(project: Path) -> None:
    source = project / "data/sources/traditional_houses/traditional_houses.jsonl"
    args = [
        "--root",
        str(project),
        "benchmark",
        "add",
        "houses",
        "--from",
        str(source),
        "--no-test",
    ]
    assert main(args) == 0
    config = OmegaConf.load(project / "conf/benchmark/houses.yaml")
    assert config.source.path == "data/sources/houses/traditional_houses.jsonl"  # its DVC dep
    assert (project / config.source.path).read_bytes() == source.read_bytes()
    assert config.columns.options == {"from": "choices", "transform": "record"}


def test_add_from_a_pattern_copies_the_files_with_their_folders(
    project: Path,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    contract: Callable[[str], None],
) -> None:
    """``--from 'raw/{island}/{topic}.json'``: captures become metadata, folders are kept."""
    raw = tmp_path_factory.mktemp("downloads") / "raw"
    shutil.copytree(ROOT / "data/sources/island_culture/islands", raw)
    pattern = str(raw / "{island}" / "{topic}.json")
    args = ["--root", str(project), "benchmark", "add", "isl", "--from", pattern, "--no-test"]
    assert main(args) == 0
    contract("isl")  # the contract run `add` makes, in this process (conftest.py says why)
    out = capsys.readouterr().out
    assert "trial load: 5 of 5 sampled rows become items" in out
    config = OmegaConf.load(project / "conf/benchmark/isl.yaml")
    assert config.source.path == "data/sources/isl/{island}/{topic}.json"
    assert list(config.columns.metadata) == ["island", "topic"]
    assert OmegaConf.to_container(config.slices) == [["island"], ["topic"]]
    copied = sorted(p.relative_to(project / "data/sources/isl").as_posix()
                    for p in (project / "data/sources/isl").rglob("*.json"))  # fmt: skip
    assert copied == ["bali/calendar.json", "bali/music.json", "java/language.json",
                      "java/music.json", "sumatra/language.json"]  # fmt: skip
    fixture = project / "tests/fixtures/benchmarks/isl"
    assert len(list(fixture.rglob("*.json"))) == 5  # one row from each file, folders mirrored
    assert (fixture / "java/music.json").read_text() != ""


def test_add_fails_in_one_line_when_it_cannot_tell(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = project / "data/sources/odd.csv"
    source.write_text("x,y\n1,2\n")
    assert main(["--root", str(project), "benchmark", "add", "odd", "--from", str(source)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "cannot tell which field holds the answer" in err
    assert not (project / "conf/benchmark/odd.yaml").exists()


def test_stale_params_say_run_make_params(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = project / "conf/config.yaml"
    config.write_text(config.read_text().replace("seed: 13", "seed: 14"))
    assert main(["--root", str(project), "params", "check"]) == 2
    assert "params.yaml is stale" in capsys.readouterr().err
    assert main(["--root", str(project), "benchmark", "check", "indoculture"]) == 2
    assert "run make params" in capsys.readouterr().err


def test_check_after_a_deliberate_override_does_not_call_params_stale(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`dvc exp run -S benchmarks.indoculture.version=2` leaves params.yaml newer than conf/."""
    path = project / "params.yaml"
    params = OmegaConf.load(path)
    params.benchmarks.indoculture.version = 2
    params.benchmarks.indoculture.digest = digest(params.benchmarks.indoculture)  # as -S composes
    OmegaConf.save(params, path)
    assert main(["--root", str(project), "benchmark", "check", "indoculture"]) == 0
    err = capsys.readouterr().err
    assert "params.yaml holds values conf/ does not (benchmarks.indoculture." in err
    assert "benchmarks.indoculture.version: 2 (conf/: 1)" in err
    assert "stale" not in err


def test_check_names_a_benchmark_missing_from_params(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--root", str(project), "benchmark", "check", "nope"]) == 2
    assert "benchmark 'nope' is not in params.yaml" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("file", "options", "answer_format"),
    [
        ("regional_dances.csv", {"from": "options", "transform": "letter_dict"}, "letter"),
        ("regional_dishes.csv", {"from": "options", "transform": "delimited", "sep": "|"}, "text"),
        ("traditional_houses.jsonl", {"from": "choices", "transform": "record"}, "letter"),
        ("national_figures.tsv", ["A", "B", "C", "D"], "letter"),
        ("landmarks_hf_parquet", "choices", "index"),
    ],
)
def test_sniffer_recognises_the_layouts(file: str, options: object, answer_format: str) -> None:
    from cultureqa.authoring.sniff import propose, read_sample

    path = ROOT / "data/sources" / file.split(".")[0] / (file if "." in file else "")
    columns = propose(read_sample(str(path))).columns
    assert columns["options"] == options and columns["answer_format"] == answer_format


def test_sniffer_proposes_a_published_layout_and_no_model_output_slices(tmp_path: Path) -> None:
    from cultureqa.authoring.sniff import propose, read_sample

    sample = read_sample(str(ROOT / "data/sources/kuis_budaya/kuis_budaya.csv"))
    sample.frame["model_prediction"] = ["A", "B"] * 12  # a model's output column beside the data
    proposal = propose(sample)
    columns = proposal.columns
    assert columns["question"] == "Pertanyaan" and columns["answer"] == "Kunci"
    assert columns["options"] == [f"Pilihan-{x}" for x in "ABCDE"]
    assert columns["answer_format"] == "letter" and columns["answer_sep"] == ","
    assert columns["option_counts"] == [4, 5]
    assert columns["metadata"] == [{"provinsi_asal": "Provinsi Asal"}]
    assert proposal.slices == [["provinsi_asal"]] and proposal.rows == {"keep": {"Split": "test"}}
    assert any("'model_prediction' looks like a model's output" in n for n in proposal.notes)
