"""The docs site's search works opened from disk (``file://``), with no network.

MkDocs' search runs in a Web Worker that fetches its index; browsers refuse both over ``file://``.
Material's ``offline`` plugin inlines the index as a script and loads iframe-worker's shim, from
a CDN unless ``extra.polyfills`` names it: mkdocs.yml names ``vendor/iframe-worker/shim.js``,
which ``make docs`` copies from the npm registry into the site. Here the site is built the same
way and opened from disk in Chromium with every non-file request blocked; a query must list the
page that holds the word (without the shim the box stays at "Initializing search").
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHIM = (Path(os.environ.get("IFRAME_WORKER_DIR", Path.home() / ".cache/cultureqa/iframe-worker"))
        / "node_modules" / "iframe-worker" / "shim" / "index.js")  # fmt: skip


@pytest.mark.timeout(300)
def test_search_finds_a_page_opened_from_disk(tmp_path: Path, chromium: str) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    if not SHIM.exists():  # installed by `make docs` (npm registry), once per machine
        subprocess.run(["make", "--no-print-directory", str(SHIM.parents[2] / ".installed")],
                       cwd=ROOT, check=True, timeout=240)  # fmt: skip
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                    "--site-dir", str(site)], cwd=ROOT, check=True, timeout=240)  # fmt: skip
    (site / "vendor" / "iframe-worker").mkdir(parents=True)
    shutil.copy(SHIM, site / "vendor" / "iframe-worker" / "shim.js")
    page_html = (site / "comparing-runs.html").read_text(encoding="utf-8")
    assert not re.findall(r'<script[^>]+src="https?://', page_html)  # nothing from a CDN
    blocked: list[str] = []
    with sync_api.sync_playwright() as play:
        browser = play.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page()
        page.route(re.compile(r"^https?://"), lambda r: (blocked.append(r.request.url), r.abort()))
        page.set_default_timeout(60_000)
        page.goto((site / "index.html").as_uri())
        page.keyboard.press("s")  # Material's shortcut to the search box
        page.locator(".md-search__input").press_sequentially("assessments", delay=30)
        hit = page.locator(".md-search-result__link").first
        hit.wait_for()
        links = page.locator(".md-search-result__link").evaluate_all("l => l.map(a => a.href)")
        browser.close()
    assert any("comparing-runs.html" in link for link in links), links
    assert blocked == []  # the search needed no network
