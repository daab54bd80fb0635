"""Compose ``conf/`` into the params DVC would write, the way ``dvc exp run`` does it.

DVC calls Hydra's compose API, resolves interpolations and dumps YAML; doing the same here lets
``make params`` refresh params.yaml and lets a test prove the committed file is current.

A composition Hydra refuses is one line with the nearest valid names (:func:`explain`). Hydra's
own complaints run to 10-30 lines (every option of the group, the config search path) and advise
``+key=`` for what is almost always a typo. Every place a user types an override composes through
here (``cultureqa cost -S``, ``python -m cultureqa.compose``, ``make params`` after editing
``conf/``) or, under ``dvc exp run -S``, through the Hydra plugin DVC loads before composing
(``dvc_hydra_plugins/``, :func:`install_for_dvc`). The nearest names come from Hydra itself (the
options a ``MissingConfigException`` lists) and from the key schema ``cultureqa params check``
uses, both matched with difflib.

A composition Hydra accepts can still name a benchmark that is not in it
(``-S 'evaluate.benchmarks=[indoculturee]'`` is a valid list): :func:`check_benchmarks` refuses it
in the same one line, before DVC writes params.yaml or runs a stage. Under ``dvc exp run`` an API
model under test whose key is not in the environment is refused there too
(:func:`check_model_key`), so the failure leaves ``git status`` as it was.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.errors import ConfigCompositionException, HydraException, MissingConfigException
from omegaconf import OmegaConf

from cultureqa.core.params_digest import register as register_digest

register_digest()  # conf/region_set/*.yaml, conf/benchmark/*.yaml: ``digest: ${cultureqa_digest:}``

SHOWN_OPTIONS = 8
"""Options listed when none is near the mistyped one."""


class OverrideError(ConfigCompositionException):
    """A composition Hydra refused, with the one line :func:`explain` wrote as its message."""


def explain(exc: BaseException, overrides: Sequence[str], conf_dir: Path) -> str:
    """What is wrong, in one line, with the nearest valid names; Hydra's first line otherwise."""
    if isinstance(exc, MissingConfigException) and exc.missing_cfg_file and exc.options:
        return _missing_option(exc.missing_cfg_file, list(exc.options), overrides, conf_dir)
    for override in _parsed(overrides):
        line = _unknown_key(override, conf_dir)
        if line is not None:
            return line
    return first_line(exc)


def check_benchmarks(params: Any, overrides: Sequence[str], conf_dir: Path) -> None:
    """Every name in ``evaluate.benchmarks`` is a composed ``benchmarks.<name>``, or one line.

    Without this, a typo passes composition and the run fails on a missing file a stage later
    (after DVC has rewritten params.yaml). The nearest names come from the composed benchmarks
    and ``conf/benchmark/``; a config that exists but is not composed gets the override that adds
    it.

    Raises:
        OverrideError: a name is not composed; the message names it and the nearest names.
    """
    listed = _at_path(params, "evaluate.benchmarks") or []
    composed = sorted(str(k) for k in (_at_path(params, "benchmarks") or {}))
    typed = next((o for o in overrides if o.split("=", 1)[0].lstrip("+~") == "evaluate.benchmarks"),
                 None)  # fmt: skip
    where = f"override '{typed}'" if typed else "evaluate.benchmarks"
    configs = sorted(p.stem for p in (conf_dir / "benchmark").glob("*.yaml"))
    for name in (str(n) for n in listed):
        if name in composed:
            continue
        if name in configs:
            raise OverrideError(
                f"{where}: benchmark '{name}' is not composed; also pass "
                f"-S '+benchmark@benchmarks.{name}={name}' (or add it to "
                f"{conf_dir.name}/config.yaml's defaults)"
            )
        close = difflib.get_close_matches(name, sorted({*composed, *configs}), n=3, cutoff=0.5)
        hint = (f"did you mean {' or '.join(repr(c) for c in close)}?" if close
                else f"composed: {', '.join(composed) or 'none'}")  # fmt: skip
        raise OverrideError(
            f"{where}: '{name}' is not a benchmark ({conf_dir.name}/benchmark/); {hint}"
        )


def _at_path(params: Any, dotted: str) -> Any:
    node = params
    for part in dotted.split("."):
        if node is None or part not in node:
            return None
        node = node[part]
    return node


