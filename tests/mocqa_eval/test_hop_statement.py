"""The hop diagnostic on the engine's ``statement`` items (``twohop_hop@indonesia``).

Scripted models that use the clue, ignore it, or answer from the statement alone get the three
readings; every prompt tells the truth about its own condition; ``none`` drops the item's frame
sentence and ``oracle`` puts its naming sentence in its place, so no item is lost.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from cultureqa.knowledge import load_knowledge_base
from cultureqa.mocqa.hop import CONDITIONS, HopConfig, run_hop
from cultureqa.mocqa_shared.schema import CLUE_TYPES

ROOT = Path(__file__).resolve().parents[2]
PROVINCES = (("Aceh", "Aceh"), ("Bali", "Bali"), ("West Java", "Jawa Barat"), ("Papua", "Papua"))
TOLD = {
    "none": ("neither names the province nor describes it", "tidak menyebutkan nama provinsinya"),
    "clue": ("an indirect clue describes it", "petunjuk tidak langsung menggambarkannya"),
    "oracle": ("the question names the province", "nama provinsinya disebutkan dalam"),
}
"""What each condition's prompt tells the model about the province, per language."""


def statement_items(per_type: int = 7) -> pd.DataFrame:
    """Items laid out as the engine's statement format writes them (frame, stem, options)."""
    rows = []
    for k in range(per_type):
        name, name_id = PROVINCES[k % len(PROVINCES)]
        for ctype in CLUE_TYPES:
            clue = f"the province of fact {ctype} {k}"
            for lang, frame, ask, oracle in (
                ("en", f"Think of {clue}.", "In this province, which option completes",
                 f"The statement below is about {name}."),
                ("id", f"Bayangkan {clue}.", "Di provinsi tersebut, pilihan mana melengkapi",
                 f"Pernyataan berikut adalah tentang {name_id}."),
            ):  # fmt: skip
                rows.append({
                    "item_id": f"s{k}.{ctype}.{lang}", "pair_id": f"s{k}.{ctype}",
                    "source_id": f"s{k}", "clue_type": ctype, "language": lang,
                    "province": name, "topic": "Art",
                    "question": f'{frame} {ask} "statement {k} {ctype} …"?',
                    "options": [f"{lang} {ctype} {k} {x}" for x in "abc"],
                    "answer": "ABC"[k % 3], "clue": clue, "narrative": frame,
                    "background_oracle": oracle, "region": name,
                })  # fmt: skip
    return pd.DataFrame(rows)


def _scripted(
    items: pd.DataFrame, behaviour: str, seen: list[tuple[str, list[str]]]
) -> Callable[[list[dict[str, Any]]], str]:
    gold = {
        str(r.item_id).rsplit(".", 1)[0] + str(r.language): "ABC".index(str(r.answer))
        for r in items.itertuples()
    }
    frames = {str(n): str(p) for n, p in zip(items["narrative"], items["province"], strict=True)}
    oracles = set(items["background_oracle"])

    def respond(messages: list[dict[str, Any]]) -> str:
        prompt = str(messages[-1]["content"])
        k, ctype = re.findall(r'"statement (\d+) (\w+) …"', prompt)[-1]
        lang = "id" if "Pilihan" in prompt or "provinsi tersebut" in prompt else "en"
        right = "ABC"[gold[f"s{k}.{ctype}{lang}"]]
        wrong = next(x for x in "ABC" if x != right)
        named = any(o in prompt for o in oracles)
        frame = next((f for f in frames if f in prompt), None)
        told = [c for c, phrases in TOLD.items() if any(p in prompt for p in phrases)]
        seen.append(("oracle" if named else "clue" if frame else "none", told))
        knows = {"uses_clue": named or frame is not None, "ignores_clue": named,
                 "statement_alone": True}[behaviour]  # fmt: skip
        province = frames[frame] if frame is not None and behaviour == "uses_clue" else "unknown"
        return json.dumps({"province": province, "answer": right if knows else wrong})

    return respond


@pytest.mark.parametrize(
    ("behaviour", "expected"),
    [
        ("uses_clue", "clue needed"),
        ("ignores_clue", "clue unused"),
        ("statement_alone", "statement suffices"),
    ],
)
def test_scripted_models_produce_the_three_readings_on_statement_items(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, behaviour: str, expected: str
) -> None:
    from cultureqa.testing import FakeOpenAIServer

    monkeypatch.setenv("CULTUREQA_STATE_DIR", str(tmp_path / "state"))
    items = statement_items()
    config = HopConfig(model="scripted", limit=None, bootstrap=400, seed=3, margin=0.2)
    seen: list[tuple[str, list[str]]] = []
    with FakeOpenAIServer(responder=_scripted(items, behaviour, seen)) as server:
        model = {
            "id": f"scripted-{behaviour}", "backend": "litellm", "batch_size": 1,
            "concurrency": 8, "decoding": {"temperature": 0.0, "max_tokens": 64, "seed": None},
            "options": {"litellm_model": f"openai/{behaviour}", "api_base": server.api_base,
                        "api_key_env": None, "drop_params": True},
            "retry": {"attempts": 1, "initial_wait_s": 0.01, "max_wait_s": 0.05, "timeout_s": 5},
        }  # fmt: skip
        _, predictions, summary = run_hop(
            items, model, config, ROOT, tmp_path / "store", load_knowledge_base()
        )
    assert set(predictions["condition"]) == set(CONDITIONS)
    assert summary["dropped_clue_not_found"] == 0 and summary["paired_items"] == len(items)
    table = pd.DataFrame(summary["table"])
    overall = table[table["clue_type"] == "all"]
    assert set(overall["reading"]) == {expected}, overall[["language", "reading"]]
    assert {c for c, _ in seen} == set(CONDITIONS)
    assert all(told == [condition] for condition, told in seen), seen[:3]
    if behaviour == "uses_clue":
        assert (overall["first_hop"] == 1.0).all()
