"""The wire transport: litellm decides, one pooled aiohttp session sends (issue 47).

Hosted providers that speak OpenAI's chat protocol (OpenAI, DeepSeek, Kimi, Qwen, Doubao, and
Gemini's and Anthropic's OpenAI-compatible endpoints) need nothing from litellm per request that
cannot be asked once: where to send (``litellm.get_llm_provider``: the provider's base URL and
key variable), which parameters the model takes (``get_optional_params``: ``max_completion_tokens``
for gpt-5, temperature dropped where a model refuses it), what tokens cost (its price table) and
how to count them (its tokenizers). Those answers are taken once per run (the parameter mapping once
per distinct decoding) and every request then travels :class:`HttpTransport`'s path: a small JSON
body on a keep-alive session, failures raised as the same openai-named exceptions. litellm's
per-call request building, logging and cost calculation (7 ms CPU per request at 4,000 × 256)
never run.

A config selects it with ``options.transport: wire``. Where litellm's own route for a provider is
not OpenAI's protocol (``openai/…`` has no base URL in litellm; ``gemini/…`` and
``anthropic/…`` go to native APIs), the config declares the OpenAI-compatible endpoint in
``options.wire_base`` and its key variable in ``options.wire_key_env`` (the provider's own, which
litellm reads on its own transport and the Batch API client too, so ``api_key_env`` stays unset and
those paths are unchanged); the request's parameters are then mapped as OpenAI's. No model name is
matched here: the config says which route it takes.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from cultureqa.llm.api.http_transport import HttpTransport
from cultureqa.llm.api.litellm_client import LitellmTransport
from cultureqa.llm.api.transport import ChatConfig, ChatReply, MissingKey, TokenCount
from cultureqa.llm.base import GenerateRequest, ModelConfigError

OPENAI_PROTOCOL = "openai"
"""litellm's provider whose parameter mapping an OpenAI-compatible endpoint takes."""


class WireTransport:
    """litellm's routing, parameters, prices and tokenizer; :class:`HttpTransport`'s wire."""

    def __init__(self, config: ChatConfig) -> None:
        if config.api_base:
            raise ModelConfigError(
                f"model '{config.model_id}': options.transport wire routes through litellm; "
                "a self-hosted server at options.api_base uses options.transport: http"
            )
        self.config = config
        self._litellm = LitellmTransport(config)
        """Prices, token counts and the key check: litellm's, exactly as on its own transport."""
        self._http: HttpTransport | None = None
        self._key: str | None = None
        """The provider's key as litellm reads it, when the config names no variable."""
        self._provider = ""
        self._params: dict[tuple[float, int, int | None], dict[str, Any]] = {}

    async def prepare(self) -> None:
        """Import litellm once, resolve the route, open the pooled session."""
        if self._http is None:
            self._http = HttpTransport(self._route(self._litellm.lib(warm=False)))
        await self._http.prepare()

    def _route(self, litellm: Any) -> ChatConfig:
        """The endpoint config: the declared ``wire_base``, else litellm's base for the provider."""
        model = self.config.litellm_model
        served, provider, key, base = litellm.get_llm_provider(model)
        if self.config.wire_base:
            base, provider = self.config.wire_base, OPENAI_PROTOCOL
        if not base:
            raise ModelConfigError(
                f"model '{self.config.model_id}': litellm routes {model} to {provider}'s own API, "
                "not an OpenAI-compatible URL; declare the provider's OpenAI-compatible endpoint "
                "in options.wire_base (and its key variable in options.wire_key_env), or use "
                "options.transport: litellm"
            )
        if self.config.wire_key_env:
            key = os.environ.get(self.config.wire_key_env)
        self._provider, self._key = str(provider), key or None
        return dataclasses.replace(
            self.config,
            api_base=str(base),
            litellm_model=f"{provider}/{served}",
            input_cost_per_token=0.0,  # HttpTransport's own check; prices are litellm's (below)
            output_cost_per_token=0.0,
        )

    @property
    def sent_key(self) -> str | None:
        """The key requests carry when the config names no variable: the client scrubs it."""
        return self._key

    def check_credentials(self) -> None:
        """A declared ``wire_key_env`` must be set; litellm names the provider's variables."""
        variable = self.config.wire_key_env
        if variable and not os.environ.get(variable):
            raise MissingKey(
                f"model '{self.config.model_id}': options.wire_key_env names {variable}, which is "
                f"not set; export {variable}"
            )
        self._litellm.check_credentials()

    def price(self, prompt_tokens: int, completion_tokens: int) -> float:
        """The configured price, else litellm's price table (as on the litellm transport)."""
        return self._litellm.price(prompt_tokens, completion_tokens)

    def count_tokens(self, request: GenerateRequest, text: str) -> TokenCount | None:
        """The model's own tokenizer, where litellm holds it offline."""
        return self._litellm.count_tokens(request, text)

    async def send(self, request: GenerateRequest, api_key: str | None) -> ChatReply:
        """One POST with litellm's parameters for this model; the reply is priced later."""
        if self._http is None:
            await self.prepare()
        assert self._http is not None
        return await self._http.post(self._body(request), api_key or self._key)

    def _body(self, request: GenerateRequest) -> dict[str, Any]:
        assert self._http is not None
        return {
            "model": self._http.config.served_model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            **self._mapped(request.temperature, request.max_tokens, request.seed),
        }

    def _mapped(self, temperature: float, max_tokens: int, seed: int | None) -> dict[str, Any]:
        """The provider's parameters for this model by litellm, asked once per decoding."""
        key = (temperature, max_tokens, seed)
        found = self._params.get(key)
        if found is None:
            from litellm.utils import get_optional_params

            assert self._http is not None
            mapped = dict(
                get_optional_params(
                    model=self._http.config.served_model,
                    custom_llm_provider=self._provider,
                    temperature=temperature,
                    max_tokens=max_tokens,
                    seed=seed,
                    drop_params=self.config.drop_params,
                )
            )
            mapped |= mapped.pop("extra_body", None) or {}  # the openai SDK merges it likewise
            mapped.pop("stream", None)  # False is the protocol's default: the body stays lean
            mapped |= self.config.extra_params  # sent as given, as on the http transport
            found = self._params[key] = mapped
        return found

    async def aclose(self) -> None:
        """Close the session."""
        if self._http is not None:
            await self._http.aclose()
