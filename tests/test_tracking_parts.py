"""The one track stage: every part in one process, unchanged parts skipped and counted.

The parts here are the three dataset builds (their inputs are small metrics files), so the
stage runs in-process against a fresh sqlite store; evaluation parts are logged the same way
(tests/test_stages.py, tests/test_promises.py).
"""

from __future__ import annotations

import json
import runpy
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from cultureqa.core.config import ParamsError, run_stage
from cultureqa.core.runlog import RUNLOG, runlog_dir
from cultureqa.runs import tracking_parts
from cultureqa.runs.tracking_parts import TRACK_DIR, digest, plan, select, up_to_date

ROOT = Path(__file__).resolve().parents[1]
BUILDS = ["build/cases", "build/twohop-un_members", "build/twohop-indonesia"]


def _stage(argv: list[str]) -> int:
    main: Callable[[list[str]], int] = runpy.run_path(
        str(ROOT / "stages" / "track.py"), run_name="stage"
    )["main"]
    return run_stage(lambda: main(argv))


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    for name in ("ingest", "annotate", "construct", "shuffle", "validate"):
        _write(tmp_path / f"metrics/cases/{name}.json", {"input": 10, "kept": 9})
    for hop_set in ("un_members", "indonesia"):
        for name in ("build", "hop"):
            _write(tmp_path / f"metrics/twohop/{hop_set}/{name}.json", {"kept": 5})
        judged = JUDGED if hop_set == "indonesia" else LETTERED
        _items(tmp_path / f"data/build/twohop/{hop_set}/judged.parquet", judged)
    _items(tmp_path / "data/build/cases/construct/items.parquet", CASES)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    monkeypatch.delenv("DVC_EXP_NAME", raising=False)
    tracking_parts._code.clear()
    return tmp_path


JUDGED = {
    "item_id": ["q1.direct.en", "q2.direct.en"], "question": ["Where?", "Which?"],
    "options": [["Bali", "Aceh"], ["Java", "Riau"]],
    "answer": ["A", "B"], "clue_type": ["direct", "direct"], "language": ["en", "en"],
    "judge_keep": [True, False], "judge": ["rules", "rules"], "judge_reason": ["", "leaks"],
}  # fmt: skip
"""A two-hop set's judged questions (options as listed, as Indonesia's set stores them): one
kept, one removed by the judge."""
LETTERED = {"item_id": ["CASE-1.direct.en"], "question": ["Why?"], "option_A": ["a"],
            "option_B": ["b"], "answer": ["B"], "judge_keep": [True],
            "judge": ["rules"]}  # fmt: skip
"""The UN-member set's: one column per option letter."""
CASES = {"case_id": ["CASE-001"], "question": ["Why?"], "type_A": ["correct"],
         "type_B": ["stereotype"], "model": ["m"], "attempts": [1]}  # fmt: skip


def _items(path: Path, columns: dict[str, list[object]]) -> None:
    import pandas as pd

    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(columns).to_parquet(path)


def _write(path: Path, doc: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc), encoding="utf-8")


def _summary(root: Path) -> dict[str, object]:
    doc: dict[str, object] = json.loads((runlog_dir(root / TRACK_DIR) / "stage.json").read_text())
    return doc


def _params(root: Path) -> dict[str, object]:
    container = OmegaConf.to_container(OmegaConf.load(root / "params.yaml"), resolve=True)
    assert isinstance(container, dict)
    return container


def test_the_run_log_folder_is_the_one_runlog_names() -> None:
    assert tracking_parts.RUNLOG == RUNLOG


def test_every_family_is_planned_and_only_selects_by_name(workspace: Path) -> None:
    parts = plan(workspace, _params(workspace))
    names = [p.name for p in parts]
    assert names[-3:] == BUILDS and "indoculture/model" in names and "cases/model" in names
    assert "mocqa/model/cot" in names
    assert [p.name for p in select(parts, ["mocqa/model"])] == [
        "mocqa/model/zero_shot",
        "mocqa/model/cot",
    ]
    with pytest.raises(ParamsError, match="--only nope: no such part"):
        select(parts, ["nope"])


