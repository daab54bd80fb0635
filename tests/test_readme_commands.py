"""Every command quoted in README.md and docs/*.md runs or composes.

The commands are read from the pages themselves, so a renamed config group, option, key, make
target, CLI subcommand or script breaks this test rather than a reader's first run:

- each `dvc exp run -S …` (and each inline `-S …`) composes into params that pass the key check
  the stages apply; sweeps (``a,b``) are expanded the way Hydra's basic sweeper does;
- each `make <target>` names a target of the Makefile; each `dvc …` parses with DVC's own parser
  (subcommand and flags), each `mlflow …` with MLflow's, each `cultureqa …` (or
  ``python -m cultureqa.cli …``) with the CLI's; each ``stages/…py`` and ``bench/…py`` exists,
  and the `--help` of a stage script runs.

**Convention for commands that cannot run offline.** A line of a code block that needs an API
key, a server or a cloud bucket ends with a shell comment that starts ``# needs:`` and says what
(``# needs: OPENAI_API_KEY``). Such a line is checked up to its composition and never run. For
`dvc exp run` lines the marker is checked both ways: a composition that reaches a model over the
network (a node with ``backend: litellm``) must carry it, and a line that carries it must need it.
A line shown failing on purpose ends with ``# fails: <why>``: its overrides must really be
refused, with the "did you mean" line. Placeholders in angle brackets (``=<name>``) are prose and
are not composed. The unmarked, offline ones run for real in ``tests/evaluation/test_cot.py``
(prompt=cot on every benchmark on the baselines) and, as whole DVC experiments, in
``tests/test_sweep.py`` and ``test_documented_sweep_runs_as_dvc_experiments`` (slow).
"""

from __future__ import annotations

import itertools
import logging
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cultureqa.cli import _parser
from cultureqa.compose import compose_params
from cultureqa.core.params_schema import check_keys
from cultureqa.testing.composed import composed, schema

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
OVERRIDE = re.compile(r"-S\s+(?:'([^']*)'|(\S+))")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
NEEDS = "# needs:"
FAILS = "# fails:"


@dataclass(frozen=True)
class Command:
    """One quoted command: where it is, its text without comment, and whether it is marked."""

    page: str
    text: str
    needs: str | None  # what a `# needs:` comment says it needs; None: offline
    fenced: bool
    fails: bool = False  # shown failing on purpose (`# fails: why`): the check must refuse it

    @property
    def label(self) -> str:
        return f"{self.page}: {self.text}"[:90]


def _split(line: str) -> tuple[str, str | None, bool]:
    """``cmd  # needs: KEY`` → (``cmd``, ``KEY``, False); ``# fails: …`` → (``cmd``, None, True)."""
    quote = ""
    for i, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            comment = line[i:]
            needs = comment.split(NEEDS, 1)[1].strip() if comment.startswith(NEEDS) else None
            return line[:i].strip(), needs, comment.startswith(FAILS)
    return line.strip(), None, False


def _commands_of(page: Path, root: Path = ROOT) -> list[Command]:
    text = page.read_text(encoding="utf-8")
    name = page.relative_to(root).as_posix()
    found: list[Command] = []
    for lang, body in FENCE.findall(text):
        if lang not in ("bash", "sh"):  # ```text / ```yaml blocks hold output and config
            continue
        for raw in body.splitlines():
            if not raw.strip() or raw.lstrip().startswith("#"):
                continue
            command, needs, fails = _split(raw)
            for part in command.split(" && "):
                found.append(Command(name, part.strip(), needs, fenced=True, fails=fails))
    prose = FENCE.sub("", text)
    for span in SPAN.findall(prose):
        found.extend(Command(name, part.strip(), None, fenced=False) for part in span.split(" && "))
    return found


COMMANDS = [c for page in PAGES for c in _commands_of(page)]


def _overrides(command: Command) -> list[str]:
    return [a or b for a, b in OVERRIDE.findall(command.text)]


