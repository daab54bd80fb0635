"""The lean transport: OpenAI-compatible servers over one pooled aiohttp session (issue 14).

vLLM, SGLang, TGI, llama.cpp's server and OpenAI itself all speak
``POST {api_base}/chat/completions``.
At 4,000 requests × 256 in flight, litellm's request building, cost calculation and logging
(5–7 ms of CPU per call) kept one event loop from holding more than ~107 requests in flight; this
transport builds a small JSON body, keeps connections alive (``TCPConnector(limit=concurrency)``)
and reads only what is scored: the content and the token usage. Cost comes from the configured
price (the core applies it), so litellm is never imported on this path.

Failures are raised as exceptions named like openai's (``RateLimitError``, ``BadRequestError``,
``InternalServerError``, ``APITimeoutError``, ``APIConnectionError``) carrying ``status_code`` and
the response ``headers``: ``retry.py`` classifies them exactly as it does litellm's, ``Retry-After``
included, and per-item error messages read the same on both transports.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import aiohttp

from cultureqa.llm.api.retry import EmptyReply, MalformedReply
from cultureqa.llm.api.transport import ChatConfig, ChatReply, TokenCount
from cultureqa.llm.base import GenerateRequest, ModelConfigError


class HTTPStatusError(RuntimeError):
    """A non-200 reply: ``status_code`` and ``headers`` let ``retry.py`` classify it."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str]) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status_code = status
        self.headers = headers


class RateLimitError(HTTPStatusError):
    """429: retried after the server's ``Retry-After``."""


class InternalServerError(HTTPStatusError):
    """5xx: retried."""


class BadRequestError(HTTPStatusError):
    """400: never retried; counts toward the breaker."""


class AuthenticationError(HTTPStatusError):
    """401: never retried; counts toward the breaker."""


class PermissionDeniedError(HTTPStatusError):
    """403: never retried; counts toward the breaker."""


class NotFoundError(HTTPStatusError):
    """404: never retried; counts toward the breaker."""


class APITimeoutError(RuntimeError):
    """No complete reply within ``retry.timeout_s``: retried."""


class APIConnectionError(RuntimeError):
    """Refused, reset or dropped connection: retried, and counts toward the breaker."""


_BY_STATUS: dict[int, type[HTTPStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    429: RateLimitError,
}


class HttpTransport:
    """POST /chat/completions on one keep-alive session per client (and per event loop)."""

    def __init__(self, config: ChatConfig) -> None:
        if not config.api_base:
            raise ModelConfigError(
                f"model '{config.model_id}': options.transport http needs options.api_base "
                "(the server's .../v1 URL); hosted providers use options.transport: wire or litellm"
            )
        if config.input_cost_per_token is None:
            raise ModelConfigError(
                f"model '{config.model_id}': options.transport http prices tokens from "
                "price.input_per_token and price.output_per_token (0 for a self-hosted server); "
                "set them, or use options.transport: litellm for litellm's price table"
            )
        self.config = config
        self.url = config.api_base.rstrip("/") + "/chat/completions"
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def prepare(self) -> None:
        """Open the pooled session in the running loop (a new loop gets a new session)."""
        loop = asyncio.get_running_loop()
        if self._session is not None and self._loop is loop and not self._session.closed:
            return
        connector = aiohttp.TCPConnector(limit=max(1, self.config.concurrency))
        timeout = aiohttp.ClientTimeout(total=self.config.retry.timeout_s)
        self._session = aiohttp.ClientSession(connector=connector, timeout=timeout)
        self._loop = loop

    def check_credentials(self) -> None:
        """Keyless by configuration: a key is sent only when ``api_key_env`` names one."""

    def price(self, prompt_tokens: int, completion_tokens: int) -> float:
        """USD for these token counts at the configured price (required by this transport)."""
        out = self.config.output_cost_per_token or 0.0
        return prompt_tokens * (self.config.input_cost_per_token or 0.0) + completion_tokens * out

    def count_tokens(self, request: GenerateRequest, text: str) -> TokenCount | None:
        """None: this path never imports a tokenizer; the core bounds the tokens from above."""
        return None

    async def aclose(self) -> None:
        """Close the session and its connections."""
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None

    async def send(self, request: GenerateRequest, api_key: str | None) -> ChatReply:
        """One POST; every failure leaves as one of this module's exceptions."""
        return await self.post(self._body(request), api_key)

    async def post(self, body: dict[str, Any], api_key: str | None) -> ChatReply:
        """POST ``body`` (a chat completion request) and parse the reply.

        The wire transport's requests take this path too, with litellm's parameters in ``body``.
        """
        if self._session is None:
            await self.prepare()
        assert self._session is not None
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
        try:
            async with self._session.post(self.url, json=body, headers=headers) as response:
                raw = await response.read()
                status, response_headers = response.status, response.headers
        except TimeoutError as exc:  # aiohttp's timeouts subclass asyncio's (= builtin) one
            raise APITimeoutError(f"no reply within {self.config.retry.timeout_s} s") from exc
        except aiohttp.ClientError as exc:
            raise APIConnectionError(f"Connection error: {type(exc).__name__}: {exc}") from exc
        if status != 200:
            raise _status_error(status, raw, response_headers)
        return _parse(raw)

    def _body(self, request: GenerateRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.config.served_model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            **self.config.extra_params,
        }
        if request.seed is not None:
            body["seed"] = request.seed
        return body


def _status_error(status: int, raw: bytes, headers: Mapping[str, str]) -> HTTPStatusError:
    """The exception for a non-200 reply, with the server's own message when it gives one."""
    message = raw[:300].decode("utf-8", "replace")
    try:
        payload = json.loads(raw)
        message = str(payload["error"]["message"])
    except (ValueError, KeyError, TypeError):
        pass
    cls = _BY_STATUS.get(status, InternalServerError if status >= 500 else HTTPStatusError)
    return cls(status, message, headers)


def _parse(raw: bytes) -> ChatReply:
    """Content and usage of a chat completion; anything else is a malformed reply, never a guess."""
    try:
        payload = json.loads(raw)
        content = payload["choices"][0]["message"].get("content")
        usage = payload.get("usage") or {}
        reply = ChatReply(  # no usage (older vLLM, llama.cpp, proxies): None, counted later
            text=str(content or ""),
            prompt_tokens=_tokens(usage.get("prompt_tokens")),
            completion_tokens=_tokens(usage.get("completion_tokens")),
        )
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        snippet = raw[:120].decode("utf-8", "replace")
        raise MalformedReply(f"reply is not a chat completion ({exc!r}): {snippet}") from exc
    if not reply.text.strip():
        raise EmptyReply("provider returned empty content", reply)
    return reply


def _tokens(value: Any) -> int | None:
    """A usage count, or None when the server sent none."""
    return None if value is None else int(value)
