"""``make plots``: leave figures without data out of DVC's page, and say which and why.

Every PNG that ``dvc.yaml`` lists must exist in every experiment, so a report figure that has no
data (every roster entry a baseline, say) is drawn as a one-line note and tagged in its PNG text
chunk (:data:`cultureqa.analysis.figures.NO_DATA`). ``dvc plots show|diff`` puts each
revision's copy of an image in its own box; this rewrites the page DVC wrote, removing the boxes
of such copies and listing them, with their revision and reason, at the top of the page, so the
page shows only figures that carry data and still names everything it leaves out.

Run after ``dvc plots``: ``python -m cultureqa.runs.plots_page dvc_plots/index.html``.
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import re
from pathlib import Path

from cultureqa.analysis.figures import NO_DATA
from cultureqa.core.io import atomic_path

_PLOT = re.compile(
    r'<div\s+id="[^"]*"\s+style="border:1px solid black;[^"]*">\s*<p>(?P<name>[^<]*)</p>'
)
_COPY = re.compile(
    r'<div\s+style="border:1px dotted black;[^"]*">\s*<p>(?P<rev>[^<]*)</p>\s*'
    r'<img src="(?P<src>[^"]+)">\s*</div>'
)


def no_data_reason(png: bytes) -> str | None:
    """The reason a report PNG has no data, or None for a figure with data (or no PNG)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(png)) as image:
            text = str(getattr(image, "text", {}).get("Description", ""))
    except UnidentifiedImageError:  # an SVG or JPEG plot: never drawn as a no-data note
        return None
    return text[len(NO_DATA) :] if text.startswith(NO_DATA) else None


MISSING = "image file missing: "
"""Reason given for a box whose ``<img src>`` names no file (a revision that lacks the figure)."""


def _image(page: Path, src: str) -> bytes | None:
    """The bytes behind an ``<img src>`` of DVC's page (a file beside it, or inline base64).

    None when the file is not there, so the page names the missing figure instead of the rewrite
    failing on the first one.
    """
    if src.startswith("data:"):
        return base64.b64decode(src.split(",", 1)[1])
    path = page.parent / src
    return path.read_bytes() if path.is_file() else None


def drop_empty_figures(page: Path) -> list[tuple[str, str, str]]:
    """Rewrite ``page`` without its no-data images; return ``(plot, revision, reason)`` of each."""
    text = page.read_text(encoding="utf-8")
    plots = [(m.start(), m.group("name")) for m in _PLOT.finditer(text)]
    left_out: list[tuple[str, str, str]] = []

    def keep_or_drop(match: re.Match[str]) -> str:
        src = html.unescape(match.group("src"))
        png = _image(page, src)
        reason = MISSING + src if png is None else no_data_reason(png)
        if reason is None:
            return match.group(0)
        plot = next((n for at, n in reversed(plots) if at < match.start()), "")
        left_out.append((plot, match.group("rev"), reason))
        return ""

    text = _COPY.sub(keep_or_drop, text)
    if not left_out:
        return []
    items = "".join(
        f"<li><code>{plot}</code> in <code>{rev}</code>: {html.escape(reason)}</li>"
        for plot, rev, reason in left_out
    )
    note = (
        f'<div id="cultureqa-left-out"><p>Not drawn: {len(left_out)} report figure(s) without '
        f"data or without an image file</p><ul>{items}</ul></div>"
    )
    text = re.sub(r"<body>", "<body>\n" + note, text, count=1)
    with atomic_path(page) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return left_out


def main(argv: list[str] | None = None) -> int:
    """Rewrite the page and print one line per figure left out."""
    parser = argparse.ArgumentParser(prog="python -m cultureqa.runs.plots_page")
    parser.add_argument("page", type=Path, help="the index.html that dvc plots wrote")
    page = parser.parse_args(argv).page
    for plot, rev, reason in drop_empty_figures(page):
        kind = "" if reason.startswith(MISSING) else "no data: "
        print(f"{page}: left out {plot} of {rev}: {kind}{reason}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
