"""The two-hop diagnostic (docs/twohop-engine.md §5): one truthful prompt per condition, the first
hop scored from the model's own answer, each item's chance 1 / its options.

A scripted model behind the fake OpenAI-compatible server reads the prompt as a model would: it
names the land when the clue prompt asks for it (from the clue it is shown) and answers right only
when the background identifies the land.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from cultureqa.mocqa.hop import CONDITIONS, HopConfig
from cultureqa.regions.config import RegionSet
from cultureqa.regions.hop import first_hop, region_names, run_hop
from cultureqa.regions.judges.checks import CheckConfig
from cultureqa.regions.pipeline import run_build
from tests.regions.invented import write_invented

ROOT = Path(__file__).resolve().parents[2]
_OPTION = re.compile(r"^([A-F])\. (.*)$", re.M)


def _scripted(
    dataset: pd.DataFrame, names: dict[str, str], seen: list[tuple[str, str]]
) -> Callable[[list[dict[str, Any]]], str]:
    letters = "ABCDEF"
    gold = {
        (r["question"], tuple(r[f"option_{x}"] for x in letters)): r["answer"]
        for r in dataset.to_dict("records")
    }
    clues = {str(r.clue): names[str(r.region)] for r in dataset.itertuples()}
    oracles = {f"This scenario takes place in {n}." for n in names.values()}

    def respond(messages: list[dict[str, Any]]) -> str:
        system, user = str(messages[0]["content"]), str(messages[-1]["content"])
        question = user.split("Question: ", 1)[1].split("\n", 1)[0].strip()
        options = dict(_OPTION.findall(user))
        right = gold[(question, tuple(options[x] for x in letters))]
        clue = next((c for c in clues if c in user), None)
        condition = "oracle" if any(o in user for o in oracles) else "clue" if clue else "none"
        seen.append((condition, system))
        reply: dict[str, Any] = {"comparison": {"foreign": "x", "china": "y"}}
        if "Name the country the clue identifies" in system:
            reply["country"] = clues[clue] if clue else "unknown"
        knows = condition != "none"
        reply["selection"] = right if knows else next(k for k in "ABCDEF" if k != right)
        return json.dumps(reply)

    return respond


@pytest.fixture
def invented_dataset(tmp_path: Path) -> tuple[pd.DataFrame, Path, dict[str, frozenset[str]]]:
    raw = write_invented(tmp_path)
    rs = RegionSet.from_params(raw, tmp_path)
    data = run_build(rs, tmp_path, 13, CheckConfig()).dataset
    data = data[data["language"] == "en"].reset_index(drop=True)
    path = tmp_path / "dataset.parquet"
    data.to_parquet(path)
    return data, path, region_names(rs, tmp_path)


def test_each_condition_has_its_own_truthful_prompt_and_the_first_hop_is_scored(
    invented_dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cultureqa.testing import FakeOpenAIServer

    monkeypatch.setenv("CULTUREQA_STATE_DIR", str(tmp_path / "state"))
    data, path, names = invented_dataset
    english = {"VEL": "Veloria", "QUI": "Quintar", "OST": "Ostrabia", "LUM": "Lumeth",
               "DRA": "Dravenna"}  # fmt: skip
    seen: list[tuple[str, str]] = []
    config = HopConfig(model="scripted", prompt="zero_shot", limit=None, bootstrap=200, seed=3)
    with FakeOpenAIServer(responder=_scripted(data, english, seen)) as server:
        model = {
            "id": "scripted-uses-clue", "backend": "litellm", "batch_size": 1, "concurrency": 4,
            "decoding": {"temperature": 0.0, "max_tokens": 128, "seed": None},
            "options": {"litellm_model": "openai/uses-clue", "api_base": server.api_base,
                        "api_key_env": None, "drop_params": True},
            "retry": {"attempts": 1, "initial_wait_s": 0.01, "max_wait_s": 0.05, "timeout_s": 5},
        }  # fmt: skip
        table, _, summary = run_hop(
            data, str(path), model, config, ROOT, tmp_path / "responses.sqlite", names
        )
    assert {c for c, _ in seen} == set(CONDITIONS)
    for condition, system in seen:  # only the clue prompt speaks of a clue
        assert ("clue" in system) == (condition == "clue"), condition
        assert ("names the country" in system) == (condition == "oracle"), condition
    overall = table[table["clue_type"] == "all"].iloc[0]
    assert overall["first_hop"] == 1.0 and overall["clue"] == 1.0 and overall["none"] == 0.0
    assert summary["first_hop"] == 1.0
    assert summary["chance"] == round(1 / 6, 4)


def test_the_first_hop_matches_names_and_aliases_not_other_lands() -> None:
    names = {"VEL": frozenset({"Veloria", "the Velorian Marches"}), "QUI": frozenset({"Quintar"})}
    assert first_hop('{"country": "veloria"}', "VEL", names)
    assert first_hop('{"country": "Velorian Marches", "selection": "A"}', "VEL", names)
    assert not first_hop('{"country": "Quintar"}', "VEL", names)
    assert not first_hop("Veloria", "VEL", names)  # not the asked field: not an answer
    assert not first_hop('{"selection": "A"}', "VEL", names)
