"""Build a ModelClient from a ``conf/model/*.yaml`` entry.

Backends register a factory by name; configs say ``backend: litellm`` (or local_hf, random,
fixed). No branching on model-name substrings: adding a provider is adding a factory.
Each factory also returns the *identity* that goes into the response-store key: only what changes
the answer (never keys, retries, timeouts or concurrency).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from cultureqa.core.paths import user_cache_dir
from cultureqa.llm.api.chat_client import ChatClient, ChatConfig
from cultureqa.llm.api.replicas import ReplicaPool, single_attempt
from cultureqa.llm.api.retry import RetryConfig
from cultureqa.llm.base import ModelClient, ModelConfigError
from cultureqa.llm.baselines import FixedPositionBaseline, RandomBaseline

__all__ = ["BuiltModel", "ModelConfigError", "build_model", "register_backend"]


@dataclass(frozen=True)
class BuiltModel:
    """A client plus the identity hashed into cache keys and how to chunk requests."""

    client: ModelClient
    identity: dict[str, Any]
    chunk_size: int
    stored: bool = True
    """Whether answers go to the response store: not for baselines, which call no model (a
    random baseline over a million-row benchmark wrote 311 MB of answers it recomputes free)."""


Factory = Callable[[Mapping[str, Any]], BuiltModel]
_FACTORIES: dict[str, Factory] = {}


def register_backend(name: str) -> Callable[[Factory], Factory]:
    """Decorator registering a backend factory under ``name``."""

    def wrap(factory: Factory) -> Factory:
        _FACTORIES[name] = factory
        return factory

    return wrap


def build_model(cfg: Mapping[str, Any]) -> BuiltModel:
    """Build the client for a model config; unknown backends name the known ones."""
    backend = str(cfg.get("backend"))
    if backend not in _FACTORIES:
        raise ModelConfigError(
            f"model '{cfg.get('id')}': unknown backend '{backend}' (known: {sorted(_FACTORIES)})"
        )
    try:
        return _FACTORIES[backend](cfg)
    except ModelConfigError:
        raise  # already names the model and what to change
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelConfigError(
            f"model '{cfg.get('id')}' (backend {backend}): bad config: {exc!r}"
        ) from exc


def _options(cfg: Mapping[str, Any]) -> dict[str, Any]:
    return dict(cfg.get("options") or {})


@register_backend("random")
def _random(cfg: Mapping[str, Any]) -> BuiltModel:
    seed = int(_options(cfg).get("seed", 0))
    identity = {"backend": "random", "seed": seed}
    return BuiltModel(RandomBaseline(str(cfg["id"]), seed), identity, 1000, stored=False)


@register_backend("fixed")
def _fixed(cfg: Mapping[str, Any]) -> BuiltModel:
    position = int(_options(cfg).get("position", 0))
    identity = {"backend": "fixed", "position": position}
    baseline = FixedPositionBaseline(str(cfg["id"]), position)
    return BuiltModel(baseline, identity, 1000, stored=False)


@register_backend("litellm")
def _litellm(cfg: Mapping[str, Any]) -> BuiltModel:
    """Every API model; ``options.transport`` picks ``http``, ``litellm`` or ``wire``.

    ``http`` is aiohttp alone; ``wire`` takes litellm's routing, parameters and prices and sends
    with aiohttp (:mod:`cultureqa.llm.api.wire_transport`).

    The transport is left out of the identity: both send the same request and get the same
    answer, so switching it keeps every stored answer.
    """
    opts = _options(cfg)
    price = dict(cfg.get("price") or {})
    retry = dict(cfg.get("retry") or {})
    api_base = opts.get("api_base")
    replicas = None if api_base is None or isinstance(api_base, str) else list(api_base)
    transport = str(opts.get("transport", "litellm"))
    if transport not in ("http", "litellm", "wire"):
        raise ModelConfigError(
            f"model '{cfg.get('id')}': options.transport must be http, litellm or wire, "
            f"not {transport!r}"
        )
    config = ChatConfig(
        model_id=str(cfg["id"]),
        litellm_model=str(opts["litellm_model"]),
        api_base=None if replicas is not None else api_base,
        api_key_env=opts.get("api_key_env"),
        transport=transport,  # type: ignore[arg-type]  # checked above
        wire_base=opts.get("wire_base"),
        wire_key_env=opts.get("wire_key_env"),
        concurrency=int(cfg.get("concurrency", 8)),
        ramp_up_s=float(cfg.get("ramp_up_s", ChatConfig.ramp_up_s)),
        drop_params=bool(opts.get("drop_params", True)),
        extra_params=dict(opts.get("extra_params") or {}),
        input_cost_per_token=price.get("input_per_token"),
        output_cost_per_token=price.get("output_per_token"),
        retry=RetryConfig(**retry),
    )
    identity = {
        "backend": "litellm",
        "litellm_model": config.litellm_model,
        "api_base": config.api_base,
        "extra_params": config.extra_params,
    }
    if opts.get("batch"):  # provider Batch API: one batch per call (cultureqa.llm.api.batch)
        if replicas is not None:
            raise ModelConfigError(
                f"model '{config.model_id}': options.batch sends to one provider endpoint; "
                "give one options.api_base, not a list of replicas"
            )
        return BuiltModel(_batch_client(opts, config), identity, chunk_size=1_000_000)
    if replicas is not None:
        return _replica_pool(config, [str(b) for b in replicas], identity)
    return BuiltModel(ChatClient(config), identity, chunk_size=1)


def _batch_client(opts: Mapping[str, Any], config: ChatConfig) -> ModelClient:
    import os

    from cultureqa.core.paths import state_dir
    from cultureqa.llm.api.batch import BatchClient, BatchConfig

    key = os.environ.get(config.api_key_env, "") if config.api_key_env else None
    if config.api_key_env and not key:
        raise ModelConfigError(
            f"model '{config.model_id}': options.api_key_env names {config.api_key_env}, which "
            f"is not set; export {config.api_key_env} (or set api_key_env: null)"
        )
    return BatchClient(
        BatchConfig(
            model_id=config.model_id,
            litellm_model=config.litellm_model,
            api_base=config.api_base,
            api_key=key,
            state_dir=state_dir() / "batches",
            poll_s=float(opts.get("batch_poll_s", 30.0)),
            wait_s=float(opts.get("batch_wait_s", 3600.0)),
            input_cost_per_token=config.input_cost_per_token,
            output_cost_per_token=config.output_cost_per_token,
        )
    )


def _replica_pool(config: ChatConfig, bases: list[str], identity: dict[str, Any]) -> BuiltModel:
    """One client per replica, one attempt each; the pool retries across them (llm/api/replicas.py).

    The store identity names the served model, not the hosts: replicas give the same answers,
    so adding, removing or moving one keeps every stored answer.
    """
    one_try = single_attempt(config.retry)

    def make(base: str) -> ChatClient:
        return ChatClient(replace(config, api_base=base, retry=one_try))

    pool = ReplicaPool(
        config.model_id, bases, make, config.retry, config.concurrency, config.api_key_env
    )
    return BuiltModel(pool, {**identity, "api_base": "replicas"}, chunk_size=1)


@register_backend("local_hf")
def _local_hf(cfg: Mapping[str, Any]) -> BuiltModel:
    from cultureqa.llm.local.local_hf import LocalHFClient

    opts = _options(cfg)
    source = str(opts.get("source", "gemma3_270m_gguf"))
    client = LocalHFClient(
        model_id=str(cfg["id"]),
        source=source,  # type: ignore[arg-type]
        hf_path=opts.get("hf_path"),
        cache_dir=user_cache_dir() / "models",
        batch_size=int(cfg.get("batch_size", 8)),
        max_length=int(opts.get("max_length", 1024)),
        num_threads=int(opts.get("num_threads", 2)),
        cpu_kernels=opts.get("cpu_kernels"),
    )
    identity = {
        "backend": "local_hf",
        "source": source,
        "hf_path": opts.get("hf_path"),
        "max_length": int(opts.get("max_length", 1024)),
        "cpu_kernels": opts.get("cpu_kernels"),  # the last digits of every score depend on it
    }
    return BuiltModel(client, identity, chunk_size=int(cfg.get("batch_size", 8)) * 4)
