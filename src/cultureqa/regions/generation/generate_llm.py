"""The LLM clue generator (``generator.kind: llm``): the model writes, the tables decide.

One request per (region, clue type) gives the model the region's facts and figures from the set's
tables and asks for the clue in every language of the set (``CLUE_<LANG>`` lines, one reply, so
the languages state one clue) and the claims it rests on (``CLAIMS``: ``fact``, ``between`` and
``range`` lines in the tables' own words). The claims become :mod:`.conditions` and are decided
over the whole universe by :func:`.conditions.decide`, the same proof as a table clue (this is
the generator's KB check): a claim no table holds, a claim false for the region, another region
that also fits, a region without a figure, a gap under the knowable-gap rule, or a clue naming its
region is sent back with what is wrong (the paper's "revise until unique", ``max_revisions``
rounds) and, if still wrong, refused with its reason and counted in the card. A kept clue is a
:class:`.clues.Clue` like any other: its evidence holds the cells behind every claim, the model,
the prompt version and the reply's claims as written.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cultureqa.llm.base import GenerateRequest
from cultureqa.llm.store import StoreLocation
from cultureqa.mocqa_shared.models import load_prompt
from cultureqa.regions.generation.clues import CLUE_LEAK_REASON, GAP_REASON, Clue, ClueBook, Clues
from cultureqa.regions.generation.conditions import Condition, decide, near_bound, relative_gap
from cultureqa.regions.judges.panel import language_name
from cultureqa.regions.llm.ask import Answer, ask, revise
from cultureqa.regions.llm.parse import parse_number
from cultureqa.regions.sources.source import _region_index as region_index

GENERATE_SLOTS = ("noun", "region", "clue_type", "facts", "figures", "frame", "answer_format")
UNUSABLE = "unusable generator reply"
NOT_IN_TABLES = "claim not in the tables"
CONTRADICTED = "claim contradicted by the tables"
NOT_UNIQUE = "not unique"
WRONG_TYPE = "claims do not make a clue of its type"
_CLAIM = re.compile(r"^[\s>*-]*(fact|between|range)\s*\**\s*:\s*(.+?)\s*$", re.I | re.M)


@dataclass(frozen=True)
class LlmClueConfig:
    """``conf/generator/llm.yaml`` (model, revision rounds) and the engine's prompt file."""

    model: Mapping[str, Any]
    prompt: Path
    max_revisions: int = 2

    @property
    def model_id(self) -> str:
        """Display id recorded in each clue's evidence."""
        return str(self.model.get("id", "llm"))

    @classmethod
    def from_params(
        cls, generator: Mapping[str, Any], prompt: str, root: Path
    ) -> LlmClueConfig | None:
        """None for ``kind: template`` (the tables write the clues); a config for ``llm``."""
        kind = str(generator.get("kind"))
        if kind == "template":
            return None
        if kind != "llm" or not generator.get("model"):
            raise ValueError(
                f"generator.kind must be 'template' or 'llm' with a model, got {kind!r}"
            )
        return cls(dict(generator["model"]), root / prompt, int(generator.get("max_revisions", 2)))


@dataclass
class _Job:
    target: str
    clue_type: str
    request: GenerateRequest
    answer: Answer = field(default_factory=lambda: Answer(None, "", "not asked"))
    rounds: int = 0


