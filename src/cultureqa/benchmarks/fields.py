"""Resolve one declared field against a source row: a column, a dotted path, or a Jinja template.

lm-eval writes ``doc_to_text`` / ``doc_to_choice`` / ``doc_to_target`` as Jinja over the row; we
take the same idea but keep every lookup strict: a path that does not exist, a template that
refers to an undefined name, or an option shape that does not match its transform is an error
naming the row and field, never an empty string.
"""

from __future__ import annotations

import ast
import json
import re
import time
from collections.abc import Mapping
from functools import cache
from typing import Any

import jinja2
from jinja2 import nodes

from cultureqa.benchmarks.sandbox import ENV as _ENV
from cultureqa.benchmarks.sandbox import GUARD as _GUARD
from cultureqa.benchmarks.sandbox import Budget, LimitExceeded, template_limits
from cultureqa.benchmarks.sandbox import activate as _activate
from cultureqa.core.records import LETTERS

_TEMPLATE_MARK = re.compile(r"{{|{%")


class FieldError(ValueError):
    """A field cannot be resolved on one row; the loader adds file, row and field name."""


@cache
def is_template(expr: str) -> bool:
    """Whether ``expr`` is a Jinja template rather than a column or path."""
    return bool(_TEMPLATE_MARK.search(expr))


@cache
def _compiled(expr: str) -> jinja2.Template:
    return _ENV.from_string(expr)


ROW = "row"
"""Template name of the whole row, for columns no Jinja name can spell: ``row['Kalimat-1']``."""


def template_names(expr: str) -> set[str]:
    """Row names a template reads (to report missing columns before the first row).

    ``row['question text']`` and ``row.x`` count as the columns they name; ``row`` itself is a
    column only when the source has one of that name.
    """
    from jinja2 import meta

    try:
        tree = _ENV.parse(expr)
    except jinja2.TemplateSyntaxError as exc:
        raise FieldError(
            f"template {_shown(expr)} is not valid Jinja: {_one_line(exc)} (line {exc.lineno})"
        ) from None
    names = set(meta.find_undeclared_variables(tree)) - {_GUARD}
    for node in tree.find_all(nodes.Getitem):
        assert isinstance(node, nodes.Getitem)
        if _is_row(node.node) and isinstance(node.arg, nodes.Const):
            names.add(str(node.arg.value))
    for attr in tree.find_all(nodes.Getattr):
        assert isinstance(attr, nodes.Getattr)
        if _is_row(attr.node):
            names.add(str(attr.attr))
    return names


def _is_row(node: object) -> bool:
    return isinstance(node, nodes.Name) and node.name == ROW


def field_roots(expr: str, columns: set[str]) -> set[str]:
    """The source columns a field needs (``a.b`` needs ``a``; a template what it reads)."""
    if is_template(expr):
        names = template_names(expr)
        return names if ROW in columns else names - {ROW}
    if expr in columns or "." not in expr:
        return {expr}
    return {expr.split(".", 1)[0]}


def resolve(row: Mapping[str, Any], expr: str) -> Any:
    """Value of ``expr`` on ``row``; raises :class:`FieldError` when it does not exist."""
    if is_template(expr):
        return render(row, expr).strip()
    if expr in row:
        return plain(row[expr])
    value: Any = row
    for part in expr.split("."):
        value = plain(value)
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise FieldError(f"path {expr!r} has no '{part}'")
    return plain(value)


def render(row: Mapping[str, Any], expr: str) -> str:
    """Render a template over ``row``: each column by name, and the whole row as ``row``.

    The render stops at the benchmark's ``template_limits`` (time, and size of what it renders):
    an unbounded template must fail on its row, not hold ``validate`` for minutes at gigabytes.
    """
    values = {str(k): plain(v) for k, v in row.items()}
    context = {ROW: values, **values}
    limits = template_limits()
    budget = Budget(limits, time.monotonic() + limits.max_seconds)
    try:
        with _activate(budget):
            parts: list[str] = []
            size = 0
            for chunk in _compiled(expr).generate(**context):
                size += len(chunk)
                budget.check_size(size, "rendered")
                budget.check_time()
                parts.append(chunk)
            return "".join(parts)
    except LimitExceeded as exc:
        raise FieldError(f"template {_shown(expr)} {exc}") from None
    except jinja2.TemplateError as exc:
        raise FieldError(f"template {_shown(expr)} failed: {_one_line(exc)}") from None
    except OverflowError as exc:  # the sandbox's limit, e.g. range() past 100,000 items
        raise FieldError(
            f"template {_shown(expr)} failed: the sandbox refused it ({_one_line(exc)})"
        ) from None
    except Exception as exc:
        raise FieldError(
            f"template {_shown(expr)} failed: {type(exc).__name__}: {_one_line(exc)}"
        ) from None