def test_the_digest_follows_the_inputs_the_params_and_the_experiment(workspace: Path) -> None:
    part = next(p for p in plan(workspace, _params(workspace)) if p.name == "build/cases")
    first = digest(workspace, part, "workspace:abc")
    assert digest(workspace, part, "workspace:abc") == first
    assert digest(workspace, part, "exp:other") != first  # each experiment logs its own parent
    _write(workspace / "metrics/cases/construct.json", {"input": 10, "kept": 8})
    assert digest(workspace, part, "workspace:abc") != first
    params = _params(workspace)
    params["cases"]["construct"]["max_attempts"] = 9  # type: ignore[index]
    changed = next(p for p in plan(workspace, params) if p.name == "build/cases")
    assert digest(workspace, changed, "workspace:abc") != digest(workspace, part, "workspace:abc")
    assert not up_to_date(workspace, part, first)  # no marker yet


def test_unchanged_parts_are_skipped_and_counted(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _stage(["--only", "build"]) == 0
    retired = _summary(workspace).pop("default_experiment_deleted")  # type: ignore[attr-defined]
    assert retired and "deleted the empty Default experiment" in str(retired)
    assert {**_summary(workspace), "default_experiment_deleted": None} == {
        "enabled": True, "logged": BUILDS, "skipped": {}, "default_experiment_deleted": None,
    }  # fmt: skip
    assert _stage(["--only", "build"]) == 0
    out = capsys.readouterr().out
    assert "track: skipped 3 of 3 part(s), inputs unchanged" in out and "build/cases" in out
    assert _summary(workspace)["logged"] == []
    _write(workspace / "metrics/cases/construct.json", {"input": 10, "kept": 7})
    assert _stage(["--only", "build"]) == 0  # one input changed: that part alone is logged
    assert _summary(workspace)["logged"] == ["build/cases"]
    assert "skipped 2 of 3 part(s)" in capsys.readouterr().out
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{workspace / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["cultureqa/cases-build"])
    assert len(runs) == 2 and sorted(runs["metrics.construct.kept"]) == [7, 9]


def test_each_build_run_holds_its_items_as_traces_and_default_goes(workspace: Path) -> None:
    """A build's overview in MLflow lands on its items: the judge's verdicts as assessments."""
    import mlflow

    assert _stage(["--only", "build"]) == 0
    mlflow.set_tracking_uri(f"sqlite:///{workspace / 'mlflow.db'}")
    assert [e.name for e in mlflow.search_experiments() if e.name == "Default"] == []
    found = mlflow.search_experiments(filter_string="name = 'cultureqa/twohop-indonesia-build'")
    traces = mlflow.search_traces(locations=[found[0].experiment_id], return_type="list")
    assert len(traces) == 2
    kept = {}
    for trace in traces:
        request = json.loads(trace.data.request)
        assert request["options"] and request["gold"] in ("A", "B")
        verdict = {a.name: a.value for a in trace.info.assessments}
        kept[request["item"]] = verdict["kept"]
        assert verdict["gold"] == request["gold"]
    assert kept == {"q1.direct.en": True, "q2.direct.en": False}
    first = next(json.loads(t.data.request) for t in traces if "q1" in t.data.request)
    assert first["options"] == {"A": "Bali", "B": "Aceh"}
    lettered = mlflow.search_experiments(filter_string="name = 'cultureqa/twohop-un_members-build'")
    (one,) = mlflow.search_traces(locations=[lettered[0].experiment_id], return_type="list")
    assert json.loads(one.data.request)["options"] == {"A": "a", "B": "b"}
    cases = mlflow.search_experiments(filter_string="name = 'cultureqa/cases-build'")
    (case,) = mlflow.search_traces(locations=[cases[0].experiment_id], return_type="list")
    assert json.loads(case.data.request)["options"] == {"A": "correct", "B": "stereotype"}
    from cultureqa.runs.mlflow_home import landing_gaps

    assert landing_gaps() == {}  # every experiment's overview has items this week
    import time

    later = landing_gaps(now_s=time.time() + 8 * 24 * 3600)  # the overview's window is 7 days
    assert len(later) == 3 and all("no trace in the last 7 days" in v for v in later.values())
    mlflow.create_experiment("planted")  # an experiment without traces is named
    assert landing_gaps() == {"planted": "no traces"}
    from cultureqa.runs.mlflow_home import ui_links

    lines = ui_links(workspace, "http://h:5000")  # what `make ui` prints
    assert len(lines) == 5 and lines[-1].startswith("note: planted opens on an empty overview")
    assert "cultureqa/cases-build: http://h:5000/#/experiments/" in lines[0]


def test_another_experiment_logs_every_part_again(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _stage(["--only", "build"]) == 0
    monkeypatch.setenv("DVC_EXP_NAME", "other-exp")
    assert _stage(["--only", "build"]) == 0
    assert _summary(workspace)["logged"] == BUILDS
    assert _stage(["--only", "build/cases", "--force"]) == 0  # forced: logged though unchanged
    assert _summary(workspace)["logged"] == ["build/cases"]


def test_one_store_serves_every_part(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    opened: list[str] = []
    init = SqlAlchemyStore.__init__

    def counting(self: SqlAlchemyStore, uri: str, *args: object, **kwargs: object) -> None:
        opened.append(uri)
        init(self, uri, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(SqlAlchemyStore, "__init__", counting)
    assert _stage(["--only", "build"]) == 0
    assert _summary(workspace)["logged"] == BUILDS
    assert opened == [f"sqlite:///{workspace / 'mlflow.db'}"]


def test_tracking_off_marks_every_part_without_mlflow_and_prunes(workspace: Path) -> None:
    params = OmegaConf.load(workspace / "params.yaml")
    params.tracking.enabled = False
    OmegaConf.save(params, workspace / "params.yaml")
    gone = workspace / TRACK_DIR / "indoculture" / "left-the-roster.json"
    _write(gone, {"enabled": True})
    code = (
        "import runpy, sys\n"
        f"sys.argv = ['track.py']\nsys.path.insert(0, {str(ROOT / 'stages')!r})\n"
        f"try:\n    runpy.run_path({str(ROOT / 'stages' / 'track.py')!r}, run_name='__main__')\n"
        "except SystemExit as stop:\n    assert not stop.code, stop.code\n"
        "print('mlflow imported:', 'mlflow' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=workspace, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "mlflow imported: False" in done.stdout
    assert "tracking.enabled is false" in done.stdout
    assert f"removed the marker of an entry no longer tracked: {gone}" in done.stdout
    markers = sorted((workspace / TRACK_DIR).rglob("*.json"))
    assert len(markers) == len(plan(workspace, _params(workspace))) and not gone.exists()
    assert all(json.loads(m.read_text()) == {"enabled": False} for m in markers)
    assert not (workspace / "mlflow.db").exists()


def test_the_experiments_written_last_lead_the_home_page(workspace: Path) -> None:
    """MLflow's home page lists the 5 experiments modified last: the results one comes first."""
    import mlflow

    from cultureqa.runs.mlflow_home import mark_modified

    assert _stage(["--only", "build"]) == 0
    mlflow.set_tracking_uri(f"sqlite:///{workspace / 'mlflow.db'}")
    recent = mlflow.search_experiments(order_by=["last_update_time DESC"], max_results=5)
    assert [e.name for e in recent][:3] == [
        "cultureqa/twohop-indonesia-build", "cultureqa/twohop-un_members-build",
        "cultureqa/cases-build",
    ]  # fmt: skip
    for name in ("cultureqa/results", "cultureqa/a", "cultureqa/b", "cultureqa/c"):
        mlflow.create_experiment(name)  # created before, as the first part creates it
    assert mark_modified(["cultureqa/a", "cultureqa/results", "gone"]) == [
        "cultureqa/a", "cultureqa/results"]  # fmt: skip
    recent = mlflow.search_experiments(order_by=["last_update_time DESC"], max_results=5)
    assert [e.name for e in recent][:2] == ["cultureqa/results", "cultureqa/a"]
    track = runpy.run_path(str(ROOT / "stages" / "track.py"), run_name="stage")
    written = track["_written"](_params(workspace), plan(workspace, _params(workspace)))
    assert written[-1] == "cultureqa/results" and written[0] == "cultureqa/cases-build"
    assert "cultureqa/indoculture" in written and "cultureqa/mocqa" in written
