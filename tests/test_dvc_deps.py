"""DVC code deps follow the imports: an edit in one family's code reruns only that family.

Every stage depends on exactly the ``src/cultureqa`` subpackages and top-level modules its script
imports (transitively, lazy imports included), each path declared once; and real ``dvc status``
in a temp copy shows that editing ID-MoCQA build code leaves the evaluation stages of
every family, ID-MoCQA's own included, up to date, and editing its evaluation code leaves the
build up to date (the shared types live in ``mocqa_shared``). ``python -m cultureqa.dvc_deps``
(``make dvc-deps``) writes the lists from the imports and prunes ``dvc.lock`` of stages
``dvc.yaml`` no longer defines.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

from cultureqa import dvc_deps
from cultureqa.dvc_deps import code_deps

ROOT = Path(__file__).resolve().parents[1]
COPIED = ["dvc.yaml", "params.yaml", ".dvcignore", "src", "stages", "prompts", "data/sources",
          "data/knowledge", "expectations", "conf", "metrics"]  # fmt: skip


def missing_or_extra(deps: Iterable[str], script: str, root: Path = ROOT) -> list[str]:
    """What a stage's code deps lack (``-``) or list needlessly or twice (``+``)."""
    return dvc_deps.missing_or_extra(list(deps), script, root)


def _stages() -> list[object]:
    from dvc.repo import Repo

    with Repo(str(ROOT)) as repo:
        return list(repo.index.stages)


def test_every_stage_depends_on_exactly_the_code_it_imports() -> None:
    wrong = {}
    for stage in _stages():
        script = str(stage.cmd).split()[1]  # type: ignore[attr-defined]
        deps = [str(d.def_path) for d in stage.deps]  # type: ignore[attr-defined]
        assert deps.count(script) == 1, stage
        if problems := missing_or_extra(deps, script):
            wrong[stage.addressing] = problems  # type: ignore[attr-defined]
    assert not wrong, f"dvc.yaml code deps out of date: {wrong}"


def test_a_stage_missing_an_imported_package_is_caught() -> None:
    deps = sorted(code_deps(ROOT, "stages/twohop_build.py"))
    assert "src/cultureqa/mocqa_shared" in deps and "src/cultureqa/analysis" not in deps
    doctored = [d for d in deps if d != "src/cultureqa/mocqa_shared"] + ["src/cultureqa/analysis"]
    assert missing_or_extra(doctored, "stages/twohop_build.py") == [
        "- src/cultureqa/mocqa_shared", "+ src/cultureqa/analysis",
    ]  # fmt: skip
    assert missing_or_extra([*deps, deps[0]], "stages/twohop_build.py") == [f"+ {deps[0]} (twice)"]


BUILD_STAGES = ("twohop_build", "twohop_validate", "mocqa_human")


def test_no_build_stage_but_hop_imports_the_evaluation_package() -> None:
    """The build shares types through ``mocqa_shared``; only ``twohop_hop`` evaluates a model."""
    evaluation = "src/cultureqa/mocqa"
    for stage in BUILD_STAGES:
        deps = code_deps(ROOT, f"stages/{stage}.py")
        assert evaluation not in deps and "src/cultureqa/mocqa_shared" in deps, (stage, deps)
    assert evaluation in code_deps(ROOT, "stages/twohop_hop.py")


