"""Every item browsable in MLflow: one trace per prediction row (or built item), with assessments.

MLflow 3's GenAI view lists, for a run of an experiment, the traces linked to it: "Evaluation
runs" → a run opens its items, each with its request, response and assessments as columns,
filterable by assessment (``correct`` true or false) and searchable. So each result run of
``cultureqa/results`` (:mod:`cultureqa.runs.parent_summary`) gets one trace per row of the
slot's predictions, logged from the existing predictions (no model call):

- **request**: item id, the setting / language / clue type / seed, the gold answer;
- **response**: the reply as the model wrote it, the parsed answer, correct, the per-option
  scores and their normalisation, the error of a failed item;
- **assessments**: the expectation ``gold`` and the feedback ``correct`` (ID-MoCQA adds
  ``first_hop_correct``), source ``CODE``/``cultureqa``;
- **tags**: benchmark, roster slot, prompt, setting, language, clue type, seed, status.

The prompt text and the options are not in the predictions table, so they are not in the trace
(the dataset and the template hash are on the child runs).

Writes are batched: the traces are built in memory with their assessments (``log_feedback``
inside an open trace adds it in memory) and written by MLflow's asynchronous exporter, flushed
once per result. Only the roster slots in :data:`ITEM_TRACE_SLOTS` get traces (the baselines'
items are random or first-option picks), and a result whose predictions did not change since its
traces were logged is skipped (``ITEMS_TAG`` holds their MD5). New predictions in the same cell
replace its traces, and the log says how many were removed.

The same traces also go to each family experiment's child run (one setting, language or seed of
the model slot), and a dataset build's items (:func:`build_item_record`: the question, its
options and gold, and the judge's verdict) to the build's run: MLflow 3.17 opens every experiment
on its GenAI overview, which counts traces, so each experiment on MLflow's home page lands on its
own items rather than on an empty page.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

log = logging.getLogger(__name__)

ITEM_TRACE_SLOTS = ("model",)
"""Roster slots whose items are logged as traces (about 0.01-0.15 s of tracking per item)."""
ITEMS_TAG = "cultureqa.item_traces_md5"
"""On a result run: the MD5 of the predictions its traces were logged from."""
CONTEXT = ("setting", "language", "clue_type", "seed", "location", "scoring", "province", "topic")
"""Columns that say under which condition an item was asked, when the benchmark has them."""
ANSWER = ("pred", "answer_pred")
"""The parsed answer (ID-MoCQA: ``answer_pred``; its province pick is ``province_pred``)."""
FEEDBACK = ("correct", "first_hop_correct", "kept")
"""Response fields logged as feedback assessments when a record has them (``kept``: a build
judge's verdict)."""
BUILD_CONTEXT = ("clue_type", "language", "region", "province", "topic", "origin")
"""A built item's columns that say what kind of item it is, when the build has them."""
BUILD_VERDICT = {"judge_keep": "kept", "judge": "judge", "judge_reason": "reason",
                 "generator": "generator", "template_id": "template", "model": "model",
                 "attempts": "attempts"}  # fmt: skip
"""A built item's columns that say how it was made and judged, and their names in the record."""

LONG_FIELDS = ("gold", "question", "options")
"""Request fields not repeated as trace tags (the gold is an expectation; the rest is long)."""

Record = Callable[[Mapping[str, Any]], tuple[str, dict[str, Any], dict[str, Any]]]
"""A row's ``(name, request, response)``: :func:`item_record` or :func:`build_item_record`."""


def _value(value: Any) -> Any:
    """JSON-safe scalar: NaN/None become None, numpy scalars plain Python."""
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if getattr(value, "ndim", 0) > 0:  # a list cell of a parquet table (numpy array)
        return value.tolist()
    return value.item() if hasattr(value, "item") else value


def _truth(value: Any) -> bool | None:
    value = _value(value)
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return bool(value)


def _scores(value: Any) -> Any:
    value = _value(value)
    if isinstance(value, str) and value:
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def item_record(row: Mapping[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """``(name, request, response)`` of one prediction row."""
    unit = "case_id" if "case_id" in row else "item_id"
    context = {c: _value(row[c]) for c in CONTEXT if c in row and _value(row[c]) not in (None, "")}
    request = {"item": _value(row[unit]), **context, "gold": _value(row.get("gold"))}
    answer = next((row[c] for c in ANSWER if c in row), None)
    response: dict[str, Any] = {
        "reply": _value(row.get("raw")),
        "parsed_answer": _value(answer),
        "correct": _truth(row.get("correct")),
    }
    if "province_pred" in row:
        response |= {"province": _value(row["province_pred"]),
                     "first_hop_correct": _truth(row.get("province_correct"))}  # fmt: skip
    if "scores" in row:
        response["scores"] = _scores(row["scores"])
        response["score_normalisation"] = _value(row.get("score_normalisation"))
    if _value(row.get("error")):
        response["error"] = _value(row["error"])
    shown = ("setting", "clue_type", "language")
    label = " · ".join(str(context[c]) for c in shown if c in context)
    if "seed" in context:
        label = f"seed {context['seed']}"
    return " · ".join(x for x in (str(request["item"]), label) if x), request, response


def build_item_record(row: Mapping[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """``(name, request, response)`` of one item of a dataset build.

    The request is the question as built (its options, by letter, and the gold answer); the
    response what the build decided about it: the judge's verdict (``kept``, ``judge``,
    ``reason``) where the build judges its items, else how it was made (``model``, ``attempts``).
    """
    unit = "item_id" if "item_id" in row else "case_id"
    context = {c: _value(row[c]) for c in BUILD_CONTEXT if c in row and _value(row[c]) != ""}
    options = _scores(row["options"]) if "options" in row else None
    if isinstance(options, list):  # the options in the order shown: A, B, C, …
        options = {chr(ord("A") + k): text for k, text in enumerate(options)}
    if options is None:  # one column per letter: option_A…, or the cases' type_A…
        prefix = "option_" if any(str(k).startswith("option_") for k in row) else "type_"
        options = {str(k)[len(prefix):]: _value(v) for k, v in row.items()
                   if str(k).startswith(prefix) and _value(v) is not None}  # fmt: skip
    request = {"item": _value(row[unit]), **context, "question": _value(row.get("question")),
               "options": options, "gold": _value(row.get("answer"))}  # fmt: skip
    response = {name: _value(row[column]) for column, name in BUILD_VERDICT.items()
                if column in row}  # fmt: skip
    if "kept" in response:
        response["kept"] = _truth(response["kept"])
    label = " · ".join(str(context[c]) for c in ("clue_type", "language") if c in context)
    return " · ".join(x for x in (str(request["item"]), label) if x), request, response


def log_item_traces(
    experiment_id: str,
    run_id: str,
    predictions: pd.DataFrame,
    tags: Mapping[str, str],
    content_md5: str,
    record: Record = item_record,
) -> int:
    """One trace per row of ``predictions``, linked to ``run_id``; returns how many were written.

    ``tags`` (benchmark, slot, prompt, DVC experiment) go on every trace; ``record`` makes each
    row's request and response (a prediction's by default, :func:`build_item_record` for a
    build's items). Returns 0, with a log line, when the run already holds the traces of these
    rows.
    """
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    import mlflow
    from mlflow import MlflowClient
    from mlflow.entities import AssessmentSource, AssessmentSourceType

    client = MlflowClient()
    run = client.get_run(run_id)
    if run.data.tags.get(ITEMS_TAG) == content_md5:
        log.info("item traces of MLflow run %s already logged (same predictions)", run_id)
        return 0
    old = mlflow.search_traces(
        locations=[experiment_id], run_id=run_id, return_type="list", include_spans=False
    )
    if old:
        client.delete_traces(experiment_id, trace_ids=[t.info.trace_id for t in old])
        log.info("removed %d item traces of MLflow run %s (new predictions)", len(old), run_id)
    source = AssessmentSource(source_type=AssessmentSourceType.CODE, source_id="cultureqa")
    written = 0
    with mlflow.start_run(run_id=run_id, experiment_id=experiment_id):
        for row in predictions.to_dict(orient="records"):
            name, request, response = record(row)
            with mlflow.start_span(name=name, span_type="LLM") as span:
                span.set_inputs(request)
                span.set_outputs(response)
                shown = {k: str(v) for k, v in request.items() if k not in LONG_FIELDS}
                trace_tags = {**tags, **shown}
                trace_tags |= {k: str(response[k]) for k in FEEDBACK if k in response}
                trace_tags["status"] = str(_value(row.get("status")) or "")
                mlflow.update_current_trace(tags=trace_tags)
                if request.get("gold") is not None:
                    mlflow.log_expectation(
                        trace_id=span.trace_id, name="gold", value=request["gold"], source=source
                    )
                for key in FEEDBACK:
                    if response.get(key) is not None:
                        mlflow.log_feedback(
                            trace_id=span.trace_id, name=key, value=response[key], source=source
                        )
            written += 1
    mlflow.flush_trace_async_logging()
    client.set_tag(run_id, ITEMS_TAG, content_md5)
    return written
