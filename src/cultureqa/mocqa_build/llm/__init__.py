"""The LLM side of the ID-MoCQA build: clue generator, KB fact checks, reply parsing, repair.

The runners import the generator and repair steps only when ``generator.kind`` is ``llm``; the
template path uses nothing here but the labelled-reply parser that verify shares (DESIGN.md §5).
"""
