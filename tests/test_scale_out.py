"""Scale-out on existing engines (issue 14 item 4), each proven on loopback in the default suite.

1. ``dvc exp run --queue`` + ``dvc queue start -j 2``: two queued experiments run at once in
   two celery workers, share the workspace's response store (DVC sets ``DVC_ROOT`` to the
   workspace in its temp copies) and so send each distinct prompt once between them.
2. A real ``mlflow server`` (sqlite backend, local artifact root) receives the track stage's runs
   over HTTP through ``tracking.uri``; re-tracking adds no run.
3. A DVC remote (a local folder) carries a dataset and results to a second clone.

Real DVC, MLflow and stage processes run here, on tiny inputs; docs/scaling-out.md
shows the same commands.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from cultureqa.compose import compose_params
from cultureqa.core.provenance import file_md5
from cultureqa.runs.tracking import TrackingConfigError, tracking_uri
from cultureqa.testing import FakeOpenAIServer
from cultureqa.testing.inprocess import run_stage_inprocess
from cultureqa.testing.workspace import make_api_workspace

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
EVALUATE = f"{sys.executable} {ROOT / 'stages' / 'evaluate.py'}"
GIT_ID = ["-c", "user.name=t", "-c", "user.email=t@t"]


def _env() -> dict[str, str]:
    """A DVC user's shell: this checkout's code, offline, no DVC stage variables inherited."""
    env = {
        **os.environ,
        "PATH": f"{BIN}:{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT / "src"),
        "DVC_NO_ANALYTICS": "1",
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "CULTUREQA_LOG_LEVEL": "WARNING",
    }
    for key in ("DVC_ROOT", "CULTUREQA_STATE_DIR", "DVC_EXP_NAME", "MLFLOW_TRACKING_URI"):
        env.pop(key, None)
    return env


def _sh(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=300)
    if check:
        assert done.returncode == 0, (
            f"{' '.join(args)}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
        )
    return done


def _git_commit(repo: Path, message: str) -> None:
    _sh(repo, "git", "add", "-A")
    _sh(repo, "git", *GIT_ID, "commit", "-qm", message)


# --- 1. queue workers share the response store ------------------------------------------------

# Each experiment starts with a setting only it has, then both ask for the shared one.
SWEEP = (
    "benchmarks.indoculture.settings=[mcq-none-id,mcq-country-id],[mcq-province-id,mcq-country-id]"
)
LIMIT = 6


def _location(messages: list[dict[str, Any]]) -> str:
    """Which IndoCulture setting a prompt belongs to, from its location clause."""
    text = " ".join(str(m.get("content")) for m in messages)
    if "Lokasi: Indonesia." in text:
        return "country"
    return "province" if "Lokasi:" in text else "none"


class OverlapGate:
    """Replies to nothing until both experiments have a request in flight (their own settings).

    That makes the two workers' runs overlap by construction, not by timing luck. If the second
    never comes, the gate opens after ``timeout_s`` and records that they did not overlap.
    """

    def __init__(self, timeout_s: float = 60.0) -> None:
        self.seen: set[str] = set()
        self.overlapped = threading.Event()
        self.gave_up = threading.Event()
        self.timeout_s = timeout_s
        self._lock = threading.Lock()

    def __call__(self, messages: list[dict[str, Any]]) -> str:
        with self._lock:
            self.seen.add(_location(messages))
            if {"none", "province"} <= self.seen and not self.gave_up.is_set():
                self.overlapped.set()  # not after a give-up: by then the first may be done
        if not self.gave_up.is_set() and not self.overlapped.wait(self.timeout_s):
            self.gave_up.set()
        return "A"


def _queue_workspace(ws: Path) -> None:
    """A git + DVC repo whose only stage is the real evaluate stage on 6 IndoCulture items."""
    # dvc_hydra_plugins: DVC composes conf/ through it (the region sets' digest resolver)
    for folder in ("conf", "prompts", "data/knowledge", "data/sources/indoculture",
                   "dvc_hydra_plugins"):  # fmt: skip
        shutil.copytree(ROOT / folder, ws / folder)
    with (ws / "conf" / "benchmark" / "indoculture.yaml").open("a", encoding="utf-8") as fh:
        fh.write(f"limit: {LIMIT}\n")
    params = compose_params(ws / "conf")
    (ws / "params.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(params)))
    (ws / "dvc.yaml").write_text(
        textwrap.dedent(
            f"""\
            stages:
              evaluate:
                cmd: {EVALUATE} --benchmark indoculture --model model
                deps:
                  - data/sources
                params:
                  - benchmarks.indoculture
                  - model
                  - prompt
                  - evaluate.max_error_share
                outs:
                  - data/eval/indoculture/model
                metrics:
                  - metrics/eval/indoculture/model.json:
                      cache: false
            """
        )
    )
    (ws / ".gitignore").write_text("/.cultureqa/\n/.runlog/\n")
    _sh(ws, "git", "init", "-q")
    _sh(ws, "dvc", "init", "-q")
    _sh(ws, "dvc", "config", "hydra.enabled", "true")
    _sh(ws, "dvc", "config", "hydra.plugins_path", "dvc_hydra_plugins")
    _git_commit(ws, "workspace")


def _wait_for_queue(ws: Path, deadline_s: float = 400.0) -> str:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        status = _sh(ws, "dvc", "queue", "status").stdout
        if "Queued" not in status and "Running" not in status:
            return status
        time.sleep(2)
    raise AssertionError(f"the queue did not finish:\n{status}")


def _experiments(ws: Path) -> list[dict[str, Any]]:
    shown = json.loads(_sh(ws, "dvc", "exp", "show", "--json", "--no-pager").stdout)
    return [
        rev["data"]
        for base in shown
        for exp in base.get("experiments") or []
        for rev in exp["revs"]
    ]


@pytest.mark.timeout(600)
def test_two_queue_workers_share_the_store_and_send_each_prompt_once(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    _queue_workspace(ws)
    gate = OverlapGate()
    with FakeOpenAIServer(responder=gate, latency_s=0.02) as server:
        _sh(ws, "dvc", "exp", "run", "--queue", "-S", "model=openai_compatible",
            "-S", "model.id=served-model", "-S", "model.options.litellm_model=openai/served-model",
            "-S", f"model.options.api_base={server.api_base}", "-S", "model.concurrency=4",
            "-S", "model.ramp_up_s=0", "-S", SWEEP)  # fmt: skip
        try:
            subprocess.run(  # workers are daemons: captured pipes would wait for them to exit
                ["dvc", "queue", "start", "-j", "2"],
                cwd=ws, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                check=True, timeout=120,
            )  # fmt: skip
            status = _wait_for_queue(ws)
        finally:
            _sh(ws, "dvc", "queue", "stop", check=False)
        prompts = Counter(json.dumps(r.messages, sort_keys=True) for r in server.records)
    experiments = _experiments(ws)
    assert len(experiments) == 2 and status.count("Success") == 2, status
    assert gate.overlapped.is_set(), "the two experiments never had requests in flight together"
    by_setting = Counter(_location(json.loads(p)) for p in prompts)
    assert by_setting == {"none": LIMIT, "country": LIMIT, "province": LIMIT}
    assert max(prompts.values()) == 1, "a prompt was sent by both workers"
    assert (ws / ".cultureqa" / "responses.sqlite").is_file()  # the workspace's store, shared
    for exp in experiments:
        settings = exp["params"]["params.yaml"]["data"]["benchmarks"]["indoculture"]["settings"]
        metrics = exp["metrics"]["metrics/eval/indoculture/model.json"]["data"]
        assert sorted(metrics) == sorted(settings)
        assert {m["n"] for m in metrics.values()} == {LIMIT}
        assert {m["error_rate"] for m in metrics.values()} == {0.0}


def test_a_relative_state_dir_is_the_project_roots_not_the_temp_copys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a queued experiment sees: DVC_ROOT is the workspace, the cwd its temp copy."""
    from cultureqa.core.paths import state_dir

    copy = tmp_path / ".dvc" / "tmp" / "exps" / "tmpabc"
    copy.mkdir(parents=True)
    monkeypatch.chdir(copy)
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    monkeypatch.delenv("CULTUREQA_STATE_DIR", raising=False)
    assert state_dir() == tmp_path / ".cultureqa"
    monkeypatch.setenv("CULTUREQA_STATE_DIR", "state/shared")
    assert state_dir() == tmp_path / "state" / "shared"
    monkeypatch.setenv("CULTUREQA_STATE_DIR", str(tmp_path / "elsewhere"))
    assert state_dir() == tmp_path / "elsewhere"


