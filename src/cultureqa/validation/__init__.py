"""Dataset invariants with Great Expectations: suites in ``expectations/``, custom checks here."""

from cultureqa.validation.suites import SuiteReport, run_suite

__all__ = ["SuiteReport", "run_suite"]
