"""Sniff a multiple-choice source and propose its benchmark config (``cultureqa benchmark add``).

The sniffer only proposes: every guess lands in a YAML the user reads and edits, every judgement
the user should check is a printed note, and a field it cannot tell is an error naming the fields
it saw, never a silent default.
"""

from cultureqa.authoring.sniff.propose import Proposal, propose
from cultureqa.authoring.sniff.sample import Sample, read_sample

__all__ = ["Proposal", "Sample", "propose", "read_sample"]
