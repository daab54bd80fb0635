"""Label Studio over its REST API (httpx): create a project, import tasks, read annotations back.

The server runs in its own environment (``make labelstudio``); the project only speaks HTTP to
it, with the token from ``LABEL_STUDIO_API_KEY`` and the address from ``LABEL_STUDIO_URL``.
Plain HTTP rather than the SDK: the SDK lives in the server's environment (it would pin its own
httpx and pydantic into the project's lock), and the five endpoints used here are stable across
1.x. Annotations become the labels table of :mod:`cultureqa.human.agreement`, one row per item ×
annotator, with every merge or drop counted.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import pandas as pd

from cultureqa.human.agreement import LABEL_COLUMNS
from cultureqa.human.interface import DIFFICULTY, OPTION, QUALITY, REGION, naturalness_name

DEFAULT_URL = "http://127.0.0.1:8080"


class StudioError(RuntimeError):
    """The server is unreachable, refuses the token, or answers something unexpected."""


@dataclass
class Studio:
    """A Label Studio server: its address and an API token (legacy or personal)."""

    url: str
    token: str
    timeout: float = 60.0

    @classmethod
    def from_env(cls, url: str | None = None) -> Studio:
        """Address from ``url`` or ``LABEL_STUDIO_URL``; token from ``LABEL_STUDIO_API_KEY``."""
        token = os.environ.get("LABEL_STUDIO_API_KEY", "")
        if not token:
            raise StudioError(
                "set LABEL_STUDIO_API_KEY to the server's API token (docs/human-validation.md)"
            )
        return cls((url or os.environ.get("LABEL_STUDIO_URL") or DEFAULT_URL).rstrip("/"), token)

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        """One request; JSON back. A non-2xx answer raises :class:`StudioError` naming it."""
        headers = {"Authorization": f"Token {self.token}"}
        try:
            response = httpx.request(
                method, f"{self.url}{path}", headers=headers, timeout=self.timeout, **kwargs
            )
        except httpx.HTTPError as exc:
            raise StudioError(f"Label Studio at {self.url} is unreachable: {exc}") from exc
        if response.status_code >= 300:
            raise StudioError(
                f"Label Studio {method} {path} answered {response.status_code}: "
                f"{response.text[:300]}"
            )
        return response.json() if response.content else None

    def create_project(
        self, title: str, label_config: str, guideline: str, per_item: int, overlap_percent: int
    ) -> int:
        """A project whose tasks each get ``per_item`` annotations on ``overlap_percent`` % of them.

        Label Studio's own distribution: with ``per_item`` 2 and ``overlap_percent`` 100 every
        item is seen by two annotators; with 20, a fifth of the items are and the rest by one.
        """
        body = {
            "title": title,
            "label_config": label_config,
            "expert_instruction": guideline.replace("\n", "<br/>"),
            "show_instruction": True,
            "maximum_annotations": per_item,
            "overlap_cohort_percentage": overlap_percent,
        }
        return int(self.call("POST", "/api/projects", json=body)["id"])

    def import_tasks(self, project: int, tasks: Sequence[Mapping[str, Any]]) -> int:
        """Import tasks; the number the server says it created (checked against what was sent)."""
        answer = self.call("POST", f"/api/projects/{project}/import", json=list(tasks))
        created = int(answer.get("task_count", -1))
        if created != len(tasks):
            raise StudioError(f"project {project}: sent {len(tasks)} tasks, server made {created}")
        return created

    def tasks(self, project: int) -> list[dict[str, Any]]:
        """Every task of the project with its annotations (the JSON export)."""
        params = {"exportType": "JSON", "download_all_tasks": "true"}
        found = self.call("GET", f"/api/projects/{project}/export", params=params)
        return list(found)

    def users(self) -> dict[int, str]:
        """User id → email (the annotator's name in the labels table)."""
        return {
            int(u["id"]): str(u.get("email") or u["username"])
            for u in self.call("GET", "/api/users")
        }

    def annotate(self, task: int, result: list[dict[str, Any]]) -> int:
        """Submit one annotation as the token's user (the tests' simulated annotators)."""
        return int(
            self.call("POST", f"/api/tasks/{task}/annotations", json={"result": result})["id"]
        )


@dataclass
class Pulled:
    """Labels read from Label Studio, and what was merged or left out on the way (with reasons)."""

    labels: pd.DataFrame
    counts: Counter[str] = field(default_factory=Counter)


def _values(result: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for region in result:
        value = region.get("value", {})
        picked = value.get("choices") or value.get("text") or []
        if picked:
            out[str(region["from_name"])] = str(picked[0]).strip()
    return out


def labels_from_tasks(exported: Sequence[Mapping[str, Any]], users: Mapping[int, str]) -> Pulled:
    """The long labels table from exported tasks (see :func:`cultureqa.human.interface.tasks`).

    The answered item (slot 1) gets quality, its naturalness, difficulty and both answers; each
    other version gets its naturalness. Cancelled (skipped) annotations are dropped and counted.
    An annotator who rated one item twice (it was sampled in both languages, so it was shown
    twice) keeps the rating given where the item was answered; the other is counted.
    """
    rows: list[dict[str, Any]] = []
    counts: Counter[str] = Counter()
    for task in exported:
        data = task["data"]
        for annotation in task.get("annotations", []):
            if annotation.get("was_cancelled"):
                counts["skipped by the annotator (cancelled annotation)"] += 1
                continue
            who = annotation.get("completed_by")
            user_id = int(who["id"] if isinstance(who, Mapping) else who)
            annotator = users.get(user_id, f"user-{user_id}")
            values = _values(annotation.get("result", []))
            counts["annotations read"] += 1
            slot = 1
            while f"item_{slot}" in data:
                item = str(data[f"item_{slot}"])
                if item:
                    row: dict[str, Any] = dict.fromkeys(LABEL_COLUMNS, "")
                    row.update(item_id=item, annotator=annotator, slot=slot, task=task["id"])
                    row["naturalness"] = values.get(naturalness_name(slot), "")
                    if slot == 1:
                        row["quality"] = values.get(QUALITY, "")
                        row["difficulty"] = values.get(DIFFICULTY, "")
                        row["answer_region"] = values.get(REGION, "")
                        row["answer_option"] = values.get(OPTION, "")
                    rows.append(row)
                slot += 1
    frame = pd.DataFrame(rows, columns=[*LABEL_COLUMNS, "slot", "task"])
    frame = frame.sort_values(["item_id", "annotator", "slot", "task"], kind="stable")
    merged = frame.groupby(["item_id", "annotator"], sort=True, as_index=False).agg(
        {c: _first_filled for c in LABEL_COLUMNS if c not in ("item_id", "annotator")}
    )
    extra = len(frame) - len(merged)
    if extra:
        counts["second rating of an item by one annotator (kept the one given with its answer)"] = (
            extra
        )
    return Pulled(merged[list(LABEL_COLUMNS)].reset_index(drop=True), counts)


def _first_filled(values: pd.Series) -> str:
    filled = [v for v in values if v]
    return str(filled[0]) if filled else ""
