"""The evaluate stage reaches its first request without pandas or any other heavy library.

The real stage against the fake server, twice in fresh workspaces on one user cache: the first
run reads the benchmark from its source (pandas) and stores the load; the second finds it
stored, and by its first request has imported none of :data:`HEAVY`, tqdm included although
its progress bar is on (the bar is built at the first reply), and pandas is imported on the
engine's warm-up thread while the last replies are on the wire. Both write the same bytes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cultureqa.testing import FakeOpenAIServer
from cultureqa.testing.workspace import make_api_workspace, stage_env

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("pandas", "numpy", "pyarrow", "omegaconf", "scipy", "mlflow", "great_expectations",
         "transformers", "litellm", "statsmodels", "tqdm", "unittest.mock")  # fmt: skip

WRAPPER = """
import json, runpy, sys
import aiohttp.client
probe, stage = sys.argv[1], sys.argv[2]
heavy = {heavy!r}
send = aiohttp.client.ClientSession._request
seen = []

async def first(self, *args, **kwargs):
    if not seen:
        seen.append(sorted(m for m in heavy if m in sys.modules))
        open(probe, "w").write(json.dumps(seen[0]))
    return await send(self, *args, **kwargs)

aiohttp.client.ClientSession._request = first


class WhoImports:  # which thread imports pandas: the engine's warm-up, in the last round trips
    def find_spec(self, name, path=None, target=None):
        if name == "pandas":
            import threading
            open(probe + ".thread", "w").write(threading.current_thread().name)
        return None


sys.meta_path.insert(0, WhoImports())
sys.path.insert(0, str(__import__("pathlib").Path(stage).parent))
sys.argv = [stage, "--benchmark", "synthetic", "--model", "model"]
runpy.run_path(stage, run_name="__main__")
"""


def test_a_stored_benchmark_load_keeps_heavy_libraries_off_the_request_path(
    tmp_path: Path,
) -> None:
    probe = tmp_path / "modules.json"
    wrapper = WRAPPER.format(heavy=HEAVY)
    imported, outputs, threads = [], [], []
    with FakeOpenAIServer() as server:
        for k in range(2):
            ws = make_api_workspace(ROOT, tmp_path / f"ws{k}", 12, server.api_base, 4,
                                    "CULTUREQA_TEST_KEY", transport="wire")  # fmt: skip
            params = ws / "params.yaml"  # the bar on: its import still waits for a reply
            params.write_text(params.read_text().replace("progress: false", "progress: true"))
            env = {**stage_env(ws), "CULTUREQA_CACHE_DIR": str(tmp_path / "cache"),
                   "CULTUREQA_TEST_KEY": "sk-test", "CULTUREQA_LOG_LEVEL": "INFO"}  # fmt: skip
            cmd = [sys.executable, "-c", wrapper, str(probe), str(ROOT / "stages/evaluate.py")]
            done = subprocess.run(cmd, cwd=ws, env=env, capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
            imported.append(json.loads(probe.read_text()))
            threads.append(Path(f"{probe}.thread").read_text())
            out = ws / "data/eval/synthetic/model"
            outputs.append({p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file()})
            stored = "items from the stored load" in done.stderr
            assert stored == (k == 1), (
                done.stderr + done.stdout
            )  # the log says where the items came from
        assert server.hits == 24
    assert "pandas" in imported[0], "the first run reads the source (the planted contrast)"
    assert imported[1] == [], f"imported before the first request: {imported[1]}"
    assert threads == ["MainThread", "tail-warm-up"], "the tables' import waits for the last round"
    assert outputs[0] == outputs[1] and "predictions.parquet" in outputs[0]
