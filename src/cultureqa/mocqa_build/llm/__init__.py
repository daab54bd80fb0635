"""The LLM side of the ID-MoCQA build: clue generator, KB fact checks, reply parsing, repair.

The runners import the generator and repair steps only when ``generator.kind`` is ``llm``; the
template path uses nothing here (the labelled-reply parser it shares with verify lives in
``cultureqa.regions.llm.parse``, DESIGN.md §5).
"""