class ClaimError(ValueError):
    """A reply's claims cannot be read or decided: ``reason`` is the refusal's count key."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


class LlmClues:
    """Ask, revise and decide the model's clues of one region set (its :class:`.Clues`)."""

    def __init__(self, clues: Clues, config: LlmClueConfig) -> None:
        self.clues, self.rs, self.kb, self.config = clues, clues.rs, clues.kb, config
        self.first = self.rs.languages[0]
        self.names = region_index(self.kb.regions)
        self.values = {
            cid: {str(c.value).casefold(): c.value for cells in table.values() for c in cells}
            for cid, table in self.kb.categories.items()
        }

    # -- the request -----------------------------------------------------------------------
    def _facts(self, target: str) -> str:
        lines = []
        for cat in self.rs.categories:
            role = cat.clue_type or "classification"
            for cell in self.kb.categories[cat.table.id].get(target, []):
                value = (
                    self.kb.name(str(cell.value), self.first) if cat.value_is_region else cell.value
                )
                lines.append(f"- {cat.table.id} ({role}): {value}")
        return "\n".join(lines) or "- none"

    def _figures(self, target: str) -> str:
        lines = []
        for ind in self.rs.indicators:
            cell = self.kb.indicators[ind.table.id].get(target)
            if cell is not None:
                label = ind.label.get(self.first, ind.table.id)
                lines.append(f"- {ind.table.id}: {label}, {ind.table.year}: {cell.value}")
        return "\n".join(lines) or "- none"

    def _answer_format(self) -> str:
        lines = [
            f"CLUE_{lang.upper()}: <the clue in {language_name(lang)}: one noun phrase>"
            for lang in self.rs.languages
        ]
        return "\n".join(
            [*lines, "CLAIMS:", "- fact: <fact kind> = <value>",
             "- between: <figure id> | <region just below> | <region just above>",
             "- range: <figure id> | <lower bound or -> | <upper bound or ->"]
        )  # fmt: skip

    def _request(self, target: str, clue_type: str) -> GenerateRequest:
        prompt = load_prompt(self.config.prompt, GENERATE_SLOTS)
        return prompt.request(
            self.config.model,
            noun=self.rs.noun[self.first],
            region=self.kb.name(target, self.first),
            clue_type=clue_type,
            facts=self._facts(target),
            figures=self._figures(target),
            frame=self.rs.templates[self.first]["frame"].format(clue="<CLUE>"),
            answer_format=self._answer_format(),
        )

    # -- deciding a reply --------------------------------------------------------------------
    def _region(self, name: str) -> str:
        rid = self.names.get(name.strip().casefold())
        if rid is None:
            raise ClaimError(NOT_IN_TABLES, f"'{name.strip()}' is not a region of the set")
        return rid

    def _condition(self, kind: str, text: str) -> Condition:
        if kind == "fact":
            cid, _, value = (p.strip() for p in text.partition("="))
            if cid not in self.kb.categories:
                raise ClaimError(NOT_IN_TABLES, f"no fact kind '{cid}' in the tables")
            if self.rs.category(cid).value_is_region:
                return {"kind": "category", "category": cid, "value": self._region(value)}
            if value.casefold() not in self.values[cid]:
                raise ClaimError(NOT_IN_TABLES, f"no region has {cid} = '{value}' in the tables")
            return {
                "kind": "category",
                "category": cid,
                "value": self.values[cid][value.casefold()],
            }
        parts = [p.strip() for p in text.split("|")]
        if len(parts) != 3 or parts[0] not in self.kb.indicators:
            raise ClaimError(NOT_IN_TABLES, f"'{kind}: {text}' is not '<figure id> | … | …'")
        if kind == "range":
            bounds = [None if p in ("", "-") else parse_number(p) for p in parts[1:]]
            if bounds == [None, None] or any(
                b is None and p not in ("", "-") for b, p in zip(bounds, parts[1:], strict=True)
            ):
                raise ClaimError(NOT_IN_TABLES, f"'range: {text}' has no numeric bound")
            return {"kind": "range", "indicator": parts[0], "low": bounds[0], "high": bounds[1]}
        table = self.kb.indicators[parts[0]]
        pair = [self._region(p) for p in parts[1:]]
        if any(r not in table for r in pair):
            raise ClaimError(NOT_IN_TABLES, f"no {parts[0]} figure for {pair}")
        ordered = sorted(pair, key=lambda r: float(table[r].value))
        return {
            "kind": "between", "indicator": parts[0],
            "low_region": ordered[0], "high_region": ordered[1],
        }  # fmt: skip

    def _fits_type(self, clue_type: str, conds: Sequence[Condition]) -> None:
        kinds = {c["kind"] for c in conds}
        own = {c.table.id for c in self.rs.categories if c.clue_type == clue_type}
        ok = {
            "comparison": "between" in kinds,
            "intersection": len(conds) >= 2,
        }.get(clue_type, any(c.get("category") in own for c in conds))
        if not ok:
            raise ClaimError(
                WRONG_TYPE,
                f"a {clue_type} clue needs {_NEEDS.get(clue_type, 'a fact of its type')}",
            )

    def _decide(self, job: _Job) -> Clue:
        """The clue the reply states, proved over the universe; ClaimError when it is not."""
        reply = job.answer.reply
        if reply is None:
            raise ClaimError(UNUSABLE, job.answer.error or "no reply")
        text = {lang: reply.get(f"CLUE_{lang.upper()}").rstrip(".") for lang in self.rs.languages}
        if missing := [lang for lang, t in text.items() if not t]:
            raise ClaimError(UNUSABLE, f"reply lacks the CLUE line for {missing}")
        claims = _CLAIM.findall(job.answer.text)
        if not claims:
            raise ClaimError(UNUSABLE, "reply lists no CLAIMS (fact, between or range lines)")
        conds = [self._condition(kind.lower(), body) for kind, body in claims]
        self._fits_type(job.clue_type, conds)
        complete = self.clues.complete
        decision = decide(conds, self.kb, complete)
        if job.target not in (*decision.holders, *decision.unknown):
            false = [c for c in conds if job.target not in decide([c], self.kb, complete).holders]
            raise ClaimError(CONTRADICTED, f"false for {self._n(job.target)}: {false}")
        if decision.holders != (job.target,) or decision.unknown:
            others = [self._n(r) for r in (*decision.holders, *decision.unknown) if r != job.target]
            raise ClaimError(NOT_UNIQUE, f"the claims also fit (or cannot rule out) {others}")
        self._gaps(job.target, conds)
        clue = self.clues._make(job.clue_type, job.target, conds, {})
        evidence = {
            **clue.evidence, "generator": f"llm:{self.config.model_id}",
            "prompt_version": job.request.template_version, "revisions": job.rounds,
            "claims": [f"{k.lower()}: {b}" for k, b in claims],
        }  # fmt: skip
        made = dataclasses.replace(clue, text=text, evidence=evidence)
        if named := self.clues._names_target(made):
            raise ClaimError(CLUE_LEAK_REASON, f"the clue names {named}")
        return made

    def _gaps(self, target: str, conds: Sequence[Condition]) -> None:
        margins = self.clues.margins
        for cond in conds:
            if cond["kind"] == "between":
                table = self.kb.indicators[cond["indicator"]]
                value = float(table[target].value)
                gap = min(
                    relative_gap(value, float(table[cond[s]].value))
                    for s in ("low_region", "high_region")
                )
                if gap < margins[cond["indicator"]]:
                    raise ClaimError(GAP_REASON, f"{cond['indicator']}: gap {gap:.3f}")
        if near := near_bound(conds, self.kb, self.clues.complete, margins):
            raise ClaimError(GAP_REASON, f"a figure near a bound: {near[0]}")

    def _n(self, rid: str) -> str:
        return self.kb.name(rid, self.first)

    # -- the rounds ------------------------------------------------------------------------
    def build(self, targets: Sequence[str], store_path: StoreLocation) -> ClueBook:
        """One model clue per (target, clue type) that the tables prove, or a counted refusal."""
        book = ClueBook()
        jobs = [
            _Job(t, c, self._request(t, c))
            for t in sorted(set(targets))
            for c in self.rs.clue_types
        ]
        pending = jobs
        for round_ in range(self.config.max_revisions + 1):
            answers = ask("generator", self.config.model, [j.request for j in pending], store_path)
            retry = []
            for job, answer in zip(pending, answers, strict=True):
                job.answer, job.rounds = answer, round_
                problem = self._problem(job)
                if problem and answer.reply is not None:
                    retry.append((job, problem))
            if round_ == self.config.max_revisions or not retry:
                break
            for job, problem in retry:
                job.request = revise(job.request, job.answer.text, problem)
            pending = [job for job, _ in retry]
        for job in jobs:
            try:
                book.clues.setdefault((job.target, job.clue_type), []).append(self._decide(job))
            except ClaimError as exc:
                book.clues.setdefault((job.target, job.clue_type), [])
                book.refused[(job.target, job.clue_type, exc.reason)] += 1
        return book

    def _problem(self, job: _Job) -> str:
        try:
            self._decide(job)
        except ClaimError as exc:
            return f"{exc.reason}: {exc}"
        return ""


_NEEDS = {
    "comparison": "a 'between' claim (its figure between two named regions')",
    "intersection": "at least two claims, each needed",
}


def generate_clues(
    clues: Clues, targets: Sequence[str], config: LlmClueConfig, store_path: StoreLocation
) -> ClueBook:
    """The model's clues for ``targets``, each proved by the tables (:class:`LlmClues`)."""
    return LlmClues(clues, config).build(targets, store_path)
