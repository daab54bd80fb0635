"""Test doubles that are real enough to run the pipeline against (offline, on 127.0.0.1)."""

from cultureqa.testing.fake_openai import FakeOpenAIServer, FaultPlan

__all__ = ["FakeOpenAIServer", "FaultPlan"]
