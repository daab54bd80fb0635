"""Prompt templates live in files; params carry only their ids and we record their hashes.

Lookup goes from the benchmark's own folder to ``prompts/default``, so a new benchmark works with
the defaults and can override one file at a time. A language without its own template is an error
unless the benchmark declares a fallback language for it (``prompt_fallback: {sw: en}``): asking a
model in English while the report says Swahili would be a silent wrong result.
"""

from __future__ import annotations

import hashlib
import string
from dataclasses import dataclass
from pathlib import Path

REQUIRED_FIELDS = {"mcq": {"question", "options"}, "completion": {"question"}}

STYLE_SCORINGS = {"zero_shot": ("mcq", "completion"), "cot": ("mcq",)}
"""Which scorings each prompt style applies to. Completion scoring ranks the options' own text by
log-likelihood after the question: there is no reply in which a model could reason, so a
chain-of-thought prompt has nothing to act on and those settings are skipped (with this reason)."""

ANSWER_CUES = {"en": "Answer:", "id": "Jawaban:"}
"""The line after which a log-likelihood backend's option letter is scored (zero-shot templates end
with it; CoT templates ask a chat model to reason first, so the runner appends it)."""


class TemplateError(ValueError):
    """A template is missing or lacks a required placeholder."""


@dataclass(frozen=True)
class Template:
    """A loaded template with its provenance."""

    path: Path
    text: str

    @property
    def sha256(self) -> str:
        """Short content hash; part of every cache key and MLflow run."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:16]

    def render(self, **fields: str) -> str:
        """Fill placeholders; unknown placeholders are an error, not silently empty."""
        try:
            return self.text.format(**fields)
        except KeyError as exc:
            raise TemplateError(f"{self.path}: no value for placeholder {exc}") from exc


def style_skip_reason(style: str, scoring: str) -> str | None:
    """Why ``style`` cannot run a ``scoring`` setting, or None when it can.

    An unknown style is a TemplateError naming the known ones (a typo must not silently skip all).
    """
    if style not in STYLE_SCORINGS:
        raise TemplateError(f"unknown prompt style '{style}'; known: {sorted(STYLE_SCORINGS)}")
    if scoring in STYLE_SCORINGS[style]:
        return None
    return (
        f"prompt style '{style}' does not apply to {scoring} scoring: it ranks each option's "
        "text by log-likelihood, with no reply to reason in (run it with prompt=zero_shot)"
    )


def find_template(
    root: Path, benchmark: str, kind: str, style: str, language: str, fallback: str | None = None
) -> Template:
    """Most specific template for (benchmark, kind, style, language), validated.

    ``fallback`` is the declared language whose template stands in when ``language`` has none.
    """
    names = [f"{style}.{lang}.txt" for lang in (language, fallback) if lang]
    for name in names:
        for folder in (root / "prompts" / benchmark / kind, root / "prompts" / "default" / kind):
            candidate = folder / name
            if candidate.exists():
                # Trailing newlines would sit between the prompt and the scored continuation.
                text = candidate.read_text(encoding="utf-8").rstrip("\n")
                template = Template(candidate, text)
                _validate(template, kind)
                return template
    declared = f" (or its declared fallback '{fallback}')" if fallback else ""
    raise TemplateError(
        f"no '{kind}' template for style '{style}' and language '{language}'{declared} under "
        f"{root / 'prompts' / benchmark} or {root / 'prompts' / 'default'}; add "
        f"prompts/{benchmark}/{kind}/{style}.{language}.txt or declare "
        f"prompt_fallback: {{{language}: en}} in the benchmark config"
    )


def _validate(template: Template, kind: str) -> None:
    present = {f for _, f, _, _ in string.Formatter().parse(template.text) if f}
    missing = REQUIRED_FIELDS.get(kind, set()) - present
    if missing:
        raise TemplateError(f"{template.path}: missing placeholder(s) {sorted(missing)}")
