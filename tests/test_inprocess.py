"""``cultureqa.testing.inprocess``: a stage's ``main`` in the test process, like its process.

The exit code and the one ``error:`` line come from the same wrapper as the script's
``__main__``; the call sees the workspace as cwd and exactly the environment it is given, and the
test process gets both back afterwards (and the ``cultureqa`` logger's level that the stage's
``setup_stage`` sets), also when the stage fails.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

from cultureqa.testing.inprocess import call_inprocess, run_stage_inprocess

STAGE = """
import os, sys
from pathlib import Path


def main(argv):
    from cultureqa.core.config import setup_stage

    setup_stage()  # the cultureqa logger at CULTUREQA_LOG_LEVEL, as in every stage
    Path("seen.txt").write_text(os.environ.get("ONLY_HERE", "unset") + " " + " ".join(argv))
    print("wrote seen.txt")
    if argv == ["--missing"]:
        raise FileNotFoundError("data/sources/x.csv: no such file")
    return 0


if __name__ == "__main__":
    from cultureqa.core.config import run_stage

    sys.exit(run_stage(lambda: main(sys.argv[1:])))
"""


def test_a_stage_in_process_returns_what_its_process_returns(tmp_path: Path) -> None:
    script, ws = tmp_path / "stages" / "toy.py", tmp_path / "ws"
    script.parent.mkdir()
    script.write_text(STAGE, encoding="utf-8")
    ws.mkdir()
    env = {**os.environ, "ONLY_HERE": "yes", "CULTUREQA_LOG_LEVEL": "ERROR"}
    before_cwd, before_env = Path.cwd(), dict(os.environ)
    before_level = logging.getLogger("cultureqa").level
    assert before_level != logging.ERROR
    for argv in (["--ok"], ["--missing"]):
        inproc = run_stage_inprocess(script, argv, ws, env)
        seen_inproc = (ws / "seen.txt").read_text()
        proc = subprocess.run([sys.executable, str(script), *argv], cwd=ws, env=env,
                              capture_output=True, text=True, check=False)  # fmt: skip
        assert (ws / "seen.txt").read_text() == seen_inproc == f"yes {argv[0]}"
        assert (inproc.returncode, inproc.stdout) == (proc.returncode, proc.stdout)
        assert inproc.stderr == proc.stderr, (inproc.stderr, proc.stderr)
    assert proc.returncode == 2 and proc.stderr.startswith("error: ")
    assert Path.cwd() == before_cwd and dict(os.environ) == before_env
    assert logging.getLogger("cultureqa").level == before_level


def test_a_call_without_env_keeps_the_callers_environment(tmp_path: Path) -> None:
    before = dict(os.environ)
    done = call_inprocess(lambda: print(os.environ == before, Path.cwd()) or 0, ["x"], tmp_path)
    assert done.returncode == 0 and done.stdout == f"True {tmp_path}\n"
    assert dict(os.environ) == before
