"""Parse the labelled replies of the LLM generator, repairer, structure checker and translator.

The prompts ask for ``LABEL: value`` lines; comparison replies add a VERIFY block (claim, data,
source, year, unique) and intersection replies S1 / S1_PROVINCES / S2 / INTERSECTION lines, as in
the paper. Parsing is strict about what must be there and tolerant about layout (markdown bold,
bullets, extra prose), and never guesses: a missing field is reported, not invented.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

_LABEL = re.compile(r"^\s*[-*#>\s]*\**\s*([A-Z][A-Z0-9_ ]{0,30}[A-Z0-9])\s*\**\s*:\s*\**\s*(.*)$")
_KEY = re.compile(r"^\s*[-*]?\s*\**\s*([a-z][a-z_ /]{1,20})\s*\**\s*:\s*(.*)$")
VERIFY_KEYS = ("claim", "data", "source", "year", "unique")


@dataclass
class Reply:
    """Labelled fields (upper-case labels) and the VERIFY block's keys, as written."""

    fields: dict[str, str] = field(default_factory=dict)
    verify: dict[str, str] = field(default_factory=dict)

    def get(self, label: str) -> str:
        """A field's text ('' when absent)."""
        return self.fields.get(label, "").strip()


def parse_labelled(text: str) -> Reply:
    """Split a reply into labelled fields; lines without a label continue the previous field."""
    reply = Reply()
    current: str | None = None
    in_verify = False
    for line in text.replace("\r", "").split("\n"):
        label = _LABEL.match(line)
        if label:
            current = label.group(1).strip().upper().replace(" ", "_")
            in_verify = current == "VERIFY"
            reply.fields[current] = label.group(2).strip().strip("*").strip()
            continue
        key = _KEY.match(line) if in_verify else None
        if key and key.group(1).strip().split("/")[0] in VERIFY_KEYS:
            name = key.group(1).strip().split("/")[0]
            reply.verify[name] = key.group(2).strip()
            current = f"verify:{name}"
            continue
        if current and line.strip():
            if current.startswith("verify:"):
                name = current.split(":", 1)[1]
                reply.verify[name] = f"{reply.verify[name]} {line.strip()}".strip()
            else:
                reply.fields[current] = f"{reply.fields[current]} {line.strip()}".strip()
    return reply


def parse_number(text: str) -> float | None:
    """The first number in ``text``; None when there is none.

    Accepts the English (48,274,162.5) and the Indonesian (48.274.162,5) way of writing it.
    """
    found = re.search(r"-?\d[\d.,]*", text)
    if found is None:
        return None
    raw = found.group().rstrip(".,")
    if re.fullmatch(r"-?\d{1,3}(,\d{3})+(\.\d+)?", raw):
        raw = raw.replace(",", "")
    elif re.fullmatch(r"-?\d{1,3}(\.\d{3})+(,\d+)?", raw):
        raw = raw.replace(".", "").replace(",", ".")
    else:
        raw = raw.replace(",", ".")
    try:
        return float(raw)
    except ValueError:
        return None


def parse_data(text: str) -> dict[str, float]:
    """``Name = value; Name: value`` pairs of a VERIFY data line (unparseable parts skipped)."""
    out = {}
    for part in re.split(r"[;\n]", text):
        pair = re.match(r"\s*(.+?)\s*[=:]\s*(.+)$", part)
        number = parse_number(pair.group(2)) if pair else None
        if pair and number is not None:
            out[pair.group(1).strip(" -*")] = number
    return out


def split_names(text: str) -> list[str]:
    """A list of names separated by semicolons, commas or 'and'; parenthetical proofs dropped."""
    cleaned = re.sub(r"\([^)]*\)", "", text)
    parts = re.split(r";|,|\band\b|\bdan\b|\n", cleaned)
    return [p.strip(" .-*") for p in parts if p.strip(" .-*")]


def is_yes(value: str) -> bool:
    """Whether a VERIFY ``unique`` value says yes (YES, Yes., ya)."""
    return value.strip().strip(".*").lower() in ("yes", "ya", "y", "true")


def needs_major_revision(text: str) -> bool:
    """The structure checker's verdict that an item cannot be saved."""
    return "[NEEDS MAJOR REVISION]" in text.upper()


def verify_summary(reply: Reply) -> Mapping[str, object]:
    """The VERIFY block as evidence: claim, parsed data, source, year, unique."""
    return {
        "claim_text": reply.verify.get("claim", ""),
        "data": parse_data(reply.verify.get("data", "")),
        "source": reply.verify.get("source", ""),
        "year": reply.verify.get("year", ""),
        "unique": is_yes(reply.verify.get("unique", "")),
    }
