"""The documentation site builds offline with ``mkdocs build --strict``: no broken link or anchor.

`make docs` runs the same build. Strict mode turns every warning into a failure; mkdocs.yml
makes a link to a missing page, a missing ``#anchor`` or a page left out of ``nav`` a warning, so a
page renamed, a heading reworded or a page added without a ``nav`` entry fails here.
"""

from __future__ import annotations

import os
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