SWEEPS = [
    c
    for c in COMMANDS
    if ("dvc exp run" in c.text or c.text.startswith(("cultureqa cost", "-S ")))
    and "-S" in c.text
    and "…" not in c.text  # prose about the syntax, not a command
    and "<" not in c.text  # a placeholder (`-S twohop.region_set=<name>`)
]


def _split_sweep(value: str) -> list[str]:
    """``a,b`` → [a, b], keeping commas inside brackets (``[zero_shot],[cot]``)."""
    parts, depth, current = [], 0, ""
    for char in value:
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current]


def _expand(overrides: list[str]) -> list[list[str]]:
    options = []
    for override in overrides:
        key, _, value = override.partition("=")
        options.append([f"{key}={v}" for v in _split_sweep(value)])
    return [list(combo) for combo in itertools.product(*options)]


def _compose(combo: tuple[str, ...]) -> dict[str, Any]:
    return composed(ROOT / "conf", combo)


def _online(node: Any) -> bool:
    """Whether a composition calls a model over the network (any ``backend: litellm`` node)."""
    if isinstance(node, dict):
        if node.get("backend") == "litellm":
            return True
        return any(_online(v) for v in node.values())
    if isinstance(node, list):
        return any(_online(v) for v in node)
    return False


def test_the_pages_show_the_documented_commands() -> None:
    flat = [" ".join(_overrides(c)) for c in SWEEPS]
    assert "model=random,first_option prompt=zero_shot,cot" in flat
    assert "mocqa_eval.prompts=[zero_shot],[cot]" in flat
    assert len(SWEEPS) >= 8
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = FENCE.search(readme)
    assert first_block is not None
    lines = [line.split("#")[0].strip() for line in first_block.group(2).splitlines()]
    assert lines[:2] == ["make repro", "make test"], lines


def test_the_readme_stays_short() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) < 200


@pytest.mark.parametrize("command", SWEEPS, ids=lambda c: c.label)
def test_every_documented_override_composes_and_passes_the_key_check(command: Command) -> None:
    conf_schema = schema(ROOT / "conf")
    if command.fails:  # an error shown on purpose must really be one
        with pytest.raises(Exception, match="did you mean"):
            for combo in _expand(_overrides(command)):
                _compose(tuple(combo))
        return
    for combo in _expand(_overrides(command)):
        assert check_keys(_compose(tuple(combo)), conf_schema) == [], combo


RUNS = [c for c in SWEEPS if c.fenced and c.text.startswith("dvc exp run") and not c.fails]


@pytest.mark.parametrize("command", RUNS, ids=lambda c: c.label)
def test_a_dvc_exp_run_line_says_needs_exactly_when_it_calls_a_model_over_the_network(
    command: Command,
) -> None:
    online = any(_online(_compose(tuple(combo))) for combo in _expand(_overrides(command)))
    if online:
        assert command.needs, f"{command.label}: add '{NEEDS} <key or server>' to the line"
    else:
        assert command.needs is None, f"{command.label}: runs offline, drop '{NEEDS}'"


def _make_targets() -> set[str]:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([A-Za-z][\w-]*)\s*:(?!=)", makefile, re.M))


MAKES = sorted({c.text.split()[1] for c in COMMANDS if re.match(r"make [a-z]", c.text)})


@pytest.mark.parametrize("target", MAKES)
def test_every_documented_make_target_exists(target: str) -> None:
    assert target in _make_targets()


CLI = [
    c
    for c in COMMANDS
    if re.match(r"(cultureqa|python -m cultureqa\.cli) [a-z]", c.text) and "…" not in c.text
]


@pytest.mark.parametrize("command", CLI, ids=lambda c: c.label)
def test_every_documented_cultureqa_command_parses(command: Command) -> None:
    words = shlex.split(command.text)
    argv = words[3:] if words[0] == "python" else words[1:]
    if not command.fenced:  # a name in prose (`cultureqa benchmark check`): the subcommand exists
        argv = [*[w for w in argv if not w.startswith("-")][:2], "--help"]
    try:
        _parser().parse_args(argv)
    except SystemExit as exc:  # argparse's way of refusing (or of printing --help)
        assert exc.code == 0, command.label


