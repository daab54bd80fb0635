"""The litellm transport: every API provider, and OpenAI-compatible servers on request.

litellm is imported lazily, and only by models whose config selects this transport
(``options.transport: litellm``; the hosted configs' ``wire`` transport borrows its prices, token
counts and key check): it costs seconds to import and 2.5–7 ms of CPU per call. Retries, slots
and accounting are the shared core's (:mod:`cultureqa.llm.api.chat_client`); this module only turns
one request into one reply. Keys come
from the environment only (litellm reads each provider's variables; ``api_key_env`` names a
variable for custom servers) and never enter params, logs, MLflow or the store.
"""

from __future__ import annotations

import re
from typing import Any

from cultureqa.llm.api.litellm_lib import collector_paused, import_litellm, known_tokenizer
from cultureqa.llm.api.litellm_lib import route_litellm_logging as route_litellm_logging
from cultureqa.llm.api.retry import EmptyReply, MalformedReply
from cultureqa.llm.api.transport import ChatConfig, ChatReply, MissingKey, TokenCount
from cultureqa.llm.base import GenerateRequest, ModelConfigError

_import_litellm = import_litellm  # the name other modules used before ``litellm_lib``

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
        self._tokenizer: str | None = None
        """The model's own tokenizer, when litellm has it offline (see ``count_tokens``)."""

    async def prepare(self) -> None:
        """Import litellm (collector paused) and run its response path once, offline."""
        self.lib()

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
        litellm = self.lib()
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

    @property
    def loaded(self) -> bool:
        """Whether litellm has been imported for this transport."""
        return self._litellm is not None

    def lib(self, warm: bool = True) -> Any:
        """litellm, imported once (collector paused), with the configured price registered.

        ``warm``: also run its response path once (:func:`_warm_up`); the wire transport never
        calls it and leaves that out.
        """
        if self._litellm is None:
            with collector_paused():
                litellm = import_litellm()
                # asked before our price is registered: a model we register is not "known"
                self._tokenizer = known_tokenizer(litellm, self.config.litellm_model)
                self._register_price(litellm)
                if warm:
                    _warm_up(litellm, self.config.litellm_model)
            self._litellm = litellm
        return self._litellm

    def count_tokens(self, request: GenerateRequest, text: str) -> TokenCount | None:
        """The reply's tokens by the model's own tokenizer (litellm's ``token_counter``).

        None for a model whose tokenizer litellm does not hold offline: its ``token_counter``
        would fall back to an OpenAI encoding silently (or try to download one).
        """
        litellm = self.lib()
        if self._tokenizer is None:
            return None
        model = self.config.litellm_model
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        prompt = int(litellm.token_counter(model=model, messages=messages))
        completion = int(litellm.token_counter(model=model, text=text, count_response_tokens=True))
        return TokenCount(prompt, completion, f"tokenizer ({self._tokenizer})")

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
        found = self.lib().validate_environment(model=self.config.litellm_model)
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
            response = await self.lib().acompletion(**self._kwargs(request, api_key))
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
    """Content, tokens and litellm's cost (its table, or the registered price).

    A reply without usage reaches here with litellm's zeros (and a cost of $0 from them): it
    comes back with no tokens and no cost, so the core counts them instead of charging 0.
    """
    usage = getattr(response, "usage", None)
    cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
    content = response.choices[0].message.content if response.choices else None
    prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
    completion = int(getattr(usage, "completion_tokens", 0) or 0)
    if not (prompt or completion):
        reply = ChatReply(str(content or ""), None, None)
    else:
        reply = ChatReply(
            str(content or ""), prompt, completion, None if cost is None else float(cost)
        )
    if not reply.text.strip():
        raise EmptyReply("provider returned empty content", reply)
    return reply


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
