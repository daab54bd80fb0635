"""Clues and their proof, from tables or from a model.

Named-fact and indicator tables, the conditions that single out a region, the knowledge-table
generator and the LLM generator whose claims the same conditions decide.
"""
