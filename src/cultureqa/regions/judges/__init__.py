"""Judging items: rule checks, the rule judge, the three-model panel and their shared keep rule."""
