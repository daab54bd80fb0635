"""Test doubles that are real enough to run the pipeline against (offline, on 127.0.0.1).

Exports resolve on first use, so ``python -m cultureqa.testing.fake_openai`` runs the server
module once, as ``__main__``, instead of importing it a second time through this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cultureqa.testing.fake_openai import FakeOpenAIServer, FaultPlan, model_config

__all__ = ["FakeOpenAIServer", "FaultPlan", "model_config"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from cultureqa.testing import fake_openai

        return getattr(fake_openai, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
