"""Find an answering instruction that every question carries ("Answer with the letter only.").

Published files often bake the authors' prompt into the question. Left in, it is sent beside
cultureqa's own prompt template, which asks for the answer its own way, so the model reads two
instructions. A text counts as an instruction when every sampled question starts (or ends) with
it, it is a sentence or line of its own (it ends, or follows, a ``.?!:`` or a line break: a shared
"Where is" or " from?" is part of the question) and it is at least :data:`MIN_CHARS` characters
of :data:`MIN_WORDS` words. The proposal strips it with the question template (``removeprefix`` /
``removesuffix``), so the config shows exactly what goes.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass

import pandas as pd

from cultureqa.authoring.sniff.fields import texts
from cultureqa.benchmarks.load.pipeline import OPTION_LIST

MIN_ROWS = 3
MIN_CHARS = 12
MIN_WORDS = 3
_BOUNDARY = re.compile(r"[.?!:]\s+|\n\s*")


@dataclass(frozen=True)
class Instruction:
    """The shared prefix and suffix (either may be empty) of every sampled question."""

    prefix: str = ""
    suffix: str = ""
    padded: bool = False
    """Some questions have white space around them: the template strips it first."""

    def template(self, ref: str) -> str:
        """The question template that strips both from the field ``ref``."""
        expr = f"{ref}.strip()" if self.padded else ref
        if self.prefix:
            expr += f".removeprefix({json.dumps(self.prefix, ensure_ascii=False)})"
        if self.suffix:
            expr += f".removesuffix({json.dumps(self.suffix, ensure_ascii=False)})"
        return f"{{{{ {expr} }}}}"

    def notes(self, field: str) -> list[str]:
        """What the user should read about the stripped text."""
        found = [("starts", self.prefix), ("ends", self.suffix)]
        return [f"every sampled question in '{field}' {where} with the instruction {text!r}: the "
                "question template strips it (the prompt template asks for the answer itself)"
                for where, text in found if text]  # fmt: skip


def find_instruction(values: pd.Series) -> Instruction | None:
    """The instruction every question shares at its start or end, or None."""
    shown = texts(values)
    if len(shown) < MIN_ROWS or len(shown) < len(values):
        return None
    questions = list(shown)
    prefix = _prefix(questions)
    rest = [q[len(prefix) :] for q in questions]
    suffix = _suffix(rest)
    if not (prefix or suffix):
        return None
    kept = [q[: len(q) - len(suffix)].strip() if suffix else q.strip() for q in rest]
    if any(len(q) < MIN_ROWS for q in kept):
        return None  # nothing of the question would be left
    padded = any(str(v) != str(v).strip() for v in values)
    return Instruction(prefix, suffix, padded)


def _prefix(questions: list[str]) -> str:
    common = _common_start(questions)
    cuts = [m.end() for m in _BOUNDARY.finditer(common)]
    for cut in reversed(cuts):
        if _is_instruction(common[:cut]):
            return common[:cut]
    return ""


def _suffix(questions: list[str]) -> str:
    common = _common_start([q[::-1] for q in questions])[::-1]
    for start in [0, *(m.end() for m in _BOUNDARY.finditer(common))]:
        suffix = common[start:]
        before = [q[: len(q) - len(suffix)] for q in questions]
        if _is_instruction(suffix) and all(_ends_sentence(b) for b in before):
            return suffix
    return ""


def _common_start(texts: list[str]) -> str:
    first = min(texts, key=len)
    for n, char in enumerate(first):
        if any(t[n] != char for t in texts):
            return first[:n]
    return first


def _ends_sentence(text: str) -> bool:
    stripped = text.rstrip()
    return not stripped or stripped[-1] in ".?!:" or "\n" in text[len(stripped) :]


def _is_instruction(text: str) -> bool:
    return len(text.strip()) >= MIN_CHARS and len(text.split()) >= MIN_WORDS


OPTION_BLOCK = OPTION_LIST
"""A lettered option list inside a text (the loader refuses a question that keeps one)."""


@dataclass(frozen=True)
class Embedded:
    """The authors' instruction and option list inside every question, after the question.

    BLEnD's MCQ prompts put "Without any explanation, choose only one …" after the question, then
    the lettered options, then "Answer:"; the question is the text before the first of them.
    """

    cut: str
    """The text every question is cut at (the shared instruction, or the first option line)."""
    instruction: str
    has_options: bool

    def template(self, ref: str) -> str:
        """The question template that keeps what comes before :attr:`cut`."""
        return f"{{{{ {ref}.split({json.dumps(self.cut, ensure_ascii=False)})[0].strip() }}}}"

    def notes(self, field: str) -> list[str]:
        """What the user should read about the stripped text."""
        what = [f"the instruction {self.instruction!r}"] if self.instruction else []
        what += ["a lettered option list"] if self.has_options else []
        return [f"every sampled question in '{field}' holds {' and '.join(what)} after the "
                "question: the question template keeps only the text before them (the prompt "
                "template lists the options and asks for the answer itself)"]  # fmt: skip


def find_embedded(values: pd.Series) -> Embedded | None:
    """The instruction or option list every question carries after its own text, or None.

    The instruction is a sentence (or line) every sampled question contains; the option list a
    line ``A. …`` followed by ``B. …``. The question is what comes before the first of them, and
    must be left in every row.
    """
    shown = texts(values)
    if len(shown) < MIN_ROWS or len(shown) < len(values):
        return None
    questions = list(shown)
    blocks = [OPTION_BLOCK.search(q) for q in questions]
    instruction = _shared_sentence(questions)
    if instruction is None and not all(blocks):
        return None
    if instruction is not None:
        cut = instruction
    else:  # the first option line's marker, as every question writes it
        marks = {q[m.start() : m.start() + q[m.start() :].index("A") + 2] for q, m in
                 zip(questions, blocks, strict=True) if m}  # fmt: skip
        if len(marks) != 1:
            return None
        cut = "\n" + marks.pop().lstrip("\n")
    kept = [q.split(cut)[0].strip() for q in questions]
    if any(len(k) < MIN_ROWS or OPTION_BLOCK.search(k) for k in kept):
        return None  # the options come before the cut, or nothing of the question is left
    return Embedded(cut, instruction or "", all(blocks))


def _shared_sentence(questions: list[str]) -> str | None:
    """The longest sentence of the first question that every other one contains mid-text."""
    first = questions[0]
    cuts = [0, *(m.end() for m in _BOUNDARY.finditer(first)), len(first)]
    sentences = {first[a:b].strip() for a, b in itertools.pairwise(cuts)}
    shared = [s for s in sentences if _is_instruction(s)
              and all(s in q and not q.startswith(s) for q in questions)]  # fmt: skip
    return max(shared, key=len) if shared else None