# --- 2. a real MLflow server receives the runs over HTTP ---------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


class MlflowServer:
    """``mlflow server`` on sqlite with a local artifact root, on a free loopback port.

    One worker and no job runner. Start-up (imports, then the database migration) takes tens of
    seconds on a busy 2-core box, so the process starts at once and :meth:`ready` waits for it:
    a test prepares its inputs meanwhile.
    """

    def __init__(self, home: Path) -> None:
        self.home, self.artifacts = home, home / "artifacts"
        self.url = f"http://127.0.0.1:{_free_port()}"
        self._log = (home / "server.log").open("w")
        store = f"sqlite:///{home / 'mlflow.db'}"
        self.process = subprocess.Popen(
            [str(BIN / "mlflow"), "server", "--backend-store-uri", store,
             "--artifacts-destination", str(self.artifacts), "--host", "127.0.0.1",
             "--port", self.url.rsplit(":", 1)[1], "--workers", "1"],
            env={**_env(), "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
            stdout=self._log, stderr=subprocess.STDOUT,
        )  # fmt: skip

    def ready(self, timeout_s: float = 240.0) -> str:
        """The server's URL once ``/health`` answers; fails with its log if it never does."""
        deadline = time.monotonic() + timeout_s
        while not _healthy(self.url):
            if self.process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(
                    f"mlflow server did not start:\n{(self.home / 'server.log').read_text()}"
                )
            time.sleep(0.5)
        return self.url

    def stop(self) -> None:
        """SIGTERM: the CLI forwards it to uvicorn and exits with it."""
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MlflowServer]:
    server = MlflowServer(tmp_path_factory.mktemp("mlflow-server"))
    try:
        yield server
    finally:
        server.stop()


