"""LLM clue generator (``generator=llm``): the paper's prompts, parsed and checked against the KB.

One prompt per clue type (``prompts/mocqa/generate/<clue>.en.txt``) states the principle and
gives few-shot examples; the model (default claude-3-7-sonnet at temperature 1) writes the CLUE
and the full QUESTION in every build language in one reply (``CLUE_EN``/``QUESTION_EN``,
``CLUE_ID``/``QUESTION_ID``), as the paper does, so the English and Indonesian versions state
the same clue and share one VERIFY or S1/S2 block. Comparison replies must carry a VERIFY
block and are sent back for revision while it is missing or says ``unique: NO``; intersection
replies must list S1 (≥ 3 provinces), S2 and an INTERSECTION naming the target. Where the KB
can check a claim it is checked, and a contradiction rejects the pair (DESIGN.md §5.2).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.knowledge.gazetteer import normalize_province
from cultureqa.knowledge.provinces import KnowledgeBase
from cultureqa.llm.base import GenerateRequest
from cultureqa.llm.store import StoreLocation
from cultureqa.mocqa_build.expand import expand_result, source_side, variant_row
from cultureqa.mocqa_build.judge import LANGUAGE_NAMES, format_options
from cultureqa.mocqa_build.llm.kb_check import (
    check_comparison,
    check_comparison_nationally,
    check_named,
    intersection_problem,
)
from cultureqa.mocqa_build.stage import StageResult
from cultureqa.mocqa_shared.models import Prompt, load_prompt
from cultureqa.mocqa_shared.schema import CLUE_TYPES, pair_id, variant_id
from cultureqa.regions.llm.ask import ask, revise
from cultureqa.regions.llm.parse import Reply, verify_summary

GENERATE_SLOTS = ("province", "context", "options", "answer", "language", "topic", "answer_format")


@dataclass(frozen=True)
class LlmGeneratorConfig:
    """``conf/generator/llm.yaml``."""

    model: Mapping[str, Any]
    prompts_dir: Path
    max_revisions: int = 2

    def prompt(self, clue_type: str) -> Prompt:
        """The generation prompt of one clue type."""
        return load_prompt(self.prompts_dir / "generate" / f"{clue_type}.en.txt", GENERATE_SLOTS)

    @property
    def model_id(self) -> str:
        """Display id recorded in the ``generator`` column."""
        return str(self.model.get("id", "llm"))


@dataclass
class _Job:
    item: pd.Series
    clue_type: str
    languages: tuple[str, ...]
    request: GenerateRequest
    reply: Reply | None = None
    reply_text: str = ""
    error: str = ""


def answer_format(languages: Sequence[str]) -> str:
    """The labelled lines the reply must hold, one CLUE and one QUESTION per language."""
    lines = []
    for language in languages:
        name, tag = LANGUAGE_NAMES.get(language, language), language.upper()
        lines.append(f"CLUE_{tag}: <one sentence in {name}: the first hop>")
        lines.append(
            f"QUESTION_{tag}: <the full question in {name}: the clue, then the statement as a "
            "question about that province>"
        )
    return "\n".join(lines)


def _sources(item: pd.Series, languages: Sequence[str]) -> tuple[str, str]:
    """The statement and options in every language the source has (labelled by language)."""
    contexts, options = [], []
    for language in languages:
        context, opts = source_side(item, language)
        if context.strip():
            name = LANGUAGE_NAMES.get(language, language)
            contexts.append(f"{name}: {context}")
            options.append(f"{name}:\n{format_options(opts)}")
    return "\n".join(contexts), "\n".join(options)


def _requests(
    items: pd.DataFrame,
    config: LlmGeneratorConfig,
    clue_types: Sequence[str],
    languages: Sequence[str],
) -> list[_Job]:
    jobs = []
    names = " and ".join(LANGUAGE_NAMES.get(x, x) for x in languages)
    for _, item in items.sort_values("source_id").iterrows():
        context, options = _sources(item, languages)
        for clue_type in clue_types:
            request = config.prompt(clue_type).request(
                config.model,
                province=item["province"],
                context=context,
                options=options,
                answer=item["answer"],
                language=names,
                topic=item["topic"],
                answer_format=answer_format(languages),
            )
            jobs.append(_Job(item, clue_type, tuple(languages), request))
    return jobs


def _problem(job: _Job) -> str:
    """Why a parsed reply cannot be used yet ('' when it can)."""
    reply = job.reply
    if reply is None:
        return job.error or "model call failed"
    for language in job.languages:
        tag = language.upper()
        if not reply.get(f"QUESTION_{tag}") or not reply.get(f"CLUE_{tag}"):
            return f"reply lacks the CLUE_{tag} and QUESTION_{tag} lines"
    if job.clue_type == "comparison" and not (
        reply.verify.get("claim") and reply.verify.get("data")
    ):
        return "comparison reply lacks a VERIFY block with claim and data"
    if job.clue_type == "comparison" and not verify_summary(reply)["unique"]:
        return "comparison VERIFY block does not say unique: YES"
    if job.clue_type == "intersection":
        return intersection_problem(reply, str(job.item["province"]), normalize_province)
    return ""


def _revise(job: _Job, problem: str) -> GenerateRequest:
    """Send the reply back with what is wrong (the paper's "revise until unique")."""
    return revise(job.request, job.reply_text, problem)


def _ask(jobs: list[_Job], config: LlmGeneratorConfig, store_path: StoreLocation) -> None:
    answers = ask("generator", config.model, [j.request for j in jobs], store_path)
    for job, answer in zip(jobs, answers, strict=True):
        job.reply, job.reply_text, job.error = answer.reply, answer.text, answer.error


def generate_llm(
    items: pd.DataFrame,
    kb: KnowledgeBase,
    config: LlmGeneratorConfig,
    store_path: StoreLocation,
    clue_types: Sequence[str] = CLUE_TYPES,
    languages: Sequence[str] = ("en", "id"),
    national: KnowledgeBase | None = None,
) -> StageResult:
    """Generate, revise (up to ``max_revisions`` rounds), KB-check and build variant rows.

    ``national`` (every province of Indonesia) re-verifies superlative comparison claims over
    their whole scope, not only over the provinces the model listed.
    """
    jobs = _requests(items, config, clue_types, languages)
    pending = jobs
    for round_ in range(config.max_revisions + 1):
        _ask(pending, config, store_path)
        retry = [j for j in pending if j.reply is not None and _problem(j)]
        if round_ == config.max_revisions or not retry:
            break
        for job in retry:
            job.request = _revise(job, _problem(job))
        pending = retry
    rows, failures = [], []
    for job in jobs:
        made = _rows(job, kb, config, national)
        if isinstance(made, list):
            rows += made
            continue
        for language in job.languages:  # one reply for both languages: both fail together
            failures.append(
                {
                    "variant_id": variant_id(job.item["source_id"], job.clue_type, language),
                    "pair_id": pair_id(job.item["source_id"], job.clue_type),
                    "language": language,
                    "reason": made[0],
                    "detail": made[1],
                }
            )
    return expand_result(items, rows, failures, clue_types, languages, f"llm:{config.model_id}")


def _rows(
    job: _Job,
    kb: KnowledgeBase,
    config: LlmGeneratorConfig,
    national: KnowledgeBase | None = None,
) -> list[dict[str, Any]] | tuple[str, str]:
    """One variant row per language from one reply, or why the reply cannot be used."""
    problem = _problem(job)
    if problem:
        return ("unusable generator reply", problem)
    assert job.reply is not None
    reply = job.reply
    province = str(job.item["province"])
    evidence: dict[str, Any] = {"clue_type": job.clue_type, "model": config.model_id}
    first_clue = reply.get(f"CLUE_{job.languages[0].upper()}")
    if job.clue_type == "comparison":
        evidence.update(verify_summary(reply))
        evidence["kb_check"], note = check_comparison(kb, evidence, province, normalize_province)
        if national is not None and evidence["kb_check"] != "disagrees":
            verdict, national_note = check_comparison_nationally(national, evidence, province)
            if verdict != "unverifiable":  # the national table decides where it can
                evidence["kb_check"], note = verdict, national_note
    elif job.clue_type == "intersection":
        evidence["kb_check"], note = (
            "unverifiable",
            "S1 ≥ 3 provinces and S1∩S2 = target, as listed",
        )
        evidence.update(
            {k.lower(): reply.get(k) for k in ("S1", "S1_PROVINCES", "S2", "INTERSECTION")}
        )
    else:
        evidence["kb_check"], note = check_named(kb, first_clue, province)
    evidence["kb_note"] = note
    if evidence["kb_check"] == "disagrees":
        return ("claim contradicted by the knowledge base", note)
    prompt_version = job.request.template_version
    return [
        variant_row(
            job.item,
            job.clue_type,
            language,
            reply.get(f"CLUE_{language.upper()}"),
            reply.get(f"QUESTION_{language.upper()}"),
            source_side(job.item, language)[0],
            evidence,
            f"llm:{config.model_id}",
            f"prompt:{job.clue_type}:{prompt_version}",
            "",
        )
        for language in job.languages
    ]
