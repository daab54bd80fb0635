"""The litellm transport: every API provider, and OpenAI-compatible servers on request.

litellm is imported lazily, and only by models whose config selects this transport
(``options.transport: litellm``, the default for hosted providers): it costs seconds to import and
2.5–7 ms of CPU per call. Retries, slots and accounting are the shared core's
(:mod:`cultureqa.llm.chat_client`); this module only turns one request into one reply. Keys come
from the environment only (litellm reads each provider's variables; ``api_key_env`` names a
variable for custom servers) and never enter params, logs, MLflow or the store.
"""

from __future__ import annotations

import gc
import logging
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cultureqa.llm.base import GenerateRequest, ModelConfigError
from cultureqa.llm.chat_client import ChatConfig, ChatReply, MissingKey
from cultureqa.llm.retry import EmptyReply, MalformedReply

_MALFORMED = re.compile(
    r"Expecting (value|property name|',' delimiter|':' delimiter)|Unterminated string|"
    r"Extra data|JSONDecodeError|Invalid control character"
)
"""How litellm words a 200 reply whose body is not JSON (it raises InternalServerError)."""


class LitellmTransport:
    """One ``litellm.acompletion`` per request, with ``max_retries=0`` (the core retries)."""

    def __init__(self, config: ChatConfig) -> None:
        self.config = config
        self._litellm: Any = None

    async def prepare(self) -> None:
        """Import litellm (collector paused) and run its response path once, offline."""
        self._lib()

    async def aclose(self) -> None:
        """Nothing to release: litellm manages its HTTP clients."""

    def price(self, prompt_tokens: int, completion_tokens: int) -> float:
        """USD for these token counts: the configured price, else litellm's price table.

        Raises :class:`ModelConfigError` when neither knows the model: a budget cap cannot be
        kept for a request nobody can price.
        """
        if self.config.input_cost_per_token is not None:
            out = self.config.output_cost_per_token or 0.0
            return prompt_tokens * self.config.input_cost_per_token + completion_tokens * out
        litellm = self._lib()
        try:
            prompt, completion = litellm.cost_per_token(
                model=self.config.litellm_model,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
            )
        except Exception as exc:  # litellm raises its own "not mapped" errors
            raise ModelConfigError(
                f"model '{self.config.model_id}': spend.budget_usd is set but litellm has no price "
                f"for {self.config.litellm_model} ({type(exc).__name__}); set "
                "price.input_per_token and price.output_per_token in its config"
            ) from None
        return float(prompt) + float(completion)

    def _lib(self) -> Any:
        if self._litellm is None:
            with _collector_paused():
                litellm = _import_litellm()
                self._register_price(litellm)
                _warm_up(litellm, self.config.litellm_model)
            self._litellm = litellm
        return self._litellm

    def _register_price(self, litellm: Any) -> None:
        """Tell litellm's cost calculator the configured price (models it does not know).

        Cached prompt tokens are priced as uncached ones: exact for self-hosted endpoints (0),
        an upper bound for providers that discount cache reads; left out, litellm warns on
        every run that it prices them at 0.
        """
        if self.config.input_cost_per_token is None:
            return
        provider = self.config.litellm_model.split("/", 1)[0]
        prompt_price = self.config.input_cost_per_token
        litellm.register_model(
            {
                self.config.litellm_model: {
                    "input_cost_per_token": prompt_price,
                    "cache_read_input_token_cost": prompt_price,
                    "cache_creation_input_token_cost": prompt_price,
                    "output_cost_per_token": self.config.output_cost_per_token or 0.0,
                    "litellm_provider": provider,
                    "mode": "chat",
                }
            }
        )

    def check_credentials(self) -> None:
        """A hosted provider (no ``api_base``): litellm names the variables it would read."""
        if self.config.api_base:
            return  # a self-hosted server with no api_key_env is keyless by configuration
        found = self._lib().validate_environment(model=self.config.litellm_model)
        missing = list(found.get("missing_keys") or [])
        if not found.get("keys_in_environment") and missing:
            raise MissingKey(
                f"model '{self.config.model_id}' ({self.config.litellm_model}): "
                f"{', '.join(missing)} is not set; export it (or name the variable in "
                "options.api_key_env)"
            )

    async def send(self, request: GenerateRequest, api_key: str | None) -> ChatReply:
        """One ``acompletion``; a body that is not JSON is re-raised as ``MalformedReply``."""
        try:
            response = await self._lib().acompletion(**self._kwargs(request, api_key))
        except Exception as exc:
            if type(exc).__name__ == "InternalServerError" and _MALFORMED.search(str(exc)):
                raise MalformedReply(f"reply is not a chat completion: {exc}") from exc
            raise
        return _reply(response)

    def _kwargs(self, request: GenerateRequest, api_key: str | None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.config.litellm_model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "timeout": self.config.retry.timeout_s,
            "max_retries": 0,
            "drop_params": self.config.drop_params,
            **self.config.extra_params,
        }
        if request.seed is not None:
            kwargs["seed"] = request.seed
        if self.config.api_base:
            kwargs["api_base"] = self.config.api_base
        if api_key:
            kwargs["api_key"] = api_key
        elif self.config.api_base:
            kwargs["api_key"] = "EMPTY"  # a custom endpoint with no key configured
        return kwargs


def _reply(response: Any) -> ChatReply:
    """Content, tokens and litellm's cost (its table, or the registered price)."""
    usage = getattr(response, "usage", None)
    cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
    content = response.choices[0].message.content if response.choices else None
    reply = ChatReply(
        text=str(content or ""),
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        cost_usd=None if cost is None else float(cost),
    )
    if not reply.text.strip():
        raise EmptyReply("provider returned empty content", reply)
    return reply


@contextmanager
def _collector_paused() -> Iterator[None]:
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


def _import_litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch it at run time
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


def _warm_up(litellm: Any, model: str) -> None:
    """Run litellm's response path once, offline, before the first real request.

    The first call imports ~60 more modules and builds caches (~100 ms). Paid inside the first
    wave of concurrent requests, it stalls every one of them; paid here, it is paid once, with
    the collector paused. ``mock_response`` short-circuits before any provider or network call.
    """
    litellm.completion(
        model=model,
        messages=[{"role": "user", "content": "warm-up"}],
        mock_response="ok",
        max_tokens=1,
    )
