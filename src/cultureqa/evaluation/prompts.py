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