def _tracked_workspace(ws: Path, uri: str) -> None:
    """A baseline's evaluation on 9 synthetic items, with ``tracking.uri`` pointing at ``uri``."""
    make_api_workspace(ROOT, ws, 9, "http://127.0.0.1:9/v1", 1)
    params = OmegaConf.load(ws / "params.yaml")
    params.tracking = {"enabled": True, "experiment_prefix": "scale", "uri": uri}
    params.evaluate.roster = ["baselines.random"]  # the entry evaluated below: the part tracked
    OmegaConf.save(params, ws / "params.yaml")
    # in this process: the evaluation is the track stage's input here, not the subject (0.65
    # CPU s as a stage process, 0.05 here once the worker has the stage's imports)
    done = run_stage_inprocess(
        ROOT / "stages" / "evaluate.py",
        ["--benchmark", "synthetic", "--model", "baselines.random"],
        ws, _stage_env(ws),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def _stage_env(ws: Path) -> dict[str, str]:
    return {**_env(), "DVC_ROOT": str(ws), "CULTUREQA_STATE_DIR": str(ws / ".cultureqa")}


def _stage(ws: Path, script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "stages" / script), *args],
        cwd=ws, env=_stage_env(ws), capture_output=True, text=True, timeout=300,
    )  # fmt: skip


TRACK = ("track.py", "--only", "synthetic/baselines.random")


def test_the_track_stage_logs_to_an_mlflow_server_over_http(
    tmp_path: Path, mlflow_server: MlflowServer
) -> None:
    from mlflow import MlflowClient

    ws = tmp_path / "ws"
    _tracked_workspace(ws, mlflow_server.url)
    url, artifacts = mlflow_server.ready(), mlflow_server.artifacts
    for _ in range(2):  # the second time is a re-track of the same result: updated in place
        done = _stage(ws, *TRACK)
        assert done.returncode == 0, done.stderr
    client = MlflowClient(url)
    experiment = client.get_experiment_by_name("scale/synthetic")
    assert experiment is not None and experiment.artifact_location.startswith("mlflow-artifacts:")
    runs = client.search_runs([experiment.experiment_id])
    (run,) = [r for r in runs if "mlflow.parentRunId" in r.data.tags]  # one run: no duplicate
    (parent,) = [r for r in runs if "cultureqa.group" in r.data.tags]  # the DVC experiment's
    assert run.data.tags["mlflow.parentRunId"] == parent.info.run_id
    data = run.data
    assert data.params["model.id"] == "random" and data.params["setting"] == "mcq-none-en"
    assert data.params["dataset.md5"] == file_md5(ws / "data" / "synthetic.jsonl")
    assert data.metrics["n"] == 9 and 0.0 <= data.metrics["accuracy"] <= 1.0
    assert data.tags["roster_entry"] == "baselines.random"
    (given,) = run.inputs.dataset_inputs
    assert given.dataset.digest == data.params["dataset.md5"]
    names = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"predictions.json", "metrics.json", "run.json"} <= names
    stored = {p.name for p in artifacts.rglob("*") if p.is_file()}  # on the server's side
    assert {"predictions.json", "metrics.json", "run.json"} <= stored
    assert not (ws / "mlflow.db").exists() and not (ws / "mlartifacts").exists()


