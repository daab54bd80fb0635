"""DVC stage: describe a benchmark's items (IndoCulture Table 2 and Figure 2) from its source.

Loads the configured source exactly as evaluation does (``benchmarks.<name>``: sample, CSV or
Hugging Face), keeps one language, and writes per-group statistics (lengths of the premise
with its correct continuation, as the paper's Table 2 counts), the topic distribution, its
figure and a markdown digest under ``reports/datasets/<name>/``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)

from cultureqa.analysis.tables import to_markdown
from cultureqa.benchmarks.checks import load_checked
from cultureqa.benchmarks.describe import (
    INSTANCE,
    group_statistics,
    instance_text,
    language_distribution,
    plot_topics,
    topic_distribution,
)
from cultureqa.benchmarks.load import items_frame
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.core.config import load_params, run_stage, setup_stage
from cultureqa.core.io import write_csv, write_text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--benchmark", required=True)
    parser.add_argument("--group", required=True, help="metadata column, e.g. province")
    parser.add_argument("--flag", required=True, help="boolean metadata column")
    parser.add_argument("--topic", required=True, help="metadata column of the topic")
    parser.add_argument(
        "--language",
        help="describe one language's items (a row translated into several languages); by "
        "default every item, each in its own language (columns.language)",
    )
    args = parser.parse_args(argv)
    setup_stage()
    root = Path.cwd()
    spec = BenchmarkSpec.from_params(load_params(root / "params.yaml"), args.benchmark)
    loaded = load_checked(spec, root)
    if args.language is not None and args.language not in loaded.items:
        raise KeyError(f"no '{args.language}' items; the settings load {sorted(loaded.items)}")
    chosen = [args.language] if args.language is not None else sorted(loaded.items)
    items = instance_text(items_frame([i for lang in chosen for i in loaded.items[lang]]))
    languages = language_distribution(items)
    groups = group_statistics(items, args.group, args.flag, text=INSTANCE)
    topics = topic_distribution(items, args.topic, args.flag)
    out = root / "reports" / "datasets" / args.benchmark
    write_csv(out / f"by_{args.group}.csv", groups)
    write_csv(out / f"by_{args.topic}.csv", topics)
    write_csv(out / "by_language.csv", languages)
    title = f"{args.benchmark}: items per {args.topic} ({loaded.origin})"
    plot_topics(topics, args.topic, args.flag, out / f"{args.topic}_distribution.png", title)
    digest = (
        f"# {args.benchmark}: the items\n\nSource: `{loaded.origin}`, language(s) "
        f"{', '.join(f'`{lang}`' for lang in chosen)}, {len(items)} items. Lengths are of the "
        "instance as the IndoCulture paper counts it: the premise followed by its correct "
        "continuation (the gold option), not the premise alone; words are whitespace-separated "
        "tokens, characters Unicode code points.\n\n"
        f"## Per language\n\n{to_markdown(languages, 1)}\n"
        f"## Per {args.group}\n\n{to_markdown(groups, 1)}\n## Per {args.topic}\n\n"
        f"{to_markdown(topics, 1)}\n![](./{args.topic}_distribution.png)\n"
    )
    write_text(out / "tables.md", digest)
    print(f"{args.benchmark}: {len(items)} items, {len(groups) - 1} {args.group} groups, "
          f"{len(topics)} {args.topic} values described")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
