"""The documentation site builds offline with ``mkdocs build --strict``: no broken link or anchor.

`make docs` runs the same build. Strict mode turns every warning into a failure; mkdocs.yml
makes a link to a missing page, a missing ``#anchor`` or a page left out of ``nav`` a warning, so a
page renamed, a heading reworded or a page added without a ``nav`` entry fails here.

The pages must also name code that exists (module paths, ``cultureqa.*`` names), and messages in
src/, conf/ and stages/ must point to docs pages and sections that exist, not to README sections.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MKDOCS = [sys.executable, "-m", "mkdocs", "build", "--strict"]


def _build(project: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [*MKDOCS, "--config-file", str(project / "mkdocs.yml"), "--site-dir", str(site)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def test_the_site_builds_strict_with_every_page(tmp_path: Path) -> None:
    done = _build(ROOT, tmp_path / "site")
    assert done.returncode == 0, done.stderr[-3000:]
    pages = {p.stem for p in (ROOT / "docs").glob("*.md")}
    built = {p.stem for p in (tmp_path / "site").glob("*.html")}
    assert pages <= built, pages - built


def test_a_broken_link_a_missing_anchor_or_a_page_outside_nav_fails_the_build(
    tmp_path: Path,
) -> None:
    for planted, expected in (
        ("[x](nonesuch.md)", "nonesuch.md"),
        ("[x](pipeline.md#no-such-heading)", "no-such-heading"),
    ):
        project = tmp_path / expected
        shutil.copytree(ROOT / "docs", project / "docs")
        shutil.copy(ROOT / "mkdocs.yml", project / "mkdocs.yml")
        index = project / "docs" / "index.md"
        index.write_text(index.read_text(encoding="utf-8") + f"\n{planted}\n", encoding="utf-8")
        done = _build(project, project / "site")
        assert done.returncode != 0 and expected in done.stderr, done.stderr[-2000:]
    project = tmp_path / "orphan"
    shutil.copytree(ROOT / "docs", project / "docs")
    shutil.copy(ROOT / "mkdocs.yml", project / "mkdocs.yml")
    (project / "docs" / "orphan.md").write_text("# Orphan\n", encoding="utf-8")
    done = _build(project, project / "site")
    assert done.returncode != 0 and "orphan.md" in done.stderr, done.stderr[-2000:]


# Module paths and names quoted in the pages, and the pages that messages point to. Code moves
# (the response store became `llm/store/`, the loader `benchmarks/load/`) and the README was cut
# into docs/ pages: a page that names a file that is gone, or a message that sends the reader to
# a README section that is gone, fails here.
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SOURCES = sorted(
    p.relative_to(ROOT / "src").as_posix() for p in (ROOT / "src" / "cultureqa").rglob("*.py")
)
PATH = re.compile(
    r"(?<![\w./~-])(src/cultureqa/[\w./-]*[\w/]|cultureqa/[\w/-]*(?:\.py|/)"
    r"|[\w-]+(?:/[\w-]+)*/[\w-]+\.py)(?![\w/-])"
)
DOTTED = re.compile(r"(?<![\w./:@-])cultureqa(?:\.\w+)+")
DEFINES = re.compile(r"`([\w/.-]+\.py)` \(((?:`\w+`(?:, )?)+)\)")
POINTER = re.compile(r"\bdocs/([\w-]+\.md)(?:: ([A-Z][\w ]*\w))?")


def _tags() -> set[str]:
    """Dotted names that are MLflow tags, not modules (``cultureqa.group``)."""
    from cultureqa.runs.mlflow_runs import PARENT_TAG

    return {PARENT_TAG}


def _path_exists(path: str) -> bool:
    if path.startswith("src/"):
        return (ROOT / path).exists()
    if path.startswith("cultureqa/"):
        return (ROOT / "src" / path).exists()
    return (ROOT / path).exists() or any(s.endswith("/" + path) for s in SOURCES)


def _resolves(dotted: str) -> bool:
    """``cultureqa.a.b.NAME``: the longest importable module, then attributes of it."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        name = ".".join(parts[:cut])
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if found:
            node: object = importlib.import_module(name)
            for attribute in parts[cut:]:
                if not hasattr(node, attribute):
                    return False
                node = getattr(node, attribute)
            return True
    return False