def check_model_key(params: Any) -> None:
    """The model under test, when it is an API model, finds its key in the environment.

    Without this, ``dvc exp run -S model=gpt_5_mini`` with no ``OPENAI_API_KEY`` rewrites
    params.yaml, runs every stage before the evaluation and fails there, leaving `` M params.yaml``
    and `` M dvc.lock``. The client's own check runs (``api_key_env``, else the variables litellm
    names for the provider; a self-hosted server without ``api_key_env`` is keyless), the one the
    evaluation would run before its first request. Only under ``dvc exp run``: ``cultureqa cost``
    and ``make params`` need no key.

    Raises:
        OverrideError: the key is missing; the message names the variable to export.
    """
    node = _at_path(params, "model")
    if node is None or str(node.get("backend")) != "litellm":
        return
    from cultureqa.llm.door import check_credentials
    from cultureqa.llm.registry import ModelConfigError

    config = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
    try:
        check_credentials(dict(config))  # type: ignore[arg-type]
    except ModelConfigError as exc:
        raise OverrideError(f"{first_line(exc)}; nothing ran, the workspace is unchanged") from exc


def first_line(exc: BaseException) -> str:
    """The first non-blank line of an exception (its class name when it has no message)."""
    return next((line.strip() for line in str(exc).splitlines() if line.strip()),
                type(exc).__name__)  # fmt: skip


def _missing_option(
    missing: str, options: list[str], overrides: Sequence[str], conf_dir: Path
) -> str:
    group, _, name = missing.rpartition("/")
    typed = next((o for o in overrides if _override_group(o) == group), None)
    where = f"override '{typed}'" if typed else f"{conf_dir.name}/config.yaml's defaults"
    close = difflib.get_close_matches(name, options, n=3, cutoff=0.5)
    if close:
        hint = f"did you mean {' or '.join(repr(c) for c in close)}?"
    else:
        more = ", …" if len(options) > SHOWN_OPTIONS else ""
        hint = f"options: {', '.join(options[:SHOWN_OPTIONS])}{more}"
    return f"{where}: '{name}' is not an option of {group} ({conf_dir.name}/{group}/); {hint}"


def _override_group(text: str) -> str | None:
    key = text.split("=", 1)[0].lstrip("+~")
    return key.split("@", 1)[0] if "=" in text else None


def _parsed(overrides: Sequence[str]) -> list[Any]:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        return list(OverridesParser.create().parse_overrides(list(overrides)))
    except HydraException:
        return []  # a grammar error: Hydra's own first line names it


def _unknown_key(override: Any, conf_dir: Path) -> str | None:
    """``model.temprature=0.5`` or ``modle=random``: a key no option of conf/ defines."""
    if override.is_add() or override.package is not None:
        return None
    from cultureqa.core.params_schema import check_keys, conf_schema

    parts = str(override.key_or_group).split(".")
    nested: dict[str, Any] = {}
    for part in reversed(parts):
        nested = {part: nested or None}
    schema = conf_schema(conf_dir)
    unknown = [p for p in check_keys(nested, schema) if p.kind == "unknown"]
    if not unknown:
        return None
    problem = unknown[0]
    typed = f"override '{override.input_line}'"
    close = [problem.nearest] if problem.nearest else _deeper(schema, problem.path)
    if not close:
        return f"{typed}: no option in {conf_dir.name}/ defines '{problem.path}'"
    hint = " or ".join(repr(c) for c in close)
    return f"{typed}: unknown key '{problem.path}'; did you mean {hint}?"


def _deeper(schema: Any, path: str) -> list[str]:
    """Keys below the known part of ``path`` whose last name is near its last name.

    ``model.temprature`` finds ``model.decoding.temperature``: the user skipped a level.
    """
    *known, wrong = path.split(".")
    from cultureqa.core.params_schema import WILDCARD

    node = schema
    for part in known:
        node = node.children.get(part) or node.children.get(WILDCARD)
        if node is None:
            return []
    below = dict(_paths(node, ".".join(known)))
    names = {p.rsplit(".", 1)[-1] for p in below}
    close = difflib.get_close_matches(wrong, sorted(names), n=2, cutoff=0.75)
    return sorted(p for p in below if p.rsplit(".", 1)[-1] in close)[:3]