def test_a_server_config_without_its_uri_stops_the_track_stage(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _tracked_workspace(ws, "???")  # `-S tracking=server` without `-S tracking.uri=...`
    done = _stage(ws, *TRACK)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "error: tracking.uri is required with tracking=server: "
        "dvc exp run -S tracking=server -S tracking.uri=http://HOST:5000"
    )
    assert not (ws / "data" / "track").exists() and not (ws / "mlflow.db").exists()


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("https://me:secret@mlflow.example", "carries a password"),
        ("sqlite:///mlflow.db", "is relative"),
        ("mlruns", "is relative"),
    ],
)
def test_unsafe_tracking_uris_are_refused(uri: str, message: str) -> None:
    with pytest.raises(TrackingConfigError, match=message):
        tracking_uri({"uri": uri})


def test_accepted_tracking_uris() -> None:
    assert tracking_uri({}) is None  # the project's sqlite database
    for uri in ("http://127.0.0.1:5000", "https://me@mlflow.example", "sqlite:////srv/m.db"):
        assert tracking_uri({"uri": uri}) == uri


# --- 3. a DVC remote carries datasets and results between clones -------------------------------


def _remote_workspace(ws: Path, remote: Path) -> None:
    """Synthetic dataset under `dvc add`, the evaluate stage's results, a local-folder remote."""
    make_api_workspace(ROOT, ws, 12, "http://127.0.0.1:9/v1", 1)
    evaluate = f"{EVALUATE} --benchmark synthetic --model baselines.random"
    (ws / "dvc.yaml").write_text(
        textwrap.dedent(
            f"""\
            stages:
              evaluate:
                cmd: {evaluate}
                deps:
                  - data/synthetic.jsonl
                params:
                  - baselines.random
                  - benchmarks.synthetic
                outs:
                  - data/eval/synthetic/baselines.random
                metrics:
                  - metrics/eval/synthetic/baselines.random.json:
                      cache: false
            """
        )
    )
    (ws / ".gitignore").write_text("/.cultureqa/\n/.runlog/\n")
    _sh(ws, "git", "init", "-q")
    _sh(ws, "dvc", "init", "-q")
    _sh(ws, "dvc", "add", "-q", "data/synthetic.jsonl")
    _sh(ws, "dvc", "remote", "add", "-d", "store", str(remote))
    _sh(ws, "dvc", "repro", "-q")
    _git_commit(ws, "dataset, results, remote")


def _md5s(ws: Path, paths: list[str]) -> dict[str, str]:
    return {p: file_md5(ws / p) for p in paths}


def test_dvc_push_and_pull_carry_the_dataset_and_results_to_a_fresh_clone(
    tmp_path: Path,
) -> None:
    first, remote, second = tmp_path / "a", tmp_path / "remote", tmp_path / "b"
    _remote_workspace(first, remote)
    pushed = _sh(first, "dvc", "push").stdout
    files = [
        "data/synthetic.jsonl",
        "data/eval/synthetic/baselines.random/predictions.parquet",
        "data/eval/synthetic/baselines.random/run.json",
    ]
    _sh(tmp_path, "git", "clone", "-q", str(first), str(second))
    assert not any((second / f).exists() for f in files)  # git carries only the .dvc/lock files
    assert (second / "metrics/eval/synthetic/baselines.random.json").is_file()  # cache: false
    pulled = _sh(second, "dvc", "pull").stdout
    assert _md5s(second, files) == _md5s(first, files), (pushed, pulled)
    status = _sh(second, "dvc", "status").stdout
    assert "up to date" in status, status
    assert _sh(second, "git", "status", "--porcelain").stdout == ""
