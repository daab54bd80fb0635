"""The wire transport: litellm decides, one pooled aiohttp session sends (issue 47).

Hosted providers that speak OpenAI's chat protocol (OpenAI, DeepSeek, Kimi, Qwen, Doubao, and
Gemini's and Anthropic's OpenAI-compatible endpoints) need nothing from litellm per request that
cannot be asked once: where to send (``litellm.get_llm_provider``: the provider's base URL and
key variable), which parameters the model takes (``get_optional_params``: ``max_completion_tokens``
for gpt-5, temperature dropped where a model refuses it), what tokens cost (its price table) and
how to count them (its tokenizers). Those answers are taken once per config and kept by
:mod:`cultureqa.llm.api.wire_route` (the parameter mapping once per distinct decoding), so a
stage whose route is stored never imports litellm (4.7 CPU s); every request then travels
:class:`HttpTransport`'s path: a small JSON body on a keep-alive session, failures raised as the
same openai-named exceptions. litellm's per-call request building, logging and cost calculation
(7 ms CPU per request at 4,000 × 256) never run.

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
import logging
import os
from collections import Counter
from typing import Any

from cultureqa.llm.api.http_transport import HttpTransport
from cultureqa.llm.api.litellm_client import LitellmTransport
from cultureqa.llm.api.transport import ChatConfig, ChatReply, MissingKey, TokenCount
from cultureqa.llm.api.wire_route import (
    PRICE_CHECKED_TOKENS,
    WireRoute,
    decoding_key,
    load_route,
    mapped_params,
    resolve_route,
    save_route,
)
from cultureqa.llm.base import GenerateRequest, ModelConfigError

log = logging.getLogger(__name__)


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
        """litellm itself, imported only for what the stored route does not answer."""
        self._http: HttpTransport | None = None
        self._key: str | None = None
        """The provider's key as litellm reads it, when the config names no variable."""
        self._route: WireRoute | None = None
        self._params: dict[tuple[float, int, int | None], dict[str, Any]] = {}
        self.litellm_imports: Counter[str] = Counter()
        """Why litellm was imported in this process (route resolved, decoding, price, tokens)."""

    async def prepare(self) -> None:
        """Read the stored route (else resolve it with litellm once), open the pooled session."""
        if self._http is None:
            self._http = HttpTransport(self._endpoint(self._stored_route()))
        await self._http.prepare()

    def _lib(self, why: str) -> Any:
        """litellm, imported for ``why`` (counted: each reason is a stored answer missing)."""
        if not self._litellm.loaded:
            log.info("wire %s: importing litellm for %s", self.config.model_id, why)
            self.litellm_imports[why] += 1
        return self._litellm.lib(warm=False)

    def _stored_route(self) -> WireRoute:
        if self._route is None:
            route = load_route(self.config)
            if route is None:
                route = resolve_route(self._lib("route"), self.config)
                path = save_route(self.config, route)
                log.info("wire %s: litellm's route stored in %s", self.config.model_id, path)
            self._route = route
        return self._route

    def _endpoint(self, route: WireRoute) -> ChatConfig:
        """The endpoint config: the declared ``wire_base``, else litellm's base for the provider."""
        if not route.base:
            raise ModelConfigError(
                f"model '{self.config.model_id}': litellm routes {self.config.litellm_model} to "
                f"{route.provider}'s own API, not an OpenAI-compatible URL; declare the "
                "provider's OpenAI-compatible endpoint in options.wire_base (and its key variable "
                "in options.wire_key_env), or use options.transport: litellm"
            )
        variable = self.config.wire_key_env or route.key_env
        self._key = (os.environ.get(variable) if variable else None) or None
        return dataclasses.replace(
            self.config,
            api_base=route.base,
            litellm_model=f"{route.provider}/{route.served}",
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
        route = self._stored_route()
        names = route.credential_envs
        if not names:
            return
        if route.credentials_any is None:
            self._lib("credentials")
            self._litellm.check_credentials()
            return
        present = [name for name in names if os.environ.get(name)]
        if present if route.credentials_any else len(present) == len(names):
            return
        missing = [name for name in names if not os.environ.get(name)]
        raise MissingKey(
            f"model '{self.config.model_id}' ({self.config.litellm_model}): "
            f"{', '.join(missing)} is not set; export it (or name the variable in "
            "options.api_key_env)"
        )

    def price(self, prompt_tokens: int, completion_tokens: int) -> float:
        """The configured price, else litellm's (stored where linear, else litellm asked)."""
        route = self._stored_route()
        if self.config.input_cost_per_token is not None:
            out = self.config.output_cost_per_token or 0.0
            return prompt_tokens * self.config.input_cost_per_token + completion_tokens * out
        if route.unpriced is not None:
            raise ModelConfigError(
                f"model '{self.config.model_id}': spend.budget_usd is set but litellm has no price "
                f"for {self.config.litellm_model} ({route.unpriced}); set "
                "price.input_per_token and price.output_per_token in its config"
            )
        if (
            route.input_cost is not None
            and route.output_cost is not None
            and max(prompt_tokens, completion_tokens) <= PRICE_CHECKED_TOKENS
        ):
            return prompt_tokens * route.input_cost + completion_tokens * route.output_cost
        self._lib("price")
        return self._litellm.price(prompt_tokens, completion_tokens)

    def max_input_tokens(self) -> int | None:
        """The input window litellm gives the model, from the stored route (the prompt guard's)."""
        return self._stored_route().max_input_tokens

    def count_tokens(self, request: GenerateRequest, text: str) -> TokenCount | None:
        """The model's own tokenizer, where litellm holds it offline (litellm is imported)."""
        self._lib("token count")
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
        """The provider's parameters for this model by litellm, stored once per decoding."""
        decoding = (temperature, max_tokens, seed)
        body = self._params.get(decoding)
        if body is None:
            route = self._stored_route()
            key = decoding_key(temperature, max_tokens, seed)
            found = route.params.get(key)
            if found is None:
                litellm = self._lib("decoding")
                found = route.params[key] = mapped_params(
                    litellm, route, self.config, temperature, max_tokens, seed
                )
                save_route(self.config, route)
            # extra_params are sent as given, as on the http transport
            body = self._params[decoding] = found | self.config.extra_params
        return body

    async def aclose(self) -> None:
        """Close the session."""
        if self._http is not None:
            await self._http.aclose()