def stale_references(text: str) -> list[str]:
    """Module paths, dotted ``cultureqa.*`` names and ``file.py (NAME)`` pairs that do not exist."""
    out = [f"path {m.group(1)}" for m in PATH.finditer(text) if not _path_exists(m.group(1))]
    tags = _tags()
    for m in DOTTED.finditer(text):
        name = m.group(0)
        if name not in tags and not _resolves(name):
            out.append(f"module {name}")
    for m in DEFINES.finditer(text):
        path, names = m.group(1), re.findall(r"`(\w+)`", m.group(2))
        files = [ROOT / path] if (ROOT / path).is_file() else [
            ROOT / "src" / s for s in SOURCES if s.endswith("/" + path)]  # fmt: skip
        source = "\n".join(f.read_text(encoding="utf-8") for f in files)
        for name in names:
            if files and not re.search(rf"^\s*(?:async def |def |class )?{name}\b", source, re.M):
                out.append(f"{name} not defined in {path}")
    return out


def test_every_module_path_and_name_quoted_in_the_pages_exists() -> None:
    found = {page.name: stale_references(page.read_text(encoding="utf-8")) for page in PAGES}
    assert {k: v for k, v in found.items() if v} == {}


def test_a_moved_module_in_a_page_is_found() -> None:
    planted = (
        "The store is `llm/store_pg.py` (`src/cultureqa/llm/store.py`), see "
        "`cultureqa.llm.store_sqlite` and `cultureqa.core.records.NO_SUCH_CONSTANT`; "
        "`mocqa/schema.py` (`LANGUAGES`), `mocqa_shared/schema.py` (`NO_SUCH_NAME`)."
    )
    assert stale_references(planted) == [
        "path llm/store_pg.py",
        "path src/cultureqa/llm/store.py",
        "path mocqa/schema.py",
        "module cultureqa.llm.store_sqlite",
        "module cultureqa.core.records.NO_SUCH_CONSTANT",
        "NO_SUCH_NAME not defined in mocqa_shared/schema.py",
    ]
    fine = (
        "`llm/store/pg.py`, `src/cultureqa/benchmarks/load/`, "
        "`cultureqa.core.records.SCORE_SIGNIFICANT`, the `cultureqa.group` tag, "
        "`~/.cache/cultureqa/vega`, `mocqa_shared/schema.py` "
        "(`LANGUAGES`), git@host:nlp/cultureqa.git"
    )
    assert stale_references(fine) == []


def _pointer_problems(text: str) -> list[str]:
    """``README: Section`` pointers (the README lost its sections to docs/) and
    ``docs/page.md[: Section]`` pointers whose page, or section (a heading or a bold
    ``**Section.**`` lead-in), is gone."""
    out = [
        f"README pointer {m.group(0)!r}" for m in re.finditer(r"README(?::|\s*\(\")[^)\n]*", text)
    ]
    for m in POINTER.finditer(text):
        page = ROOT / "docs" / m.group(1)
        if not page.is_file():
            out.append(f"no page docs/{m.group(1)}")
        elif m.group(2):
            body = page.read_text(encoding="utf-8")
            section = re.escape(m.group(2))
            if not re.search(rf"^#+ (?:\d+\. )?{section}\b|\*\*{section}\.?\*\*", body, re.M):
                out.append(f"no section {m.group(2)!r} in docs/{m.group(1)}")
    return out


def test_messages_point_to_pages_and_sections_that_exist() -> None:
    files = [*(ROOT / "src").rglob("*.py"), *(ROOT / "conf").rglob("*.yaml"), *(
        ROOT / "stages").glob("*.py"), ROOT / "dvc.yaml", ROOT / "Makefile"]  # fmt: skip
    found = {
        str(f.relative_to(ROOT)): _pointer_problems(f.read_text(encoding="utf-8")) for f in files
    }
    assert {k: v for k, v in found.items() if v} == {}


def test_a_pointer_to_a_gone_section_is_found() -> None:
    planted = (
        '"by hand (README: Add a benchmark by config)", see the README ("Adding a family"), '
        "(docs/nonesuch.md), (docs/benchmark-configs.md: No Such Section), "
        "(docs/benchmark-configs.md: Rows), (docs/team.md)"
    )
    assert _pointer_problems(planted) == [
        "README pointer 'README: Add a benchmark by config'",
        "README pointer 'README (\"Adding a family\"'",
        "no page docs/nonesuch.md",
        "no section 'No Such Section' in docs/benchmark-configs.md",
    ]
