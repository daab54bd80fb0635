"""What a benchmark's items look like, per group: the IndoCulture paper's Table 2 and Figure 2.

Computed from the configured source as loaded for evaluation (sample, CSV or Hugging Face), one
row per item in one language:

* :func:`group_statistics` — per group (IndoCulture: province) the number of items, the share
  with a boolean flag set (``is_province_specific``) and the mean length of a text column in
  words (whitespace-separated tokens) and characters (Unicode code points), plus an ``All`` row;
  the stage counts :func:`instance_text`, the premise with its correct continuation, because
  that is what the IndoCulture paper's Table 2 counts (an instance is the completed sentence);
* :func:`topic_distribution` — items per topic, split by the flag, with shares (Figure 2).

Nothing here reads model output, so the tables describe the data whatever the roster.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from cultureqa.core.io import atomic_path

__all__ = ["ALL", "INSTANCE", "group_statistics", "instance_text", "language_distribution",
           "plot_topics", "topic_distribution"]  # fmt: skip

ALL = "All"
"""Label of the row over every group."""
INSTANCE = "instance"
"""Column :func:`instance_text` adds: the premise followed by its (first-listed) gold option."""


def _check(frame: pd.DataFrame, columns: tuple[str, ...]) -> None:
    if missing := [c for c in columns if c not in frame.columns]:
        raise KeyError(f"the loaded items have no column(s) {missing}; found {list(frame.columns)}")


def _flag(frame: pd.DataFrame, flag: str) -> pd.Series:
    values = frame[flag]
    if not values.map(lambda v: isinstance(v, bool)).all():
        raise ValueError(
            f"'{flag}' must be boolean on every item (declare it `bool` in the config)"
        )
    return values.astype(bool)


def instance_text(items: pd.DataFrame) -> pd.DataFrame:
    """``items`` with :data:`INSTANCE` = question + " " + the gold option's text.

    ``options`` is the JSON list and ``answer`` the first-listed gold letter of
    :func:`cultureqa.benchmarks.load.items_frame`; a letter outside the options is an error
    naming the item (a count over a missing continuation would silently shrink).
    """
    _check(items, ("item_id", "question", "options", "answer"))
    texts = []
    for item_id, question, options, letter in zip(
        items["item_id"], items["question"], items["options"], items["answer"], strict=True
    ):
        choices = json.loads(options) if isinstance(options, str) else list(options)
        index = ord(str(letter).strip().upper()) - ord("A") if str(letter).strip() else -1
        if not 0 <= index < len(choices):
            raise ValueError(f"item {item_id}: gold letter {letter!r} is not one of its options")
        texts.append(f"{question} {choices[index]}")
    return items.assign(**{INSTANCE: texts})


def group_statistics(
    items: pd.DataFrame, group: str, flag: str, text: str = "question"
) -> pd.DataFrame:
    """Items, % flagged, mean words and characters of ``text`` per ``group``, then ``All``."""
    _check(items, (group, flag, text, "item_id"))
    if items["item_id"].duplicated().any():
        raise ValueError("one row per item expected: filter the items to one language first")
    rows = items.assign(
        _flag=_flag(items, flag),
        _words=items[text].astype(str).str.split().str.len(),
        _chars=items[text].astype(str).str.len(),
    )

    def summarize(part: pd.DataFrame) -> dict[str, float | int]:
        return {
            "items": len(part),
            f"pct_{flag}": 100 * part["_flag"].mean(),
            "mean_words": part["_words"].mean(),
            "mean_chars": part["_chars"].mean(),
        }

    table = [{group: name, **summarize(part)} for name, part in rows.groupby(group, sort=True)]
    return pd.DataFrame([*table, {group: ALL, **summarize(rows)}])


def language_distribution(items: pd.DataFrame) -> pd.DataFrame:
    """Items per language with their share (%): a file per language must show each of them."""
    _check(items, ("language",))
    counts = items["language"].astype(str).value_counts().sort_index()
    return pd.DataFrame(
        {
            "language": counts.index,
            "items": counts.to_numpy(),
            "pct_of_items": 100 * counts.to_numpy() / max(1, int(counts.sum())),
        }
    )


def topic_distribution(items: pd.DataFrame, topic: str, flag: str) -> pd.DataFrame:
    """Items per topic, with and without the flag, and the topic's share of all items (%)."""
    _check(items, (topic, flag))
    flags = _flag(items, flag).map({True: f"{flag}", False: f"not_{flag}"})
    counts = pd.crosstab(items[topic], flags).reindex(columns=[flag, f"not_{flag}"], fill_value=0)
    counts["items"] = counts.sum(axis=1)
    counts["pct_of_items"] = 100 * counts["items"] / counts["items"].sum()
    counts = counts.sort_values(["items"], ascending=False, kind="stable")
    return counts.rename_axis(topic).reset_index().rename_axis(None, axis=1)


def plot_topics(table: pd.DataFrame, topic: str, flag: str, target: Path, title: str) -> Path:
    """Horizontal stacked bars of items per topic (flagged / not), largest topic on top."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = table.iloc[::-1]
    labels = rows[topic].astype(str)
    fig, ax = plt.subplots(figsize=(7, 1.4 + 0.32 * len(rows)))
    ax.barh(labels, rows[flag], label=f"{flag} = True")
    ax.barh(labels, rows[f"not_{flag}"], left=rows[flag], label=f"{flag} = False")
    for y, (count, pct) in enumerate(zip(rows["items"], rows["pct_of_items"], strict=True)):
        ax.text(count, y, f" {count} ({pct:.1f}%)", va="center", fontsize=7)
    ax.set_xlim(0, 1.25 * max(1, int(rows["items"].max())))
    ax.set_xlabel("items")
    ax.set_title(title, fontsize=10, pad=22)
    ax.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, frameon=False)
    fig.tight_layout()
    with atomic_path(target) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)
    return target
