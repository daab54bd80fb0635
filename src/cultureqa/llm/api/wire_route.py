"""What litellm decides for a ``wire`` config, asked once and kept in a small file (issue 47).

The wire transport needs five answers from litellm: the base URL, the variable holding the key,
which variables its key check wants, each decoding's provider parameters and the price per token.
Importing litellm costs about 4.7 CPU s, once per stage; the answers change only with litellm's
version, the model config and the environment's endpoint overrides. So they are resolved with
litellm (the source of truth, never re-implemented here) the first time a config runs, written
atomically to ``<user cache>/wire/<digest>.json`` and read back by every later stage.

The file holds no secret: variable *names*, never values. Its digest covers the schema, litellm's
installed version (read from package metadata, not by importing it), the config fields litellm
reads and every endpoint override in the environment (``*_API_BASE``, ``*_BASE_URL``,
``*_API_URL``: litellm reads e.g. ``DEEPSEEK_API_BASE``), so any change resolves afresh.

Prices are kept only where litellm's ``cost_per_token`` is proven linear at resolution (exactly
equal at probe points up to :data:`PRICE_CHECKED_TOKENS`); beyond them, or where it is not, the
transport asks litellm itself. litellm's bundled price JSON read directly (``find_spec``, no
import) was not chosen: it lacks litellm's name aliasing and provider cost rules, so it could
disagree with the litellm path.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import json
import logging
import os
from pathlib import Path
from typing import Any

from cultureqa.core.io import atomic_path
from cultureqa.core.paths import user_cache_dir
from cultureqa.llm.api.transport import ChatConfig

log = logging.getLogger(__name__)

SCHEMA = 1
PRICE_CHECKED_TOKENS = 1_000_000
"""Token counts (each side) up to which litellm's price was checked to be linear."""
_PROBES = ((1, 0), (0, 1), (137, 59), (12_345, 4_321), (PRICE_CHECKED_TOKENS, PRICE_CHECKED_TOKENS))
_ENDPOINT_SUFFIXES = ("_API_BASE", "_BASE_URL", "_API_URL")
_SENTINEL = "cultureqa-wire-route-probe"
OPENAI_PROTOCOL = "openai"
"""litellm's provider whose parameter mapping an OpenAI-compatible endpoint takes."""


@dataclasses.dataclass
class WireRoute:
    """litellm's answers for one config; ``params`` grows by one entry per new decoding."""

    provider: str
    """Whose parameter mapping the body takes (``openai`` where ``wire_base`` is declared)."""
    served: str
    base: str | None
    key_env: str | None
    """The variable ``get_llm_provider`` reads the key from (None: it reads none)."""
    credential_envs: list[str]
    """The variables litellm's ``validate_environment`` names for the model."""
    credentials_any: bool | None
    """True: any one of them satisfies litellm; False: all are needed; None: neither rule held."""
    input_cost: float | None
    output_cost: float | None
    unpriced: str | None
    """litellm's error type when it has no price for the model."""
    max_input_tokens: int | None
    """litellm's input window for the model (the prompt guard's limit), None when unknown."""
    params: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)


def decoding_key(temperature: float, max_tokens: int, seed: int | None) -> str:
    """The cache's key for one decoding (JSON object keys are strings)."""
    return json.dumps([temperature, max_tokens, seed])


def route_path(config: ChatConfig) -> Path:
    """Where ``config``'s route lives; the name changes with anything litellm's answers read."""
    endpoints = sorted(
        (name, value) for name, value in os.environ.items() if name.endswith(_ENDPOINT_SUFFIXES)
    )
    basis = json.dumps(
        [
            SCHEMA,
            importlib.metadata.version("litellm"),
            config.litellm_model,
            config.wire_base,
            config.drop_params,
            endpoints,
        ]
    )
    digest = hashlib.sha256(basis.encode()).hexdigest()[:24]
    return user_cache_dir() / "wire" / f"{digest}.json"


def load_route(config: ChatConfig) -> WireRoute | None:
    """The stored route, or None when there is none yet (or it is unreadable: resolved again)."""
    path = route_path(config)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return WireRoute(**data)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError) as exc:
        log.warning("wire route %s unreadable (%s): resolving it with litellm again", path, exc)
        return None


