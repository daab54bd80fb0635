"""A person labels one task in a real browser, and ``pull`` sees it (the ``labelstudio`` suite).

Chromium (Debian's, driven by Playwright) logs in, opens one task's labeling page, picks the
ratings, types the region, chooses the option and submits. ``pull`` must then read exactly those
labels for that item and annotator. The page is saved to docs/img/labelstudio-task.png.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from cultureqa.human import agreement, commands
from cultureqa.human.studio import Studio
from tests.human.conftest import RunningStudio
from tests.human.test_labelstudio import make_target

pytestmark = [pytest.mark.labelstudio, pytest.mark.timeout(900)]
CHROMIUM = "/usr/bin/chromium"


@pytest.mark.skipif(not shutil.which("chromium"), reason="needs Debian's chromium (.ci/run)")
def test_a_person_labels_a_task_and_pull_sees_it(
    label_studio: RunningStudio, items: pd.DataFrame, tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright

    target = make_target(tmp_path, items, None)
    email, token = next(iter(label_studio.tokens.items()))
    studio = Studio(label_studio.url, token)
    made = commands.push(target, studio, per_stratum=1)
    task = studio.tasks(made["project"])[0]
    item = task["data"]["item_1"]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 1250})
        page.goto(f"{label_studio.url}/user/login/")
        page.fill("input[name=email]", email)
        page.fill("input[name=password]", "pw-" + token[:12])
        page.click("button[type=submit]")
        page.wait_for_load_state("networkidle")
        page.goto(f"{label_studio.url}/projects/{made['project']}/data?task={task['id']}")
        page.get_by_text("Step 2: your answer").wait_for(timeout=60_000)
        # document order: naturalness 1, naturalness 2, quality, difficulty, answer option
        radio = page.locator("input[type=radio]")
        radio.and_(page.locator("[name=Natural]")).nth(0).check()
        radio.and_(page.locator("[name=Acceptable]")).nth(1).check()
        radio.and_(page.locator("[name=Minor]")).check()
        radio.and_(page.locator("[name=Hard]")).check()
        region = page.locator("input[name=answer_region]")
        region.fill("Sumut")
        region.press("Enter")
        radio.and_(page.locator("[name=B]")).check()
        shots = Path(os.environ.get("CULTUREQA_SCREENSHOT_DIR") or tmp_path)
        page.screenshot(path=str(shots / "labelstudio-task.png"), full_page=True)
        with page.expect_response(lambda r: "/annotations" in r.url and r.status == 201):
            page.get_by_role("button", name="Submit").click()
        browser.close()
    commands.pull(target, studio, track=False)
    labels = agreement.import_labels(target.folder / "labels.csv").set_index(
        ["item_id", "annotator"]
    )
    got = labels.loc[(item, email)]
    assert (got["quality"], got["difficulty"], got["naturalness"]) == ("Minor", "Hard", "Natural")
    assert (got["answer_region"], got["answer_option"]) == ("Sumut", "B")
    sibling = task["data"]["item_2"]
    assert labels.loc[(sibling, email), "naturalness"] == "Acceptable"
