"""Prompts, answer parsing, the evaluation runner and per-benchmark analysis."""
