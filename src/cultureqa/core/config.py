"""Reading the composed parameters (``params.yaml``) that every stage runs on."""

from __future__ import annotations

import atexit
import copy
import gc
import hashlib
import logging
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import yaml

from cultureqa.core.errors import ConfigTypeError as ConfigTypeError  # raised here, defined below
from cultureqa.core.params_tree import Params as Params
from cultureqa.core.params_tree import lookup as lookup

if TYPE_CHECKING:  # OmegaConf costs a stage 0.25 CPU s to import: only callers that need it pay
    from omegaconf import DictConfig


class ParamsError(ValueError):
    """params.yaml has keys conf/ cannot compose (a typo) or lacks keys it defines (stale)."""


STALE_HINT = "params.yaml may predate conf/: run `make params` (or `dvc exp run`) to recompose it"


def typed(cfg: Params, key: str, kind: type[Any]) -> Any:
    """``cfg[key]`` converted to ``kind``, or a ConfigTypeError naming the key and value."""
    value = lookup(cfg, key)
    try:
        return kind(value)
    except (TypeError, ValueError) as exc:
        raise ConfigTypeError(
            f"params.yaml: '{key}' must be {kind.__name__}, got {value!r}"
        ) from exc


OFFLINE_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "DVC_NO_ANALYTICS": "1",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "HF_HUB_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


