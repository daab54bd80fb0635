"""The embedded model's scores are the same bits on every machine: its CPU kernels are pinned.

AVX-512 and AVX2 kernels sum float32 in different orders, so without the pin a machine with
AVX-512 writes other 10-digit scores into ``predictions.parquet`` than one without, and a fresh
clone's ``dvc repro`` rewrites ``dvc.lock``. Each score runs in a fresh process because the
kernels are chosen once per process, at the first one torch runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from functools import cache

import pytest

from cultureqa.core.config import load_params
from cultureqa.llm.local.cpu_kernels import KernelPinError, pin

torch = pytest.importorskip("torch")

SCORE = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    import torch, transformers
    from tokenizers import Tokenizer, models, pre_tokenizers
    from cultureqa.llm.base import LoglikRequest
    from cultureqa.llm.local.local_hf import LocalHFClient

    kernels = None if sys.argv[1] == "none" else sys.argv[1]
    if sys.argv[2] == "ran-before":
        torch.ones(64).sum()  # a kernel runs before the model loads
    words = [f"w{i}" for i in range(200)]
    vocab = {t: i for i, t in enumerate(["<pad>", "<eos>", "<bos>", "<unk>"] + words)}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", eos_token="<eos>", bos_token="<bos>",
        unk_token="<unk>")

    def loader():
        torch.manual_seed(0)
        config = transformers.LlamaConfig(
            vocab_size=len(vocab), hidden_size=256, intermediate_size=512, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, pad_token_id=0, eos_token_id=1,
            bos_token_id=2)
        return transformers.LlamaForCausalLM(config).eval(), tok

    client = LocalHFClient(model_id="tiny", cache_dir=Path("/nonexistent"), loader=loader,
                           num_threads=1, cpu_kernels=kernels)
    context = " ".join(words[i % 200] for i in range(0, 600, 7))
    reply = asyncio.run(client.loglik([LoglikRequest(context, (" w1 w2 w3", " w4 w5", " w6"))]))[0]
    print(json.dumps({"kernels": str(torch.backends.cpu.get_cpu_capability()),
                      "status": reply.status, "error": reply.error,
                      "scores": [f"{x:.10g}" for x in reply.logprobs]}))
    """
)


def run(kernels: str, when: str = "fresh") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SCORE, kernels, when], capture_output=True, text=True, timeout=240
    )


def score(kernels: str) -> dict[str, object]:
    done = run(kernels)
    assert done.returncode == 0, done.stderr[-2000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@cache
def best_kernels() -> str:
    """This CPU's widest kernels, read once per test process (a torch import each time)."""
    done = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return done.stdout.strip()


def test_the_embedded_model_config_pins_avx2() -> None:
    assert load_params()["model"]["options"]["cpu_kernels"] == "avx2"


def test_pinned_scores_are_the_same_bits_in_every_process_and_differ_from_the_wider_kernels() -> (
    None
):
    first, second = score("avx2"), score("avx2")
    assert first["kernels"] == second["kernels"] == "AVX2"
    assert first["status"] == "ok" and first["scores"] == second["scores"]
    if best_kernels() == "AVX2":
        pytest.skip("this CPU's best kernels are AVX2: nothing wider to compare with")
    unpinned = score("none")
    assert unpinned["kernels"] != "AVX2"
    # the very difference the pin removes: without it, this machine writes other digits
    assert unpinned["scores"] != first["scores"]


def test_a_pin_that_comes_too_late_stops_the_run_instead_of_writing_other_digits() -> None:
    if best_kernels() == "AVX2":
        pytest.skip("this CPU's best kernels are AVX2: a late pin changes nothing here")
    late = run("avx2", "ran-before")
    assert late.returncode != 0
    assert "KernelPinError: torch runs AVX512 kernels, not the pinned avx2" in late.stderr


def test_an_unknown_kernel_set_is_refused_by_name() -> None:
    with pytest.raises(KernelPinError, match="cpu_kernels must be one of avx2 or null, not 'avx9'"):
        pin("avx9")
