"""The ``cultureqa`` command: add and check benchmarks without reading the code.

``cultureqa benchmark add NAME --from FILE|PATTERN`` sniffs the layout, copies the files under
``data/sources/NAME/`` (so DVC tracks it), writes ``conf/benchmark/NAME.yaml``, a five-row fixture
and the ``conf/config.yaml`` entries, recomposes params.yaml and runs the contract test.
``cultureqa benchmark check NAME`` runs every check ``validate`` runs, without DVC.
``cultureqa params check`` says "run make params" when params.yaml is older than conf/.
``cultureqa cost [-S override ...] [--json]`` is a dry run: requests, tokens and cost per stage ×
roster entry of a sweep, built by the stages' own code, minus what the response store holds.
``cultureqa compare [--baseline EXP]`` prints, per benchmark and prompt, one row per DVC experiment:
headline accuracy with its 95% CI and the difference to a baseline experiment, paired by item over
the rows both measured, or an empty cell with its reason where the experiments' differences do not
reach that benchmark.
``cultureqa headline [--csv]`` prints the workspace's benchmark × prompt × roster slot table,
accuracy ± 95% CI and n items (the last lines of ``make repro``).
``cultureqa exps [--width N] [--csv]`` shows DVC experiments: the params that differ and the
model slot's headline metrics first, as many columns as fit the width.
``cultureqa ui-links`` prints the address of each MLflow experiment's runs table.
``cultureqa store copy SOURCE TARGET`` moves a response store (``sqlite:///…`` ↔ ``postgresql://…``);
``cultureqa store report`` prints requests sent per machine and prompts paid twice (docs/team.md).
``cultureqa human push|pull`` sends a two-hop sample to Label Studio and reads the labels back
(``export|report``: the same through a CSV sheet; docs/human-validation.md).
User errors print one ``error: …`` line and exit with code 2.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from omegaconf import OmegaConf

from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.params_state import ParamsState


class UserError(ValueError):
    """A mistake the user can fix; printed as one line with exit code 2."""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    parser = _parser()
    args = parser.parse_args(argv)
    from cultureqa.core.config import print_error, run_stage
    from cultureqa.human.cli import HumanError

    def run() -> int:
        try:
            return int(args.func(args, Path(args.root).resolve()))
        except (UserError, HumanError) as exc:
            print_error(str(exc))
            return 2

    return run_stage(run)


def _parser() -> argparse.ArgumentParser:
    first = __doc__.split("\n")[0]
    parser = argparse.ArgumentParser(prog="cultureqa", description=first.replace("``", ""))
    parser.add_argument("--root", default=".", help="project root (default: the current folder)")
    groups = parser.add_subparsers(dest="group", required=True)
    bench = groups.add_parser("benchmark", help="add or check a multiple-choice benchmark")
    verbs = bench.add_subparsers(dest="verb", required=True)
    add = verbs.add_parser("add", help="sniff FILE and write the config, fixture and entries")
    add.add_argument("name")
    add.add_argument(
        "--from", dest="source", required=True,
        help="CSV/TSV/JSON(L)/Parquet file, HF dataset folder, or a pattern of files "
        "('data/raw/{island}/{topic}.json': the names in braces become metadata, or each "
        "item's language when their values are languages)",
    )  # fmt: skip
    add.add_argument(
        "--language",
        default=None,
        help="language of every item when no path capture or column gives each its own "
        "(default en); a conflict with the detected languages is a note",
    )
    add.add_argument("--no-test", action="store_true", help="skip the contract test")
    add.set_defaults(func=_add)
    check = verbs.add_parser("check", help="run validate's checks on a benchmark")
    check.add_argument("name")
    check.set_defaults(func=_check)
    params = groups.add_parser("params", help="params.yaml tools")
    params.add_argument("verb", choices=["check", "compose"])
    params.add_argument(
        "--force", action="store_true",
        help="compose: overwrite an applied experiment's values (they are listed)",
    )  # fmt: skip
    params.set_defaults(func=_params)
    cost = groups.add_parser("cost", help="dry run: requests, tokens and cost of a sweep")
    cost.add_argument(
        "-S", "--set-param", dest="sets", action="append", default=[], metavar="OVERRIDE",
        help="Hydra override as in `dvc exp run -S` (sweeps: 'model=gpt_4o,gpt_5_mini'); "
        "without -S, params.yaml as committed (what `dvc repro` runs)",
    )  # fmt: skip
    cost.add_argument(
        "--stage", dest="stages", action="append", choices=["evaluate", "mocqa_evaluate",
        "cases_evaluate"], help="only these stages (repeatable; default all three)",
    )  # fmt: skip
    cost.add_argument("--json", action="store_true", help="print JSON instead of the table")
    cost.set_defaults(func=_cost)
    compare = groups.add_parser("compare", help="one table across DVC experiments (paste-ready)")
    compare.add_argument(
        "--baseline",
        help="experiment the others are compared with "
        "(default: the first one with predictions after the workspace)",
    )
    compare.add_argument("--slot", default="model", help="roster slot (default: model)")
    compare.add_argument("--csv", action="store_true", help="CSV instead of a markdown table")
    compare.set_defaults(func=_compare)
    head = groups.add_parser("headline", help="the workspace's results table (make repro's end)")
    head.add_argument("--csv", action="store_true", help="CSV with the numbers and CI bounds")
    head.set_defaults(func=_headline)
    exps = groups.add_parser("exps", help="DVC experiments: what differs, model metrics first")
    exps.add_argument("--width", type=int, help="columns (default: the terminal's; 160 piped)")
    exps.add_argument("--csv", action="store_true", help="every column of this view as CSV")
    exps.set_defaults(func=_exps)
    links = groups.add_parser("ui-links", help="addresses of each experiment's MLflow runs table")
    links.add_argument("--base", default="http://127.0.0.1:5000", help="the UI's address")
    links.set_defaults(func=_ui_links)
    store = groups.add_parser("store", help="the response store: copy it, report its spend")
    store_verbs = store.add_subparsers(dest="verb", required=True)
    copy = store_verbs.add_parser("copy", help="copy every stored answer into another store")
    copy.add_argument("source", help="sqlite:///path/responses.sqlite or postgresql://…")
    copy.add_argument("target", help="sqlite:///path/responses.sqlite or postgresql://…")
    copy.set_defaults(func=_store_copy)
    report = store_verbs.add_parser(
        "report", help="requests sent per machine, prompts paid twice or lost (exit 1 if any)"
    )
    report.add_argument(
        "location", nargs="?", help="store URL or path (default: CULTUREQA_STORE_URL, else the "
        "project's .cultureqa/responses.sqlite)",
    )  # fmt: skip
    report.add_argument("--json", action="store_true", help="print JSON instead of the table")
    report.set_defaults(func=_store_report)
    from cultureqa.cluster.commands import add_parser as add_slurm

    add_slurm(groups)  # cultureqa slurm submit / collect (docs/team.md)

    from cultureqa.human.cli import add_parser as add_human_parser

    add_human_parser(groups)
    return parser


def _store_copy(args: argparse.Namespace, root: Path) -> int:
    from cultureqa.llm.store import StoreLocationError, parse_location, shown
    from cultureqa.llm.store.admin import CopyError, copy_store

    try:
        source, target = parse_location(args.source), parse_location(args.target)
        done = copy_store(source, target)
    except (StoreLocationError, CopyError) as exc:
        raise UserError(f"store copy: {exc}") from exc
    print(
        f"copied {done.rows} rows ({done.ok} ok, {done.errors} errors) and {done.sends} sends "
        f"from {shown(source)} to {shown(target)}: it held {done.target_before} rows, now "
        f"{done.target_after}; every row of the source is in the target (checked key by key)"
    )
    return 0


def _store_report(args: argparse.Namespace, root: Path) -> int:
    from cultureqa.llm.store import StoreLocationError, parse_location, store_location
    from cultureqa.llm.store.admin import render_report, report

    try:
        location = parse_location(args.location) if args.location else store_location()
    except StoreLocationError as exc:
        raise UserError(f"store report: {exc}") from exc
    rep = report(location)
    print(json.dumps(rep.as_dict(), indent=2) if args.json else render_report(rep))
    return 1 if rep.duplicates or rep.lost else 0


def _ui_links(args: argparse.Namespace, root: Path) -> int:
    if not (root / "mlflow.db").exists():
        print(f"no MLflow database at {root / 'mlflow.db'} yet: run `make repro` first")
        return 0
    from cultureqa.runs.mlflow_home import ui_links

    print("MLflow runs tables (each opens in the UI's Model training view):")
    for line in ui_links(root, args.base.rstrip("/")):
        print(f"  {line}")
    return 0


def _exps(args: argparse.Namespace, root: Path) -> int:
    from cultureqa.runs.exps import read_show, table, terminal_width

    try:
        print(table(read_show(root), args.width or terminal_width(), args.csv), end="")
    except RuntimeError as exc:
        raise UserError(f"exps: {exc}") from exc
    return 0


def _compare(args: argparse.Namespace, root: Path) -> int:
    from cultureqa.runs.compare import as_frame, compare, read_show, render

    try:
        result = compare(root, read_show(root), args.baseline, args.slot)
    except (ValueError, RuntimeError) as exc:
        raise UserError(f"compare: {exc}") from exc
    print(as_frame(result, text=False).to_csv(index=False) if args.csv else render(result), end="")
    return 0


def _headline(args: argparse.Namespace, root: Path) -> int:
    from cultureqa.runs.headline import headline, read_params, render

    try:
        frame = headline(root, read_params(root))
    except OSError as exc:
        raise UserError(f"headline: {exc}") from exc
    print(frame.to_csv(index=False) if args.csv else render(frame), end="")
    return 0


def _cost(args: argparse.Namespace, root: Path) -> int:
    from cultureqa.dryrun import STAGES, as_json, plan, quiet_stage_logs, render_table

    try:
        with quiet_stage_logs():
            groups, notes = plan(root, args.sets, tuple(args.stages or STAGES))
    except ValueError as exc:  # a -S the sweep parser or Hydra rejects
        raise UserError(f"cost: {exc}") from exc
    if args.json:
        print(json.dumps(as_json(groups, notes), indent=2))
    else:
        print(render_table(groups, notes))
    return 0


def _add(args: argparse.Namespace, root: Path) -> int:
    from cultureqa.authoring.add import add
    from cultureqa.compose import compose_params
    from cultureqa.core.io import write_text

    if not args.name.isidentifier():
        raise UserError(f"benchmark name {args.name!r} must be a Python-style identifier")
    config = root / "conf" / "benchmark" / f"{args.name}.yaml"
    if config.exists():
        raise UserError(f"{config} exists already; pick another name or edit it")
    added = add(root, args.name, args.source, args.language)
    params = compose_params(root / "conf")
    write_text(root / "params.yaml", OmegaConf.to_yaml(OmegaConf.create(params)))
    for line in [f"source   {added.source}", f"config   {added.config.relative_to(root)}",
                 f"fixture  {added.fixture.relative_to(root)}"]:  # fmt: skip
        print(line)
    for note in added.notes:
        print(f"note     {note}")
    if args.no_test:
        return 0
    return _contract_test(root, args.name)


def _contract_test(root: Path, name: str) -> int:
    test = "tests/benchmarks/test_contract.py"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test, "-k", name],
        cwd=root,
        check=False,
    )
    if done.returncode != 0:
        print(f"error: the contract test failed for '{name}'; fix conf/benchmark/{name}.yaml",
              file=sys.stderr)  # fmt: skip
        return 1
    return 0


def _check(args: argparse.Namespace, root: Path) -> int:
    from cultureqa.core.config import load_params
    from cultureqa.validation.benchmark import validate_benchmark

    state = _params_fresh(root)
    if state.kind == "experiment":  # e.g. `dvc exp run -S key=value`: deliberate, not stale
        print(
            f"note: params.yaml holds values conf/ does not ({state.describe()}), written after "
            "the last conf/ edit; checking params.yaml as it is (make params FORCE=1 drops them)",
            file=sys.stderr,
        )
    params = load_params(root / "params.yaml")
    raw = OmegaConf.select(params, f"benchmarks.{args.name}")
    if raw is None:
        raise UserError(
            f"benchmark '{args.name}' is not in params.yaml; add '- benchmark@benchmarks."
            f"{args.name}: {args.name}' to conf/config.yaml defaults and run make params"
        )
    spec = BenchmarkSpec.from_params(params, args.name)
    found = validate_benchmark(spec, root, str(params.prompt.style))
    print("\n".join(found.lines()))
    print(f"templates: {sorted(found.templates)}")
    if not found.ok:
        print(f"error: {found.loaded.origin} breaks dataset invariants", file=sys.stderr)
        return 1
    checks = sum(r.evaluated for r in found.reports.values())
    print(f"ok: {checks} expectation checks pass ({len(found.reported)} reported, not failing)")
    return 0


def _params(args: argparse.Namespace, root: Path) -> int:
    from cultureqa.compose import OverrideError

    try:
        return _params_verb(args, root)
    except OverrideError as exc:  # a typo in conf/: one line with the nearest valid names
        raise UserError(f"cannot compose conf/: {exc}") from exc


def _params_verb(args: argparse.Namespace, root: Path) -> int:
    if args.verb == "compose":
        return _params_compose(root, args.force)
    state = _params_fresh(root)
    if state.kind == "fresh":
        print("params.yaml matches conf/")
    else:
        print(
            "params.yaml holds an applied experiment's values (it was written after conf/, by "
            f"`dvc exp run`, `dvc exp apply` or by hand); running them: {state.describe()}"
        )
    return 0


def _params_fresh(root: Path) -> ParamsState:
    """Raise when params.yaml has unknown keys or predates conf/ (DVC would read stale values)."""
    from cultureqa.params_state import params_state

    if not (root / "params.yaml").exists():
        raise UserError("params.yaml not found; run make params")
    state = params_state(root)
    if state.kind == "stale":
        raise UserError(
            "params.yaml is stale (conf/ changed after it was composed), so DVC would run the "
            "old config or say \"Stage 'validate@<name>' not found\"; run make params; it "
            f"differs in: {state.describe()}"
        )
    return state


def _params_compose(root: Path, force: bool) -> int:
    """Write params.yaml from conf/; an applied experiment's values are kept unless ``force``."""
    from cultureqa.compose import compose_params
    from cultureqa.core.io import write_text
    from cultureqa.params_state import params_state

    path = root / "params.yaml"
    if path.exists():
        try:
            state = params_state(root)
        except (ValueError, TypeError):  # unknown keys or bad values: conf/ decides, say what
            state = None
        if state is not None and state.kind == "experiment" and not force:
            raise UserError(
                "params.yaml holds an applied experiment's values that conf/ does not: "
                f"{state.describe()}; keep them (dvc exp save, or put them in conf/) or run "
                "`make params FORCE=1` to replace them"
            )
        if state is not None and state.differences:
            print(f"params.yaml: replacing {state.describe(limit=20)}")
    params = compose_params(root / "conf")
    write_text(path, OmegaConf.to_yaml(OmegaConf.create(params)))
    print("params.yaml composed from conf/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