def save_route(config: ChatConfig, route: WireRoute) -> Path:
    """Write the route atomically (a reader sees the old file or the new one, never half)."""
    path = route_path(config)
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(dataclasses.asdict(route), indent=1), encoding="utf-8")
    return path


def resolve_route(litellm: Any, config: ChatConfig) -> WireRoute:
    """Ask litellm everything the wire transport needs that does not depend on a request."""
    model = config.litellm_model
    served, provider, _key, base = litellm.get_llm_provider(model)
    if config.wire_base:  # the declared OpenAI-compatible endpoint: OpenAI's parameter mapping
        base, provider = config.wire_base, OPENAI_PROTOCOL
    names, any_rule, key_env = _credentials(litellm, model)
    input_cost, output_cost, unpriced = _linear_price(litellm, model)
    return WireRoute(
        provider=str(provider),
        served=str(served),
        base=str(base) if base else None,
        key_env=key_env,
        credential_envs=names,
        credentials_any=any_rule,
        input_cost=input_cost,
        output_cost=output_cost,
        unpriced=unpriced,
        max_input_tokens=_context(litellm, model),
    )


def _context(litellm: Any, model: str) -> int | None:
    """As the prompt guard reads litellm's table: ``max_input_tokens``, else ``max_tokens``."""
    try:
        info = litellm.get_model_info(model)
    except Exception:  # not in litellm's table: no context to go by
        return None
    value = info.get("max_input_tokens") or info.get("max_tokens")
    return int(value) if value else None


def _credentials(litellm: Any, model: str) -> tuple[list[str], bool | None, str | None]:
    """The variables litellm checks and reads, found in an emptied environment (names only).

    ``unittest.mock`` is imported here, where litellm is loaded anyway, not by a stage whose
    route is stored (about 0.03 CPU s before its first request).
    """
    from unittest import mock

    with mock.patch.dict(os.environ, {}, clear=True):
        names = list(litellm.validate_environment(model=model).get("missing_keys") or [])
        key_env = None
        for name in names:
            with mock.patch.dict(os.environ, {name: _SENTINEL}):
                if litellm.get_llm_provider(model)[2] == _SENTINEL:
                    key_env = name
                    break

        def satisfied(chosen: list[str]) -> bool:
            with mock.patch.dict(os.environ, dict.fromkeys(chosen, _SENTINEL)):
                return bool(litellm.validate_environment(model=model).get("keys_in_environment"))

        if not names:
            return names, None, key_env
        if all(satisfied([name]) for name in names):
            return names, True, key_env
        if satisfied(names):
            return names, False, key_env
        return names, None, key_env


def _linear_price(litellm: Any, model: str) -> tuple[float | None, float | None, str | None]:
    """litellm's per-token prices, kept where ``cost_per_token`` is exactly linear at the probes."""  # noqa: D403

    def cost(prompt: int, completion: int) -> tuple[float, float]:
        got = litellm.cost_per_token(
            model=model, prompt_tokens=prompt, completion_tokens=completion
        )
        return float(got[0]), float(got[1])

    try:
        input_cost, output_cost = cost(1, 0)[0], cost(0, 1)[1]
        for prompt, completion in _PROBES:
            if cost(prompt, completion) != (prompt * input_cost, completion * output_cost):
                return None, None, None  # tiered or otherwise not linear: litellm prices it
    except Exception as exc:  # litellm raises its own "not mapped" errors
        return None, None, type(exc).__name__
    return input_cost, output_cost, None


def mapped_params(
    litellm: Any,
    route: WireRoute,
    config: ChatConfig,
    temperature: float,
    max_tokens: int,
    seed: int | None,
) -> dict[str, Any]:
    """The provider parameters litellm maps for one decoding, as the body carries them."""
    from litellm.utils import get_optional_params

    mapped = dict(
        get_optional_params(
            model=route.served,
            custom_llm_provider=route.provider,
            temperature=temperature,
            max_tokens=max_tokens,
            seed=seed,
            drop_params=config.drop_params,
        )
    )
    mapped |= mapped.pop("extra_body", None) or {}  # the openai SDK merges it likewise
    mapped.pop("stream", None)  # False is the protocol's default: the body stays lean
    return mapped