_YAML_FLOAT = re.compile(
    r"""^(?:[-+]?[0-9]+(?:_[0-9]+)*\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?[0-9]+(?:_[0-9]+)*(?:[eE][-+]?[0-9]+)
    |\.[0-9]+(?:_[0-9]+)*(?:[eE][-+][0-9]+)?
    |[-+]?[0-9]+(?:_[0-9]+)*(?::[0-5]?[0-9])+\.[0-9_]*
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)
"""OmegaConf's float rule (``1e-3`` is a float, as in YAML 1.2), so both readers agree."""


class ParamsLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """libyaml's parser with OmegaConf's reading of scalars.

    Floats as above, no timestamps, and a duplicate key refused, as OmegaConf's loader does.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """The mapping, unless a key repeats (libyaml would keep the last silently)."""
        seen: set[str] = set()
        for key_node, _ in node.value:
            if key_node.tag == yaml.resolver.BaseResolver.DEFAULT_SCALAR_TAG:
                if key_node.value in seen:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"found duplicate key {key_node.value}",
                        key_node.start_mark,
                    )
                seen.add(key_node.value)
        return cast(dict[Any, Any], super().construct_mapping(node, deep=deep))


ParamsLoader.add_implicit_resolver("tag:yaml.org,2002:float", _YAML_FLOAT, list("-+0123456789."))
ParamsLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in rules if tag != "tag:yaml.org,2002:timestamp"]
    for first, rules in ParamsLoader.yaml_implicit_resolvers.items()
}


def read_params(path: str | Path = "params.yaml") -> dict[str, Any]:
    """params.yaml as a plain tree, keys and values checked; a missing file names its command.

    The composed file is plain YAML (composing resolves every ``${...}``), so libyaml reads it in
    milliseconds where ``OmegaConf.load`` takes 0.1 CPU s after a 0.25 s import; a hand-written
    file that still holds interpolations is resolved through OmegaConf, as before.
    """
    return _read(Path(path))[1]


def load_params(path: str | Path = "params.yaml") -> DictConfig:
    """params.yaml as an OmegaConf node, for callers that use its API; checked as in read_params."""
    from omegaconf import DictConfig, OmegaConf

    cfg = OmegaConf.create(_read(Path(path))[0])
    assert isinstance(cfg, DictConfig)
    return cfg


def _read(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The file's tree as written and with its interpolations resolved, both checked."""
    if not path.exists():
        raise FileNotFoundError(
            f"{path} not found: run `dvc exp run` or `make params` to compose it"
        )
    text = path.read_text(encoding="utf-8")
    raw = yaml.load(text, Loader=ParamsLoader)
    if not isinstance(raw, dict):
        raise TypeError(f"{path}: expected a mapping at the top level")
    resolved: dict[str, Any] | None = raw
    if "${" in text:
        from omegaconf import OmegaConf

        try:
            resolved = cast(
                dict[str, Any], OmegaConf.to_container(OmegaConf.create(raw), resolve=True)
            )
        except Exception:  # an unresolvable ${...}: the stage that reads it names it
            resolved = None
    check_params_keys(raw, path, resolved)
    return raw, raw if resolved is None else resolved


def conf_dir_for(params_path: Path) -> Path | None:
    """The conf/ that composes ``params_path``: beside it, else at the project root."""
    from cultureqa.core.paths import project_root

    for candidate in (params_path.parent / "conf", project_root() / "conf"):
        if (candidate / "config.yaml").is_file():
            return candidate
    return None


def check_params_keys(raw: dict[str, Any], path: Path, resolved: dict[str, Any] | None) -> None:
    """Reject keys conf/ cannot compose, naming the nearest valid key, and stale params files.

    Stages read many keys with defaults, so an unknown key would otherwise be ignored silently.
    """
    conf_dir = conf_dir_for(path)
    if conf_dir is None:
        logging.getLogger(__name__).warning("%s: keys not checked (no conf/ beside it)", path)
        return
    passed = _passed_marker(path, conf_dir)
    if passed.exists():
        return
    from cultureqa.core.params_schema import check_keys, conf_schema

    schema = conf_schema(conf_dir)
    problems = check_keys(raw, schema)
    if not problems:
        if resolved is not None:  # unresolvable: the stage that reads the key names it
            check_params_values(resolved, schema, path)
        _note_passed(passed)
        return
    shown = "; ".join(p.describe() for p in problems[:5])
    more = f" (+{len(problems) - 5} more)" if len(problems) > 5 else ""
    fix = (
        STALE_HINT
        if all(p.kind == "missing" for p in problems)
        else f"fix the key in {conf_dir}/ (or the -S override) and run `make params`"
    )
    raise ParamsError(f"{path}: {shown}{more}; {fix}")


CHECK_CODE = ("config.py", "params_schema.py", "params_tree.py")
"""The checker's own modules: their bytes enter the key of a passed check, as the files do."""


def _passed_marker(path: Path, conf_dir: Path) -> Path:
    """Where a passed check of this params file against this conf/ is noted (user cache).

    The key hashes the params file's bytes, every ``conf/**/*.yaml`` (path and bytes) and the
    checker's code, so an edit to any of them checks again; a failed check is never noted.
    Hashing them costs 1–2 ms where building the schema costs 0.07 CPU s of every stage's
    start (``bench/first_request.py``); ``make params`` writes a new file, checked once.
    """
    from cultureqa.core.paths import user_cache_dir

    digest = hashlib.sha256(path.read_bytes())
    for file in sorted(conf_dir.rglob("*.yaml")):
        digest.update(b"\0" + file.relative_to(conf_dir).as_posix().encode() + b"\0")
        digest.update(file.read_bytes())
    package = Path(__file__).parent
    for name in CHECK_CODE:
        digest.update(b"\0" + (package / name).read_bytes())
    return user_cache_dir() / "params-checked" / digest.hexdigest()


def _note_passed(marker: Path) -> None:
    """Note a passed check; a cache that cannot be written only means checking next time."""
    from cultureqa.core.io import write_text

    try:
        write_text(marker, "keys and values checked against conf/\n")
    except OSError as exc:
        logging.getLogger(__name__).info("%s: passed check not noted (%s)", marker, exc)


def check_params_values(resolved: dict[str, Any], schema: Any, path: Path) -> None:
    """Reject out-of-range numbers and non-boolean flags, naming key, value and range."""
    from cultureqa.core.params_schema import check_values

    problems = check_values(resolved, schema)
    if problems:
        more = f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
        raise ConfigTypeError(f"{path}: {'; '.join(problems[:3])}{more}")


def select(cfg: Params, key: str) -> dict[str, Any]:
    """A sub-tree as a plain dict of its own (a copy); a missing key names itself."""
    node = lookup(cfg, key)
    if node is None:
        raise KeyError(f"params.yaml has no '{key}'; {STALE_HINT}")
    if isinstance(node, dict):
        return copy.deepcopy(node)
    from omegaconf import OmegaConf

    return cast(dict[str, Any], OmegaConf.to_container(node, resolve=True))


_KNOWN_ERRORS = (
    ("cultureqa.core.io", "SourceError"),
    ("cultureqa.benchmarks.spec", "SpecError"),
    ("cultureqa.evaluation.prompts", "TemplateError"),
    ("cultureqa.knowledge.provinces", "KnowledgeBaseError"),
    ("cultureqa.llm.base", "ModelConfigError"),
    ("cultureqa.core.runlock", "OutputBusy"),
    ("cultureqa.core.spend", "ApiStopped"),
)
"""Errors a stage reports as one line (exit 2), by the module that defines each.

Looked up when an error arrives, among the modules the stage has imported: a module never
imported raised nothing, and importing one only for its exception class cost every stage's
start (``cultureqa.knowledge`` alone loads the gazetteer's tables: 25 ms)."""


_FREEZE_AT_EXIT: list[object] = []
"""Holds the registered hook once :func:`run_stage` has run (registered once per process)."""


def _known_errors() -> tuple[type[BaseException], ...]:
    loaded = sys.modules
    return tuple(getattr(loaded[mod], name) for mod, name in _KNOWN_ERRORS if mod in loaded)


def run_stage(main: Callable[[], int]) -> int:
    """Run a stage's main; input, config and environment errors become one line and exit code 2.

    Environment failures (corrupt state database, full disk, unwritable folder) are described by
    :func:`cultureqa.core.errors.one_line`; anything else is a bug and keeps its traceback.
    Outputs are written atomically, so a stage that stops here leaves earlier outputs intact.

    At the process's exit every object is moved out of the garbage collector's reach
    (:func:`gc.freeze`, registered with :mod:`atexit`): the interpreter's last collection over
    the stage's modules and records cost 0.2 CPU s per stage process (``bench/eval_throughput.py``,
    4,000 items) and frees nothing that outlives the process. Reference counting still frees
    what it frees, and nothing a stage writes is open by then (outputs go through a temporary
    file and a rename). A process that calls this in-process (tests) is frozen only at its exit.
    """
    from cultureqa.core.errors import OPENED, one_line
    from cultureqa.core.runlock import StageInterrupted

    OPENED.clear()  # an error line names the databases this run opened, not an earlier run's
    try:
        return main()
    except Exception as exc:
        if isinstance(exc, _known_errors()):
            print_error(str(exc))
            return 2
        if isinstance(exc, KeyError):
            print_error(str(exc.args[0] if exc.args else exc))
            return 2
        if isinstance(exc, (FileNotFoundError, ConfigTypeError, ParamsError)):
            print_error(str(exc))
            return 2
        if isinstance(exc, StageInterrupted):
            print_error(str(exc))
            return 130
        line = one_line(exc)
        if line is None:
            raise
        print_error(line)
        return 2
    finally:
        if not _FREEZE_AT_EXIT:
            _FREEZE_AT_EXIT.append(atexit.register(gc.freeze))


def print_error(message: str) -> None:
    """One ``error: …`` line on stderr, on a line of its own even while a progress bar is drawn.

    ``tqdm.write`` clears a live bar, writes the line and redraws the bar below it; with no bar
    it is a plain print.
    """
    from tqdm import tqdm

    tqdm.write(f"error: {message}", file=sys.stderr)


def setup_stage() -> None:
    """Offline-safe environment and readable logging for stage scripts.

    Our own records at INFO (``CULTUREQA_LOG_LEVEL``), other libraries' only from WARNING: their
    INFO lines (GX registering its decorators, MLflow creating tables) are not for a user and
    used to fill `make repro` with hundreds of lines. Some set INFO on their own loggers at
    import, so the handler filters rather than the loggers' levels.
    """
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")  # MLflow logs through its own handler
    root = logging.getLogger()
    if not root.handlers:  # a stage process (tests and other hosts keep their own logging)
        logging.basicConfig(
            level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
        )
        root.handlers[0].addFilter(_ours_or_warnings)
    logging.getLogger("cultureqa").setLevel(os.environ.get("CULTUREQA_LOG_LEVEL", "INFO"))


def _ours_or_warnings(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.WARNING or record.name.startswith("cultureqa")
