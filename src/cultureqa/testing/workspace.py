"""A scratch pipeline workspace wired to an OpenAI-compatible endpoint (tests and bench/).

It holds what a stage needs — params.yaml, prompts, expectations and a synthetic benchmark — so
the real stage scripts can run against the fake server exactly as DVC would run them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from cultureqa.core.params_digest import digest

# Short configured delays: tests never sleep through a production backoff (0.2 s doubling to 5 s).
DEFAULT_RETRY = {"attempts": 6, "initial_wait_s": 0.01, "max_wait_s": 0.1, "timeout_s": 10.0}


def write_synthetic_benchmark(path: Path, n_items: int) -> None:
    """N three-option questions with gold letters cycling A, B, C."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n_items):
            row = {
                "id": f"s{i}",
                "question": f"Synthetic question {i}?",
                "options": ["alpha", "beta", "gamma"],
                "answer": "ABC"[i % 3],
            }
            fh.write(json.dumps(row) + "\n")


def make_api_workspace(
    root: Path,
    workspace: Path,
    n_items: int,
    api_base: str,
    concurrency: int,
    api_key_env: str | None = None,
    retry: dict[str, Any] | None = None,
    max_error_share: float = 0.1,
    transport: str | None = None,
) -> Path:
    """Build the workspace; returns it. ``root`` is the repository (for prompts and suites).

    ``transport`` is the model's ``options.transport``; by default ``http`` when there is an
    ``api_base`` (as in the OpenAI-compatible configs of ``conf/model/``), else ``litellm``.
    ``wire`` reaches ``api_base`` as a hosted config does: declared in ``options.wire_base``.
    """
    shutil.copytree(root / "prompts", workspace / "prompts", dirs_exist_ok=True)
    shutil.copytree(root / "expectations", workspace / "expectations", dirs_exist_ok=True)
    shutil.copytree(root / "conf", workspace / "conf", dirs_exist_ok=True)  # params keys checked
    write_synthetic_benchmark(workspace / "data" / "synthetic.jsonl", n_items)
    params = OmegaConf.load(root / "params.yaml")
    synthetic: dict[str, Any] = {
        "name": "synthetic",
        "source": {"kind": "file", "path": "data/synthetic.jsonl"},
        "columns": {
            "id": "id",
            "question": "question",
            "options": "options",
            "answer": "answer",
            "answer_format": "letter",
            "metadata": [],
        },
        "languages": {"en": {}},
        "settings": ["mcq-none-en"],
        "slices": [],
        "expectations": "expectations/generic_mcq_items.json",
    }
    synthetic["digest"] = digest(synthetic)  # as composing conf/ writes it
    params.benchmarks = {"synthetic": synthetic}
    params.model = {
        "id": "api-model",
        "backend": "litellm",
        "batch_size": 1,
        "concurrency": concurrency,
        "decoding": {"temperature": 0.0, "max_tokens": 8, "seed": None},
        "options": {
            "litellm_model": "openai/api-model",
            "api_base": None if transport == "wire" else api_base,
            "api_key_env": api_key_env,
            "drop_params": True,
            "transport": transport or ("http" if api_base else "litellm"),
            "wire_base": api_base if transport == "wire" else None,
        },
        "retry": retry or dict(DEFAULT_RETRY),
        "price": {"input_per_token": 1e-7, "output_per_token": 2e-7},
    }
    params.evaluate.roster = ["model"]
    params.evaluate.benchmarks = ["synthetic"]
    params.evaluate.progress = False
    params.evaluate.max_error_share = max_error_share
    OmegaConf.save(params, workspace / "params.yaml")
    return workspace


def stage_env(workspace: Path) -> dict[str, str]:
    """Environment a stage process gets from DVC, pointed at the workspace."""
    return {
        **os.environ,
        "DVC_ROOT": str(workspace),
        "CULTUREQA_STATE_DIR": str(workspace / ".cultureqa"),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "CULTUREQA_LOG_LEVEL": "WARNING",
    }


def hold_output_lock(
    outputs: Path, env: dict[str, str], store: Path | None = None
) -> subprocess.Popen[str]:
    """Start a process that takes the output lock on ``outputs``, says so, and sleeps.

    The caller kills it. Tests use it as the "live writer" a second run of a stage must refuse;
    ``store`` is the response store the holder names in the lock.
    """
    named = "None" if store is None else f"Path({str(store)!r})"
    code = (
        "import time; from pathlib import Path; from cultureqa.core.runlock import output_lock\n"
        f"with output_lock(Path({str(outputs)!r}), {named}):"
        "\n    print('held', flush=True); time.sleep(120)"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True
    )
    line = holder.stdout.readline().strip() if holder.stdout else ""
    if line != "held":
        holder.kill()
        raise RuntimeError(f"the lock holder did not start (said {line!r})")
    return holder
