"""Importing litellm once, quietly and offline: shared by every module that needs it.

The chat transport, the Batch API client, the prompt guard and the cost dry run all use
litellm; they import it through here, so none of them reaches into another's privates.
"""

from __future__ import annotations

import gc
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def import_litellm() -> Any:
    """litellm, with the bundled price map (never fetched at run time) and its logs routed."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    route_litellm_logging()
    return litellm


def route_litellm_logging(level: int = logging.WARNING) -> None:
    """Send litellm's records through the stage's logging, from WARNING up.

    litellm gives its loggers their own stderr handler (each warning would print twice next to
    the stage's root handler) and logs 2–4 INFO lines per call; a stage at INFO printed ~4,200
    of them for 352 failing items, through the progress bar.
    """
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.setLevel(level)
        logger.propagate = True


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector, then freeze everything built meanwhile.

    litellm builds ~380k long-lived objects at import. Left to the collector, the import itself
    triggers full collections that scan them (~0.8 s here), every later full collection in the
    request loop scans them again (an event-loop stall of ~0.2 s each), and interpreter shutdown
    walks them once more (~0.8 s). ``gc.freeze`` moves them to the permanent generation, which
    the collector skips; they live as long as the process anyway.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def known_tokenizer(litellm: Any, model: str) -> str | None:
    """The name of ``model``'s own tokenizer when litellm holds it offline, else None.

    litellm's ``token_counter`` silently falls back to an OpenAI encoding for a model it does
    not know, and tries to download a Llama tokenizer for Llama names: neither is the model's
    tokenizer offline, so neither is used. Known are the tokenizers litellm bundles (by its
    own name-to-kind map) and OpenAI-family models of its price table (tiktoken).
    """
    utils = getattr(litellm, "utils", None)
    kind_of = getattr(utils, "huggingface_tokenizer_kind", None)
    bundled = getattr(utils, "_BUNDLED_TOKENIZER_LOAD_LOCKS", {})
    kind = kind_of(model) if callable(kind_of) else None
    if kind is not None:
        return str(kind) if kind in bundled else None
    try:
        info = litellm.get_model_info(model)
    except Exception:  # litellm raises its own "not mapped" errors for unknown models
        return None
    provider = str((info or {}).get("litellm_provider", ""))
    return "tiktoken" if provider in ("openai", "azure", "text-completion-openai") else None
