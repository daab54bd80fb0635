"""A small ID-MoCQA-layout dataset (both languages of every item) for the human-validation tests."""

from __future__ import annotations

import secrets
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cultureqa.human.items import two_hop_items
from cultureqa.mocqa_shared.schema import CLUE_TYPES

PROVINCES = ("Aceh", "Bali", "Papua", "West Java", "North Sumatra", "East Java")


def mocqa_frame(pairs: int = 8, seed: int = 0) -> pd.DataFrame:
    """``pairs`` source items × 6 clue types × en/id, answers spread over A–C."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(pairs):
        province = PROVINCES[p % len(PROVINCES)]
        for clue_type in CLUE_TYPES:
            answer = "ABC"[int(rng.integers(3))]
            for lang, ask in (
                ("en", "Which dish is typical there?"),
                ("id", "Hidangan apa yang khas di sana?"),
            ):
                rows.append(
                    {
                        "item_id": f"s{p}.{clue_type}.{lang}",
                        "pair_id": f"s{p}",
                        "clue_type": clue_type,
                        "language": lang,
                        "province": province,
                        "question": f"[{clue_type} clue {p}] {ask}",
                        "options": [f"{lang} option {k}" for k in "ABC"],
                        "answer": answer,
                    }
                )
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def dataset() -> pd.DataFrame:
    return mocqa_frame()


@pytest.fixture(scope="module")
def items(dataset: pd.DataFrame) -> pd.DataFrame:
    return two_hop_items(dataset)


@dataclass
class RunningStudio:
    """A Label Studio server started for the session, with two annotator accounts."""

    url: str
    tokens: dict[str, str]  # annotator email -> API token
    data_dir: Path
    port: int
    startup_s: float


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def label_studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStudio]:
    """A real Label Studio (``.ls-venv``) on loopback, started once; stopped by its own pid."""
    from cultureqa.human import server

    if not server.LS_BIN.exists():
        pytest.fail(
            f"{server.LS_BIN} is missing: run `make labelstudio` (the labelstudio suite "
            "needs Label Studio's own environment)"
        )
    data_dir = tmp_path_factory.mktemp("label-studio")
    port = _free_port()
    tokens = {
        "annotator1@example.org": secrets.token_hex(20),
        "annotator2@example.org": secrets.token_hex(20),
    }
    owner, token = next(iter(tokens.items()))
    env_vars = {
        "LABEL_STUDIO_USERNAME": owner,
        "LABEL_STUDIO_PASSWORD": "pw-" + token[:12],
        "LABEL_STUDIO_USER_TOKEN": token,
    }
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env_vars.items():
            patch.setenv(key, value)
        env = server.environment(port, data_dir)
        log = (data_dir / "server.log").open("wb")
        process = subprocess.Popen(
            server.command(port, data_dir), env=env, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            url = f"http://127.0.0.1:{port}"
            waited = server.wait_healthy(url, process, timeout=600)  # a loaded 2-core machine
            for email, user_token in list(tokens.items())[1:]:
                server.add_user(data_dir, port, email, "pw-" + user_token[:12], user_token)
            yield RunningStudio(url, tokens, data_dir, port, waited)
        except server.ServerError as exc:
            tail = (data_dir / "server.log").read_text(errors="replace")[-2000:]
            pytest.fail(f"{exc}\n{tail}")
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
            log.close()
