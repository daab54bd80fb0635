"""The Label Studio labeling interface that follows the seed's guideline, and its tasks.

One task is one sampled item: its context, question and options in the item's language, the same
item in the other language(s) for the naturalness rating, the four rating scales and the two
answer steps (region first, then the option). The guideline is the project's instructions (shown
before the first task) and is repeated at the top of every task. ``control names`` below are the
keys :mod:`cultureqa.human.studio` reads back, so the XML and the reader cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from xml.sax.saxutils import quoteattr

import pandas as pd

from cultureqa.human.items import LABELS, LETTERS

GUIDELINE = """\
You validate one two-hop question. It names no {noun} directly: a clue in the text points to one.
1. Quality, on the judges' scale. OK: correct, natural, answerable from the clue and the question.
   Minor: small wording or translation slips that do not change the answer. Moderate: the clue is
   vague or the options are debatable, but an expert could still answer. Significant: wrong answer,
   the clue fits another {noun}, the text gives the {noun} away, or the question cannot be answered.
2. Naturalness of each language version: Natural (a native speaker could have written it),
   Acceptable (understandable but stiff), Unnatural (a native speaker would not say it this way).
3. Difficulty for a well-informed native speaker: Easy, Moderate or Hard.
4. Answer the question yourself, without looking anything up: first type the {noun} the clue
   points to, then choose the option. Answer even when unsure; leave nothing blank.
"""

QUALITY, DIFFICULTY, REGION, OPTION = "quality", "difficulty", "answer_region", "answer_option"


def naturalness_name(slot: int) -> str:
    """The control that rates the naturalness of the version in ``slot`` (1 = the answered one)."""
    return f"naturalness_{slot}"


def _choices(name: str, to: str, values: tuple[str, ...], title: str) -> str:
    inner = "".join(f"<Choice value={quoteattr(v)}/>" for v in values)
    return (
        f'<Header value={quoteattr(title)}/><Choices name="{name}" toName="{to}" '
        f'choice="single-radio" required="true" showInline="true">{inner}</Choices>'
    )


def label_config(n_versions: int, n_options: int, noun: str) -> str:
    """The labeling interface XML: ``n_versions`` language versions, ``n_options`` options.

    Slot 1 is the item the annotator answers; slots 2.. are the same item in the other languages.
    """
    parts = ["<View>", '<Header value="Guideline"/>', '<Text name="guideline" value="$guideline"/>']
    for slot in range(1, n_versions + 1):
        parts += [
            f'<Header value="$role_{slot}"/>',
            f'<Text name="text_{slot}" value="$text_{slot}"/>',
            _choices(
                naturalness_name(slot),
                f"text_{slot}",
                LABELS["naturalness"],
                f"Naturalness of this version ($language_{slot})",
            ),
        ]
    parts += [
        _choices(QUALITY, "text_1", LABELS["quality"], "Quality of the item you answer"),
        _choices(DIFFICULTY, "text_1", LABELS["difficulty"], "Difficulty"),
        f'<Header value="Step 1: which {noun} does the clue point to?"/>',
        f'<TextArea name="{REGION}" toName="text_1" maxSubmissions="1" rows="1" '
        'required="true" editable="true"/>',
        _choices(OPTION, "text_1", LETTERS[:n_options], "Step 2: your answer"),
        "</View>",
    ]
    return "".join(parts)


def _text(row: Mapping[str, Any]) -> str:
    options = "\n".join(f"{LETTERS[i]}. {o}" for i, o in enumerate(row["options"]))
    context = f"{row['context']}\n\n" if row["context"] else ""
    return f"{context}{row['question']}\n\n{options}"


def tasks(
    picked: pd.DataFrame, versions: Mapping[str, pd.DataFrame], n_versions: int, guideline: str
) -> list[dict[str, Any]]:
    """One Label Studio task per sampled item; ``item_<slot>`` names each version's item."""
    out = []
    for row in picked.to_dict("records"):
        others = [
            v
            for v in versions[str(row["item_id"])].to_dict("records")
            if v["item_id"] != row["item_id"]
        ]
        shown = [row, *others]
        data: dict[str, Any] = {"guideline": guideline, "clue_type": row["clue_type"]}
        for slot in range(1, n_versions + 1):
            version = shown[slot - 1] if slot <= len(shown) else None
            lang = str(version["language"]) if version else "-"
            data[f"text_{slot}"] = _text(version) if version else "(no version in this language)"
            data[f"role_{slot}"] = (
                f"{lang}: rate it, then answer it"
                if slot == 1
                else (f"{lang}: rate its naturalness only")
            )
            data[f"item_{slot}"] = str(version["item_id"]) if version else ""
            data[f"language_{slot}"] = lang
        out.append({"data": data})
    return out
