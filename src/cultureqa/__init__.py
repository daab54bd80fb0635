"""cultureqa: reproducible construction and evaluation of cultural-knowledge benchmarks for LLMs.

Subpackages: ``core`` (what every stage shares: params, errors, atomic I/O, paths, run locks and
records, spend counters), ``llm`` (one model interface, backends, response store), ``benchmarks``
(declarative multiple-choice specs), ``authoring`` (``benchmark add``), ``evaluation`` (prompts,
parsing, runner), ``analysis`` (statistics, tables, plots), ``validation`` (Great Expectations),
``knowledge`` (province knowledge base, gazetteer), ``mocqa`` (ID-MoCQA build and evaluation),
``cases`` (cross-cultural scenario benchmark).
Importing the package does no I/O and pulls in no heavy dependency.
"""

__version__ = "0.1.0"