DVC = [c for c in COMMANDS if c.text.startswith("dvc ") and "…" not in c.text]


def _dvc_accepts(argv: list[str]) -> bool:
    from dvc.cli import DvcParserError
    from dvc.cli.parser import get_main_parser

    # A refused argv is logged through DVC's handlers, which another test in this worker may
    # have bound to a capture stream pytest has since closed: the verdict is the exception.
    logging.disable(logging.CRITICAL)
    try:
        get_main_parser().parse_args(argv)
    except SystemExit as exc:
        return exc.code == 0
    except DvcParserError:
        return False
    finally:
        logging.disable(logging.NOTSET)
    return True


@pytest.mark.parametrize("command", DVC, ids=lambda c: c.label)
def test_every_documented_dvc_command_parses(command: Command) -> None:
    """DVC's own parser takes the subcommand and every flag (placeholders such as EXP_A pass)."""
    argv = shlex.split(command.text)[1:]
    if not command.fenced and not _dvc_accepts(argv):
        # a name in prose (`dvc exp apply`, `dvc exp run -S`): the subcommand exists
        argv = [*[w for w in argv if not w.startswith("-")][:2], "--help"]
    assert _dvc_accepts(argv), f"{command.label}: DVC refuses it"


MLFLOW = [
    c
    for c in COMMANDS
    if re.match(r"(\w+=\S+ )*mlflow [a-z]", c.text) and "…" not in c.text and "--" in c.text
]


def _mlflow_refuses(text: str) -> str | None:
    """Click's error for an ``mlflow <command> …`` line (env assignments first are skipped)."""
    import click
    from mlflow.cli import cli

    argv = [w for w in shlex.split(text) if not re.match(r"\w+=", w)][1:]
    command = cli.get_command(click.Context(cli), argv[0])
    if command is None:
        return f"no mlflow command {argv[0]!r}"
    try:
        command.make_context(argv[0], argv[1:])
    except click.ClickException as exc:
        return exc.format_message()
    return None


@pytest.mark.parametrize("command", MLFLOW, ids=lambda c: c.label)
def test_every_documented_mlflow_command_parses(command: Command) -> None:
    """MLflow's own (click) parser takes the command and every option; nothing is started."""
    assert _mlflow_refuses(command.text) is None, command.label


SCRIPTS = sorted(
    {m for c in COMMANDS for m in re.findall(r"\b((?:stages|bench)/\w+\.py)\b", c.text)}
)


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_documented_script_exists(script: str) -> None:
    assert (ROOT / script).is_file()


def test_the_checks_catch_planted_mistakes(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```bash\ndvc exp run -S model=gpt_4o\ndvc exp run -S model=random  # needs: a key\n"
        "make nonesuch && cultureqa nonesuch\n```\nand `dvc exp run -S 'prompt=cot'` inline\n",
        encoding="utf-8",
    )
    online, offline, make, cli, inline = _commands_of(page, tmp_path)
    assert (online.needs, offline.needs, inline.fenced) == (None, "a key", False)
    assert _online(compose_params(ROOT / "conf", _overrides(online)))
    assert not _online(compose_params(ROOT / "conf", _overrides(offline)))
    assert make.text.split()[1] not in _make_targets()
    with pytest.raises(SystemExit) as refused:
        _parser().parse_args(shlex.split(cli.text)[1:])
    assert refused.value.code != 0
    assert _overrides(inline) == ["prompt=cot"]
    assert not _dvc_accepts(["exp", "show", "--only-changd"])
    assert not _dvc_accepts(["exp", "shw", "--help"])
    assert _split("dvc exp run -S prompt=cott  # fails: a typo") == (
        "dvc exp run -S prompt=cott",
        None,
        True,
    )
    assert _mlflow_refuses("mlflow server --backend-store-uri sqlite:///x --nope 1")


def test_mocqa_human_help_runs() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "stages" / "mocqa_human.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and "usage:" in done.stdout
