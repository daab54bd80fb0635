"""Model layer: one narrow async interface, several backends, one response store."""

from cultureqa.llm.base import (
    GenerateRequest,
    GenerateResponse,
    LoglikRequest,
    LoglikResponse,
    Message,
    ModelClient,
    UnsupportedOperation,
    Usage,
)
from cultureqa.llm.cached import CachedClient
from cultureqa.llm.fake import ScriptedModel
from cultureqa.llm.registry import BuiltModel, build_model, register_backend
from cultureqa.llm.store import ResponseStore, StoredResponse, open_store, request_key

__all__ = [
    "BuiltModel",
    "CachedClient",
    "GenerateRequest",
    "GenerateResponse",
    "LoglikRequest",
    "LoglikResponse",
    "Message",
    "ModelClient",
    "ResponseStore",
    "ScriptedModel",
    "StoredResponse",
    "UnsupportedOperation",
    "Usage",
    "build_model",
    "open_store",
    "register_backend",
    "request_key",
]
