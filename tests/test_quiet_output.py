"""`make repro` prints what a user needs: a stage's own lines, and libraries' only from WARNING."""

from __future__ import annotations

import subprocess
import sys

STAGE = """
import logging
from cultureqa.core.config import setup_stage
setup_stage()
chatty = logging.getLogger("great_expectations.data_context.types.base")
chatty.setLevel(logging.INFO)  # as GX does on import
chatty.info("Created temporary directory for ephemeral docs site")
logging.getLogger("cultureqa.stage").info("176 item rows pass 27 expectations")
logging.getLogger("litellm").warning("a provider warning")
import mlflow  # configures its own handler at import
logging.getLogger("mlflow.store.db.utils").info("Creating initial MLflow database tables...")
"""


def test_a_stage_prints_its_own_info_and_library_warnings_only() -> None:
    out = subprocess.run(
        [sys.executable, "-c", STAGE], capture_output=True, text=True, check=True, timeout=120
    )
    text = out.stdout + out.stderr
    assert "176 item rows pass" in text and "a provider warning" in text
    assert "ephemeral docs site" not in text
    assert "Creating initial MLflow database tables" not in text
