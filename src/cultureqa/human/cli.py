"""The ``cultureqa human`` command group (argparse), wired into :mod:`cultureqa.cli`.

Errors a user can fix (no server, a refused token, a missing dataset, a bad labels sheet) become
one ``error: …`` line and exit code 2, like every other ``cultureqa`` command.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cultureqa.human import DATASETS


def add_parser(groups: Any) -> None:
    """Add ``human push|pull|export|report`` to the ``cultureqa`` parser's command groups."""
    human = groups.add_parser("human", help="human validation in Label Studio (or a CSV sheet)")
    verbs = human.add_subparsers(dest="verb", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dataset", choices=DATASETS, default="mocqa", help="two-hop dataset")
    server = argparse.ArgumentParser(add_help=False)
    server.add_argument(
        "--url",
        help="Label Studio address (default: LABEL_STUDIO_URL, "
        "else http://127.0.0.1:8080); token from LABEL_STUDIO_API_KEY",
    )
    push = verbs.add_parser("push", parents=[common, server], help="create a Label Studio project")
    push.add_argument("--per-stratum", type=int, help="items per clue type × language")
    push.add_argument("--per-item", type=int, help="annotators per item on the overlap share")
    push.add_argument("--overlap", type=int, help="%% of items seen by --per-item annotators")
    push.add_argument(
        "--adjudicate",
        action="store_true",
        help="send the items the last pull found split to a third annotator",
    )
    push.set_defaults(func=_push)
    pull = verbs.add_parser("pull", parents=[common, server], help="read annotations, compute")
    pull.add_argument(
        "--project",
        type=int,
        action="append",
        help="project id (repeatable; default: every project push recorded)",
    )
    pull.set_defaults(func=_pull)
    export = verbs.add_parser("export", parents=[common], help="the same sample as a CSV sheet")
    export.add_argument("--out", type=Path, default=Path("annotation_sample.csv"))
    export.add_argument("--per-stratum", type=int, help="items per clue type × language")
    export.set_defaults(func=_export)
    report = verbs.add_parser("report", parents=[common], help="the numbers from a CSV sheet")
    report.add_argument("--labels", type=Path, required=True, help="item_id, annotator, labels")
    report.set_defaults(func=_report)


class HumanError(ValueError):
    """A mistake the user can fix; ``cultureqa`` prints it as one line with exit code 2."""


def _fail(exc: Exception) -> HumanError:
    return HumanError(f"human: {exc}")


def main(argv: list[str] | None = None, dataset: str | None = None) -> int:
    """``cultureqa human …`` on its own (``stages/mocqa_human.py`` fixes ``--dataset``)."""
    from cultureqa.core.config import print_error, run_stage

    parser = argparse.ArgumentParser(prog="cultureqa")
    parser.add_argument("--root", default=".", help="project root (default: the current folder)")
    add_parser(parser.add_subparsers(dest="group", required=True))
    args = list(argv or [])
    if dataset is not None and args and not args[0].startswith("-"):
        args = [args[0], "--dataset", dataset, *args[1:]]
    parsed = parser.parse_args(["human", *args])

    def run() -> int:
        try:
            return int(parsed.func(parsed, Path(parsed.root).resolve()))
        except HumanError as exc:
            print_error(str(exc))
            return 2

    return run_stage(run)


def _target(args: argparse.Namespace, root: Path) -> Any:
    from cultureqa.human.datasets import load_target

    try:
        return load_target(root, args.dataset)
    except (FileNotFoundError, ValueError) as exc:
        raise _fail(exc) from exc


def _studio(args: argparse.Namespace) -> Any:
    from cultureqa.human.studio import Studio, StudioError

    try:
        return Studio.from_env(args.url)
    except StudioError as exc:
        raise _fail(exc) from exc


def _push(args: argparse.Namespace, root: Path) -> int:
    from cultureqa.human.commands import push
    from cultureqa.human.studio import StudioError

    target, studio = _target(args, root), _studio(args)
    try:
        made = push(target, studio, args.per_stratum, args.per_item, args.overlap, args.adjudicate)
    except (StudioError, FileNotFoundError) as exc:
        raise _fail(exc) from exc
    if made["project"] is None:
        print(made["note"])
        return 0
    print(
        f"project {made['project']} ({made['kind']}): {made['tasks']} tasks, "
        f"{made['per_item']} annotator(s) on {made['overlap_percent']}% of them; "
        f"open {studio.url}/projects/{made['project']}/data"
    )
    return 0


def _pull(args: argparse.Namespace, root: Path) -> int:
    from cultureqa.human.commands import pull
    from cultureqa.human.studio import StudioError

    target, studio = _target(args, root), _studio(args)
    try:
        tables, counts = pull(target, studio, args.project)
    except (StudioError, FileNotFoundError, RuntimeError) as exc:
        raise _fail(exc) from exc
    _print(tables, counts, target)
    return 0


def _export(args: argparse.Namespace, root: Path) -> int:
    from cultureqa.human.commands import export_sheet

    n = export_sheet(_target(args, root), args.out, args.per_stratum)
    print(f"wrote {n} items to {args.out}")
    return 0


def _report(args: argparse.Namespace, root: Path) -> int:
    from cultureqa.human.agreement import import_labels
    from cultureqa.human.commands import report

    target = _target(args, root)
    tables = report(target, import_labels(args.labels))  # a SourceError is one line (run_stage)
    _print(tables, None, target)
    return 0


def _print(tables: dict[str, Any], counts: Any, target: Any) -> None:
    for name in ("kappa_quality", "judge_vs_human", "icc_quality"):
        if name in tables and len(tables[name]):
            print(f"{name}:\n{tables[name].to_string(index=False)}")
    split = tables["needs_adjudication"]
    print(
        f"{len(split)} item(s) need a third annotator"
        + (": `cultureqa human push --adjudicate`" if len(split) else "")
    )
    for reason, n in sorted((counts or {}).items()):
        print(f"  {reason}: {n}")
    print(f"metrics: {target.metrics_path.relative_to(target.root)}")
