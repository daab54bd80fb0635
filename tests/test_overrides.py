"""A mistyped override is one line with the nearest valid names, wherever a user types one.

The last tests run real ``dvc exp run -S`` in a throwaway git repository holding this project's
``conf/``, ``.dvc/config`` and ``dvc_hydra_plugins/``: DVC loads the plugin before composing, so
the line is what DVC prints (~10 s); that a valid override still runs, and that without the plugin
DVC prints Hydra's pages, is checked by a ``slow`` test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cultureqa.cli import main
from cultureqa.compose import OverrideError, compose_params

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
RANDM = (
    "override 'model=randm': 'randm' is not an option of model (conf/model/); "
    "did you mean 'random'?"
)


@pytest.mark.parametrize(
    ("override", "line"),
    [
        ("model=randm", RANDM),
        ("modle=random", "override 'modle=random': unknown key 'modle'; did you mean 'model'?"),
        ("evaluate.max_eror_share=0.2", "override 'evaluate.max_eror_share=0.2': unknown key "
         "'evaluate.max_eror_share'; did you mean 'evaluate.max_error_share'?"),
        ("model.temprature=0.5", "override 'model.temprature=0.5': unknown key "
         "'model.temprature'; did you mean 'model.decoding.temperature'?"),
        ("benchmark@benchmarks.indoculture=indocultre", "override 'benchmark@benchmarks."
         "indoculture=indocultre': 'indocultre' is not an option of benchmark "
         "(conf/benchmark/); did you mean 'indoculture'"),
        ("model.zzqx=1", "override 'model.zzqx=1': no option in conf/ defines 'model.zzqx'"),
    ],
)  # fmt: skip
def test_compose_names_the_nearest_valid_name(override: str, line: str) -> None:
    with pytest.raises(OverrideError) as caught:
        compose_params(CONF, [override])
    message = str(caught.value)
    assert message.startswith(line) and "\n" not in message and "+" not in message


@pytest.mark.parametrize(
    ("overrides", "line"),
    [
        (["evaluate.benchmarks=[indoculturee]"], "override 'evaluate.benchmarks=[indoculturee]': "
         "'indoculturee' is not a benchmark (conf/benchmark/); did you mean 'indoculture'"),
        (["evaluate.benchmarks=[indoculture,zzqx]"], "override 'evaluate.benchmarks=[indoculture,"
         "zzqx]': 'zzqx' is not a benchmark (conf/benchmark/); composed: indoculture"),
        (["evaluate.benchmarks=[province_capitals]"], "override 'evaluate.benchmarks="
         "[province_capitals]': benchmark 'province_capitals' is not composed; also pass "
         "-S '+benchmark@benchmarks.province_capitals=province_capitals'"),
    ],
)  # fmt: skip
def test_a_benchmark_name_is_checked_before_anything_runs(overrides: list[str], line: str) -> None:
    """A valid list naming a benchmark the run does not compose fails at composition."""
    with pytest.raises(OverrideError) as caught:
        compose_params(CONF, overrides)
    assert str(caught.value).startswith(line) and "\n" not in str(caught.value)
    fixed = ["+benchmark@benchmarks.province_capitals=province_capitals",
             "evaluate.benchmarks=[indoculture,province_capitals]"]  # fmt: skip
    assert compose_params(CONF, fixed)["evaluate"]["benchmarks"] == [
        "indoculture",
        "province_capitals",
    ]


def test_other_refusals_keep_hydras_first_line() -> None:
    with pytest.raises(OverrideError) as caught:
        compose_params(CONF, ["+evaluate.progress=false"])  # the key exists: not a typo
    assert str(caught.value) == (
        "Could not append to config. An item is already at 'evaluate.progress'."
    )


def test_no_near_option_lists_the_options() -> None:
    with pytest.raises(OverrideError, match=r"'xqzw' is not an option of model \(conf/model/\); "
                       r"options: claude_3_7_sonnet, .*, …$"):  # fmt: skip
        compose_params(CONF, ["model=xqzw"])


def test_a_typo_in_conf_defaults_names_config_yaml(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``make params`` after editing conf/config.yaml: the defaults list is the culprit."""
    conf = tmp_path / "conf"
    shutil.copytree(CONF, conf)
    text = (conf / "config.yaml").read_text(encoding="utf-8")
    (conf / "config.yaml").write_text(text.replace("- prompt: zero_shot", "- prompt: zero_shoot"))
    wanted = (r"^conf/config.yaml's defaults: 'zero_shoot' is not an option of prompt "
              r"\(conf/prompt/\); did you mean 'zero_shot'\?$")  # fmt: skip
    with pytest.raises(OverrideError, match=wanted):
        compose_params(conf)
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    for verb in ("compose", "check"):  # make params, cultureqa params check
        assert main(["--root", str(tmp_path), "params", verb]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: cannot compose conf/: conf/config.yaml's defaults: ")
        assert err.count("\n") == 1


def test_cli_cost_and_compose_print_the_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--root", str(ROOT), "cost", "-S", "model=randm"]) == 2
    assert capsys.readouterr().err == f"error: cost: {RANDM}\n"
    done = subprocess.run(
        [sys.executable, "-m", "cultureqa.compose", "model=randm"], cwd=ROOT,
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (2, f"error: cannot compose conf/: {RANDM}\n")


def dvc_repo(tmp_path: Path, also: tuple[str, ...] = ()) -> Path:
    """A git repository with this project's conf/, DVC config and plugin, and one tiny stage.

    ``also``: more of the project's top-level files (the Makefile, for its targets); the
    .gitignore always comes, for the plugin's bytecode, as in a clone.
    """
    repo = tmp_path / "repo"
    repo.mkdir()
    for folder in ("conf", "dvc_hydra_plugins"):
        shutil.copytree(ROOT / folder, repo / folder)
    for name in ("params.yaml", ".gitignore", *also):
        shutil.copy(ROOT / name, repo / name)
    stage = {"stages": {"show": {"cmd": "echo ok > model.txt", "params": ["model.id"],
                                 "outs": ["model.txt"]}}}  # fmt: skip
    (repo / "dvc.yaml").write_text(yaml.safe_dump(stage))
    _run(repo, "git", "init", "-q")
    _run(repo, "dvc", "init", "-q")
    shutil.copy(ROOT / ".dvc" / "config", repo / ".dvc" / "config")
    _run(repo, "git", "add", "-A")
    _run(repo, "git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    return repo


def _run(cwd: Path, *args: str, unset: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
           "DVC_NO_ANALYTICS": "1"}  # fmt: skip
    for name in ("DVC_ROOT", *unset):
        env.pop(name, None)
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False,
                          timeout=120)  # fmt: skip


def test_dvc_exp_run_prints_one_line(tmp_path: Path) -> None:
    repo = dvc_repo(tmp_path)
    done = _run(repo, "dvc", "exp", "run", "-S", "model=randm")
    assert done.returncode != 0
    assert (done.stdout + done.stderr).strip() == f"ERROR: {RANDM}"
    typo = _run(repo, "dvc", "exp", "run", "-S", "evaluate.max_eror_share=0.2")
    assert (typo.stdout + typo.stderr).strip() == (
        "ERROR: override 'evaluate.max_eror_share=0.2': unknown key 'evaluate.max_eror_share'; "
        "did you mean 'evaluate.max_error_share'?"
    )
    name = _run(repo, "dvc", "exp", "run", "-S", "evaluate.benchmarks=[indoculturee]")
    assert name.returncode != 0
    assert (name.stdout + name.stderr).strip() == (
        "ERROR: override 'evaluate.benchmarks=[indoculturee]': 'indoculturee' is not a benchmark "
        "(conf/benchmark/); did you mean 'indoculture' or 'island_culture'?"
    )
    assert _run(repo, "git", "status", "--porcelain").stdout == ""  # params.yaml untouched


def test_dvc_exp_run_without_the_api_key_stops_before_changing_the_workspace(
    tmp_path: Path,
) -> None:
    """Planted: an API model under test with its provider's key unset."""
    repo = dvc_repo(tmp_path)
    done = _run(repo, "dvc", "exp", "run", "-S", "model=gpt_5_mini", unset=("OPENAI_API_KEY",))
    assert done.returncode != 0
    assert (done.stdout + done.stderr).strip() == (
        "ERROR: model 'gpt-5-mini': options.wire_key_env names OPENAI_API_KEY, which is not set; "
        "export OPENAI_API_KEY; nothing ran, the workspace is unchanged"
    )
    assert _run(repo, "git", "status", "--porcelain").stdout == ""
    assert not (repo / "model.txt").exists()  # no stage ran


@pytest.mark.slow  # two more DVC runs (~15 s on a loaded machine)
def test_a_valid_override_still_runs_and_without_the_plugin_dvc_prints_pages(
    tmp_path: Path,
) -> None:
    """The plugin passes a valid composition through; without it DVC shows Hydra's full text."""
    repo = dvc_repo(tmp_path)
    ran = _run(repo, "dvc", "exp", "run", "-S", "model=random")
    assert ran.returncode == 0, ran.stderr
    assert yaml.safe_load((repo / "params.yaml").read_text())["model"]["id"] == "random"
    _run(repo, "dvc", "config", "--unset", "hydra.plugins_path")
    done = _run(repo, "dvc", "exp", "run", "-S", "model=randm")
    shown = done.stdout + done.stderr
    assert "unexpected error" in shown and len(shown.splitlines()) > 20
