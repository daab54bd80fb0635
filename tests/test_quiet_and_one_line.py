"""The last tracebacks and the noise (issue 25 items 10 and 13), planted one by one.

A Jinja template past the sandbox's range limit, an ``expectations:`` path that is not JSON, is
missing or lies outside the project, and ``python -m cultureqa.compose --help`` each end in one
``error:`` line (rc 2) or in help, never a traceback; a passing validate prints no GX INFO lines
and no stray ``[]``; an ``error:`` line never continues a progress bar's line.
"""

from __future__ import annotations

import re
import runpy
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from cultureqa.benchmarks.fields import FieldError, resolve
from cultureqa.core.config import run_stage
from cultureqa.core.io import SourceError
from cultureqa.core.params_digest import digest

ROOT = Path(__file__).resolve().parents[1]
ENV = {"PYTHONPATH": str(ROOT / "src"), "CULTUREQA_LOG_LEVEL": "INFO"}


def test_a_template_past_the_sandbox_range_limit_is_a_field_error() -> None:
    with pytest.raises(FieldError, match="the sandbox refused it"):
        resolve({"q": "x"}, "{{ range(10 ** 7) | list | length }}")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for folder in ("conf", "prompts", "expectations", "data/sources", "data/knowledge"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    shutil.copy(ROOT / "dvc.yaml", tmp_path / "dvc.yaml")
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    return tmp_path


def _validate(project: Path, expectations: str) -> Callable[[], int]:
    params = OmegaConf.load(project / "params.yaml")
    params.benchmarks.indoculture.expectations = expectations
    params.benchmarks.indoculture.digest = digest(params.benchmarks.indoculture)  # as -S composes
    OmegaConf.save(params, project / "params.yaml")
    main = runpy.run_path(str(ROOT / "stages" / "validate.py"), run_name="stage")["main"]
    return lambda: int(main(["--benchmark", "indoculture"]))


@pytest.mark.parametrize(
    ("suite", "content", "says"),
    [
        ("expectations/broken.json", "{not json", "expectations suite is not JSON: Expecting"),
        ("expectations/none.json", None, "expectations suite not found"),
        ("../outside.json", "{}", "expectations suite outside the project"),
    ],
)
def test_a_bad_expectations_path_is_one_line(
    project: Path, capsys: pytest.CaptureFixture[str], suite: str, content: str | None, says: str
) -> None:
    if content is not None:
        (project / suite).write_text(content, encoding="utf-8")
    stage = _validate(project, suite)
    capsys.readouterr()
    assert run_stage(stage) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {project / suite}: {says}"), err


def test_compose_help_and_a_bad_override_print_no_traceback() -> None:
    helped = subprocess.run(
        [sys.executable, "-m", "cultureqa.compose", "--help"], cwd=ROOT, capture_output=True,
        text=True, env={**ENV, "PATH": ""},
    )  # fmt: skip
    assert helped.returncode == 0 and helped.stdout.startswith("usage: python -m cultureqa.compose")
    bad = subprocess.run(
        [sys.executable, "-m", "cultureqa.compose", "model=nope"], cwd=ROOT, capture_output=True,
        text=True, env=ENV,
    )  # fmt: skip
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().startswith(
        "error: cannot compose conf/: override 'model=nope': 'nope' is not an option of model"
    )


def test_a_passing_validate_prints_no_gx_info_and_no_stray_brackets(project: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "stages" / "validate.py"), "--benchmark", "indoculture"],
        cwd=project, capture_output=True, text=True, env={**ENV, "DVC_ROOT": str(project)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = (done.stdout + done.stderr).splitlines()
    assert not [x for x in lines if "great_expectations" in x], lines
    assert "[]" not in [x.strip() for x in lines]
    assert lines[-1].startswith("ok: ") and "expectation checks pass" in lines[-1], lines


def test_an_error_line_starts_on_a_fresh_line_under_a_live_progress_bar(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tqdm import tqdm

    bar = tqdm(total=10, desc="evaluate", file=sys.stderr)
    bar.update(3)

    def fails() -> int:
        raise SourceError("data/x.csv", "planted")

    try:
        assert run_stage(fails) == 2
    finally:
        bar.close()
    segments = re.split(r"[\r\n]", capsys.readouterr().err)
    assert "error: data/x.csv: planted" in segments  # a line of its own, not after the bar


def test_every_stage_checks_its_suite_path_against_the_project() -> None:
    """Suites are declared inputs like sources: each stage's run_suite call passes the root."""
    import ast

    calls = []
    for script in sorted((ROOT / "stages").glob("*.py")):
        for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "run_suite":
                calls.append((script.name, any(k.arg == "root" for k in node.keywords)))
    assert "cases_validate.py" in {name for name, _ in calls}
    assert [name for name, has_root in calls if not has_root] == []