def _one_line(exc: BaseException) -> str:
    """An error's message on one line (jinja2's syntax errors span several)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def _shown(expr: str) -> str:
    """The template as written, cut only when very long (errors must stay one line)."""
    return repr(expr) if len(expr) <= 200 else repr(expr[:200] + "…")


_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no", ""}


def render_bool(row: Mapping[str, Any], expr: str) -> bool:
    """A Jinja boolean over the row ("True"/"False" as rendered); anything else is an error."""
    rendered = render(row, expr).strip()
    if rendered.lower() in _TRUE:
        return True
    if rendered.lower() in _FALSE:
        return False
    raise FieldError(f"template {expr!r} must render True or False, got {rendered!r}")


def plain(value: Any) -> Any:
    """Turn numpy arrays (parquet list cells) into lists; everything else stays as it is."""
    if isinstance(value, str):
        return value
    if hasattr(value, "tolist"):
        return value.tolist()
    return value


def options_from(value: Any, transform: str, sep: str) -> list[Any]:
    """Apply a named options transform; raises :class:`FieldError` on a shape mismatch."""
    value = plain(value)
    if transform == "list":
        return _as_list(value)
    if transform == "delimited":
        if not isinstance(value, str):
            raise FieldError(f"delimited options must be a string, got {type(value).__name__}")
        return [part.strip() for part in value.split(sep)]
    if transform == "letter_dict":
        return _letter_dict(value)
    if transform == "record":
        return _record(value)
    raise FieldError(f"unknown options transform {transform!r}")


def _literal(text: str) -> Any:
    for parse in (json.loads, ast.literal_eval):
        try:
            return parse(text)
        except (ValueError, SyntaxError):
            continue
    return None


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, list | tuple):
        return list(value)
    parsed = _literal(value.strip()) if isinstance(value, str) else None
    if isinstance(parsed, list | tuple):
        return list(parsed)
    raise FieldError(f"options are not a list literal: {str(value)[:60]!r}")


def _letter_dict(value: Any) -> list[Any]:
    mapping = _literal(value.strip()) if isinstance(value, str) else value
    if not isinstance(mapping, Mapping):
        raise FieldError(f"options are not an object keyed by letter: {str(value)[:60]!r}")
    present = {str(k).strip().upper(): v for k, v in mapping.items() if v is not None}
    keys = sorted(present)
    if keys != list(LETTERS[: len(keys)]):
        raise FieldError(f"option keys {keys} are not the consecutive letters A, B, …")
    return [present[k] for k in keys]


def _record(value: Any) -> list[Any]:
    """Options of an ARC-style record, ordered by label.

    ``{label: [...], text: [...]}`` as the hub writes it, or the original files' list of objects
    ``[{label: A, text: …}, …]`` (ARC, OpenBookQA and CommonsenseQA ``question.choices``).
    """
    record = _literal(value.strip()) if isinstance(value, str) else plain(value)
    if isinstance(record, list) and record and all(isinstance(r, Mapping) for r in record):
        if not all("label" in r and "text" in r for r in record):
            raise FieldError("options record objects each need 'label' and 'text'")
        record = {"label": [r["label"] for r in record], "text": [r["text"] for r in record]}
    record = {k: plain(v) for k, v in record.items()} if isinstance(record, Mapping) else None
    if not record or not isinstance(record.get("label"), list) or "text" not in record:
        raise FieldError("options record needs 'label' and 'text' lists")
    labels = [str(x).strip().upper() for x in record["label"]]
    texts = list(record["text"])
    if len(labels) != len(texts):
        raise FieldError(f"options record has {len(labels)} labels but {len(texts)} texts")
    letters = list(LETTERS[: len(labels)])
    numbers = [str(i) for i in range(1, len(labels) + 1)]
    order = sorted(range(len(labels)), key=lambda i: (len(labels[i]), labels[i]))
    if [labels[i] for i in order] not in (letters, numbers):
        raise FieldError(f"option labels {labels} are not A, B, … or 1, 2, …")
    return [texts[i] for i in order]
