"""Reading the composed parameters (``params.yaml``) that every stage runs on."""

from __future__ import annotations

import copy
import logging
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import yaml

from cultureqa.errors import ConfigTypeError as ConfigTypeError  # raised here, defined below
from cultureqa.params_tree import Params as Params
from cultureqa.params_tree import lookup as lookup

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
    from cultureqa.paths import project_root

    for candidate in (params_path.parent / "conf", project_root() / "conf"):
        if (candidate / "config.yaml").is_file():
            return candidate
    return None


def check_params_keys(raw: dict[str, Any], path: Path, resolved: dict[str, Any] | None) -> None:
    """Reject keys conf/ cannot compose, naming the nearest valid key, and stale params files.

    Stages read many keys with defaults, so an unknown key would otherwise be ignored silently.
    """
    from cultureqa.params_schema import check_keys, conf_schema

    conf_dir = conf_dir_for(path)
    if conf_dir is None:
        logging.getLogger(__name__).warning("%s: keys not checked (no conf/ beside it)", path)
        return
    schema = conf_schema(conf_dir)
    problems = check_keys(raw, schema)
    if not problems:
        if resolved is not None:  # unresolvable: the stage that reads the key names it
            check_params_values(resolved, schema, path)
        return
    shown = "; ".join(p.describe() for p in problems[:5])
    more = f" (+{len(problems) - 5} more)" if len(problems) > 5 else ""
    fix = (
        STALE_HINT
        if all(p.kind == "missing" for p in problems)
        else f"fix the key in {conf_dir}/ (or the -S override) and run `make params`"
    )
    raise ParamsError(f"{path}: {shown}{more}; {fix}")


def check_params_values(resolved: dict[str, Any], schema: Any, path: Path) -> None:
    """Reject out-of-range numbers and non-boolean flags, naming key, value and range."""
    from cultureqa.params_schema import check_values

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


def run_stage(main: Callable[[], int]) -> int:
    """Run a stage's main; input, config and environment errors become one line and exit code 2.

    Environment failures (corrupt state database, full disk, unwritable folder) are described by
    :func:`cultureqa.errors.one_line`; anything else is a bug and keeps its traceback. Outputs are
    written atomically, so a stage that stops here leaves earlier outputs intact.
    """
    from cultureqa.benchmarks.spec import SpecError
    from cultureqa.errors import OPENED, one_line
    from cultureqa.evaluation.prompts import TemplateError
    from cultureqa.io import SourceError
    from cultureqa.knowledge.provinces import KnowledgeBaseError
    from cultureqa.llm.base import ModelConfigError
    from cultureqa.runlock import OutputBusy, StageInterrupted
    from cultureqa.spend import ApiStopped

    known = (
        SourceError,
        SpecError,
        TemplateError,
        KnowledgeBaseError,
        ModelConfigError,
        OutputBusy,
        ApiStopped,
    )
    OPENED.clear()  # an error line names the databases this run opened, not an earlier run's
    try:
        return main()
    except known as exc:
        print_error(str(exc))
        return 2
    except KeyError as exc:
        print_error(str(exc.args[0] if exc.args else exc))
        return 2
    except (FileNotFoundError, ConfigTypeError, ParamsError) as exc:
        print_error(str(exc))
        return 2
    except StageInterrupted as exc:
        print_error(str(exc))
        return 130
    except Exception as exc:
        line = one_line(exc)
        if line is None:
            raise
        print_error(line)
        return 2


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
