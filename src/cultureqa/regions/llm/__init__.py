"""The engine's model-backed steps: reply parsing, the LLM clue generator, panel and translation.

Nothing here runs unless a region set's build selects ``generator: llm`` or ``judge: panel``;
the offline build (table clues, rule judge) imports none of it.
"""