def _dvc(cwd: Path, *args: str) -> str:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    env.pop("DVC_ROOT", None)
    done = subprocess.run(
        [sys.executable, "-m", "dvc", *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _placeholders(root: Path, targets: list[str]) -> None:
    """Stand-ins for the targets' missing deps and outs, so ``dvc commit`` can record a lock."""
    from dvc.repo import Repo

    with Repo(str(root)) as repo:
        stages = [s for s in repo.index.stages if s.name.split("@")[0] in targets]
        paths = [Path(o.fs_path) for s in stages for o in (*s.deps, *s.outs) if o.def_path]
    for path in paths:
        if not path.exists() and path.name != "params.yaml":
            if path.suffix:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("{}\n")
            else:
                (path / "placeholder").parent.mkdir(parents=True, exist_ok=True)
                (path / "placeholder").write_text("x\n")


EDIT_TARGETS = ["evaluate", "cases_evaluate", "twohop_build", "mocqa_evaluate"]
OVERRIDE_TARGETS = ["params_check", "twohop_build", "twohop_validate", "twohop_hop", "evaluate",
                    "validate", "analyze", "describe_indoculture"]  # fmt: skip


@pytest.fixture(scope="module")
def committed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the tree whose stages (both tests' targets) DVC has committed as up to date.

    Built once per test process: ``dvc commit`` of these stages parses ``params.yaml`` and
    ``dvc.yaml`` once per stage (about 5 CPU s); each test works on its own copy of it.
    """
    root = tmp_path_factory.mktemp("committed")
    _copy(root, COPIED)
    targets = sorted({*EDIT_TARGETS, *OVERRIDE_TARGETS})
    _dvc(root, "init", "--no-scm", "-q")
    _placeholders(root, targets)
    _dvc(root, "commit", "-f", "-q", *targets)
    return root


def _copy_of(committed: Path, dst: Path) -> Path:
    shutil.copytree(committed, dst, symlinks=True)
    return dst


def test_an_edit_in_two_hop_build_code_leaves_evaluation_up_to_date(
    committed: Path, tmp_path: Path
) -> None:
    build, evaluation = _copy_of(committed, tmp_path / "b"), _copy_of(committed, tmp_path / "e")
    targets = EDIT_TARGETS
    assert json.loads(_dvc(build, "status", "--json", *targets)) == {}
    with (build / "src/cultureqa/regions/build.py").open("a", encoding="utf-8") as f:
        f.write("# an edit in two-hop build code\n")
    changed = set(json.loads(_dvc(build, "status", "--json", *targets)))
    assert "twohop_build@indonesia" in changed
    # ID-MoCQA evaluation code lives in mocqa/, apart from the build: a build edit reaches it
    # only through the dataset, never as a code dep.
    assert not any(
        s.startswith(("evaluate@", "cases_evaluate@", "mocqa_evaluate@")) for s in changed
    ), changed
    # and the other way (on a copy without the build edit): an edit in evaluation code leaves
    # the build up to date
    with (evaluation / "src/cultureqa/mocqa/evaluate.py").open("a", encoding="utf-8") as f:
        f.write("# an edit in ID-MoCQA evaluation code\n")
    changed = set(json.loads(_dvc(evaluation, "status", "--json", *targets)))
    assert any(s.startswith("mocqa_evaluate@") for s in changed), changed
    assert not any(s.startswith("twohop_build@") for s in changed), changed


def _copy(tmp_path: Path, names: Iterable[str]) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in names:
        src, dst = ROOT / name, tmp_path / name
        if src.is_dir():
            shutil.copytree(src, dst, ignore=ignore)
        elif src.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)


def test_the_generator_leaves_dvc_yaml_as_it_is_and_repairs_planted_errors(tmp_path: Path) -> None:
    assert dvc_deps.main(["check", "--root", str(ROOT)]) == 0
    text, changes = dvc_deps.rewrite(ROOT)
    assert changes == [] and text == (ROOT / "dvc.yaml").read_text(encoding="utf-8")
    _copy(tmp_path, ["dvc.yaml", "src", "stages"])
    original = (tmp_path / "dvc.yaml").read_text(encoding="utf-8")
    # plant: cases_ingest loses llm/, which it imports, and gains analysis/, which it does not
    head, sep, rest = original.partition("  cases_ingest:\n")
    block, nxt, tail = rest.partition("\n  cases_weird:\n")
    assert "      - src/cultureqa/llm\n" in block
    block = block.replace("      - src/cultureqa/llm\n", "").replace(
        "      - stages/cases_ingest.py\n",
        "      - stages/cases_ingest.py\n      - src/cultureqa/analysis\n",
    )
    planted = head + sep + block + nxt + tail
    assert planted != original
    (tmp_path / "dvc.yaml").write_text(planted, encoding="utf-8")
    assert dvc_deps.main(["check", "--root", str(tmp_path)]) == 1
    assert dvc_deps.rewrite(tmp_path)[1] == [
        "cases_ingest: - src/cultureqa/llm, + src/cultureqa/analysis"
    ]
    assert dvc_deps.main(["write", "--root", str(tmp_path)]) == 0
    assert (tmp_path / "dvc.yaml").read_text(encoding="utf-8") == original


def test_prune_lock_drops_only_stages_dvc_yaml_no_longer_defines(tmp_path: Path) -> None:
    from ruamel.yaml import YAML

    _copy(tmp_path, ["dvc.yaml", "params.yaml", ".dvcignore"])
    _dvc(tmp_path, "init", "--no-scm", "-q")
    live = {"params_check": {"cmd": "python3 stages/params_check.py"}}
    stale = {"mocqa_hop": {"cmd": "python3 stages/mocqa_hop.py"}}
    (tmp_path / "dvc.lock").write_text(
        "schema: '2.0'\nstages:\n  params_check:\n    cmd: python3 stages/params_check.py\n"
        "  mocqa_hop:\n    cmd: python3 stages/mocqa_hop.py\n",
        encoding="utf-8",
    )
    assert dvc_deps.prune_lock(tmp_path) == ["mocqa_hop"]
    kept = YAML(typ="safe").load((tmp_path / "dvc.lock").read_text(encoding="utf-8"))
    assert kept == {"schema": "2.0", "stages": live} and stale["mocqa_hop"] not in kept.values()
    assert dvc_deps.prune_lock(tmp_path) == []


def test_params_declarations_keep_long_values_out_of_the_lock(tmp_path: Path) -> None:
    """params_check hashes params.yaml as a file; sets and benchmarks reach stages as digests."""
    assert dvc_deps.params_problems(ROOT) == []
    _copy(tmp_path, ["dvc.yaml", "src", "stages"])
    original = (tmp_path / "dvc.yaml").read_text(encoding="utf-8")
    digest = "        - region_sets.${item}.digest"
    assert original.count(digest) == 3
    bench, seed = "      - benchmarks.indoculture.digest", "        - twohop.seed\n"
    plants = {
        # the set's values declared again: 8-9 KB of dvc.lock per stage
        "values": (original.replace(digest, "        - region_sets.${item}", 1),
                   "twohop_build: declares region_sets.${item}, a region set's values"),
        # a stage that reads a set but would not rerun when it changes
        "missing": (original.replace(digest + " ", "        - twohop.seed # ", 1),
                    "twohop_build: reads a region set but declares no region_sets.<set>.digest"),
        # a benchmark's values declared again: 1.4 KB of dvc.lock per stage
        "benchmark": (original.replace(bench, bench.removesuffix(".digest"), 1),
                      "describe_indoculture: declares benchmarks.indoculture, a benchmark's"),
        "benchmarks": (original.replace(seed, seed + "        - benchmarks\n", 1),
                       "twohop_build: declares benchmarks, a benchmark's values"),
        "params_check": (
            original.replace("    deps:\n      - conf\n      - params.yaml\n",
                             "    params:\n      - params.yaml:\n    deps:\n      - conf\n", 1),
            "params_check: params.yaml must be a file dep, not params (['params.yaml'])"),
    }  # fmt: skip
    for planted, problem in plants.values():
        assert planted != original
        (tmp_path / "dvc.yaml").write_text(planted, encoding="utf-8")
        assert any(p.startswith(problem) for p in dvc_deps.params_problems(tmp_path)), problem
        assert dvc_deps.main(["check", "--root", str(tmp_path)]) == 1


def test_an_override_of_one_region_set_reruns_exactly_its_stages(
    committed: Path, tmp_path: Path
) -> None:
    """The set reaches its stages as a digest, yet an override still reruns them, and only them."""
    from omegaconf import OmegaConf

    from cultureqa.compose import compose_params

    ws = _copy_of(committed, tmp_path / "ws")
    targets = OVERRIDE_TARGETS
    assert json.loads(_dvc(ws, "status", "--json", *targets)) == {}
    composed = compose_params(ROOT / "conf", ["region_sets.un_members.noun.en=nation"])
    (ws / "params.yaml").write_text(OmegaConf.to_yaml(composed), encoding="utf-8")
    assert set(json.loads(_dvc(ws, "status", "--json", *targets))) == {
        "params_check", "twohop_build@un_members", "twohop_validate@un_members",
        "twohop_hop@un_members",
    }  # fmt: skip


def test_an_override_of_one_benchmark_reruns_exactly_the_stages_that_read_it(
    committed: Path, tmp_path: Path
) -> None:
    """The benchmark reaches its stages as a digest (and its set's), yet an override reruns them."""
    from omegaconf import OmegaConf

    from cultureqa.compose import compose_params

    ws = _copy_of(committed, tmp_path / "ws")
    targets = OVERRIDE_TARGETS
    assert json.loads(_dvc(ws, "status", "--json", *targets)) == {}
    composed = compose_params(ROOT / "conf", ["benchmarks.indoculture.description=edited"])
    (ws / "params.yaml").write_text(OmegaConf.to_yaml(composed), encoding="utf-8")
    roster = [str(m) for m in composed["evaluate"]["roster"]]
    assert set(json.loads(_dvc(ws, "status", "--json", *targets))) == {
        "params_check", "validate@indoculture", "analyze@indoculture", "describe_indoculture",
        *(f"evaluate@indoculture-{model}" for model in roster),
        # the set whose source is the benchmark (source.benchmark_digest), and only that set
        "twohop_build@indonesia", "twohop_validate@indonesia", "twohop_hop@indonesia",
    }  # fmt: skip