def _paths(node: Any, prefix: str) -> list[tuple[str, Any]]:
    found = []
    for key, child in node.children.items():
        path = f"{prefix}.{key}" if prefix else key
        found.append((path, child))
        found.extend(_paths(child, path))
    return found


def install_for_dvc() -> None:
    """Make Hydra's composition under ``dvc exp run`` fail with :func:`explain`'s line.

    DVC imports every module of ``hydra_plugins`` under its ``hydra.plugins_path`` just before it
    composes (``dvc/utils/hydra.py``), so the plugin module calls this. Hydra offers no hook that
    sees the overrides, so this wraps the config loader's ``load_configuration`` (the one call
    DVC's ``compose`` makes) and raises DVC's ``InvalidArgumentError``, which DVC prints as one
    ``ERROR:`` line instead of an "unexpected error" with Hydra's full text and a support link.
    """
    from dvc.exceptions import InvalidArgumentError
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    original = ConfigLoaderImpl.load_configuration
    if getattr(original, "__cultureqa__", False):
        return

    class DvcOverrideError(InvalidArgumentError):  # type: ignore[misc]
        """DVC prints its message alone: the line, without Hydra's text."""

    @functools.wraps(original)
    def load_configuration(self: Any, config_name: Any, overrides: list[str], *a: Any,
                           **kw: Any) -> Any:  # fmt: skip
        try:
            cfg = original(self, config_name, overrides, *a, **kw)
        except HydraException as exc:
            line = explain(exc, overrides, _main_conf_dir(self))
            raise DvcOverrideError(line) from None
        try:
            check_benchmarks(cfg, overrides, _main_conf_dir(self))
            check_model_key(cfg)
        except OverrideError as exc:
            raise DvcOverrideError(str(exc)) from None
        return cfg

    setattr(load_configuration, "__cultureqa__", True)  # noqa: B010
    ConfigLoaderImpl.load_configuration = load_configuration  # type: ignore[method-assign]


def _main_conf_dir(loader: Any) -> Path:
    """The ``conf/`` the loader composes from (the search path's ``main`` entry)."""
    for element in loader.get_search_path().get_path():
        if element.provider == "main" and str(element.path).startswith("file://"):
            return Path(str(element.path).removeprefix("file://"))
    return Path("conf")


def compose_params(conf_dir: Path, overrides: list[str] | None = None) -> dict[str, Any]:
    """The resolved composition of ``conf_dir/config.yaml`` with Hydra overrides.

    Raises:
        OverrideError: Hydra refused; the message is one line naming the nearest valid names.
    """
    from hydra import compose, initialize_config_dir

    try:
        with initialize_config_dir(config_dir=str(conf_dir.resolve()), version_base=None):
            cfg = compose(config_name="config", overrides=overrides or [])
    except HydraException as exc:
        raise OverrideError(explain(exc, overrides or [], conf_dir)) from exc
    check_benchmarks(cfg, overrides or [], conf_dir)
    OmegaConf.resolve(cfg)
    container = OmegaConf.to_container(cfg)
    assert isinstance(container, dict)
    return {str(k): v for k, v in container.items()}


def main(argv: list[str] | None = None) -> int:
    """Print the composed params as YAML (``python -m cultureqa.compose [overrides...]``).

    A bad override or config is one ``error:`` line with exit code 2, never a traceback.
    """
    parser = argparse.ArgumentParser(
        prog="python -m cultureqa.compose",
        description="Compose conf/ into the params.yaml `dvc exp run` writes; print it as YAML.",
    )
    parser.add_argument(
        "overrides", nargs="*", metavar="OVERRIDE",
        help="Hydra overrides as in `dvc exp run -S` (model=gpt_4o, evaluate.progress=false)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    from omegaconf.errors import OmegaConfBaseException

    try:
        params = compose_params(Path("conf"), args.overrides)
    except OverrideError as exc:
        print(f"error: cannot compose conf/: {exc}", file=sys.stderr)
        return 2
    except (HydraException, OmegaConfBaseException, ValueError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        print(f"error: cannot compose conf/ with {args.overrides}: {first}", file=sys.stderr)
        return 2
    sys.stdout.write(OmegaConf.to_yaml(OmegaConf.create(params)))  # what DVC writes
    return 0


if __name__ == "__main__":
    sys.exit(main())
