"""Benchmark: ``validate`` on a generated 200 MB, 1.04 M-row CSV (issue 33 item 8).

Writes the CSV into a temporary workspace (never into the repository), then runs the validate
stage's own function (load every row through the one loader, then the generic expectation suite)
and prints seconds per phase and the peak resident memory. The goal is ≤ 60 s and ≤ 1.5 GB on
this machine.

    .venv/bin/python bench/validate_large_csv.py [--rows 1040000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import csv
import resource
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.validation.benchmark import validate_benchmark

ROOT = Path(__file__).resolve().parents[1]
WORDS = [
    "makanan",
    "khas",
    "daerah",
    "upacara",
    "adat",
    "rumah",
    "tradisional",
    "tarian",
    "pakaian",
    "pernikahan",
    "musik",
    "alat",
    "permainan",
    "anak",
    "desa",
    "kota",
    "pulau",
    "gunung",
    "sungai",
    "pantai",
    "pasar",
    "hari",
    "raya",
    "panen",
    "ikan",
    "sawah",
    "kebun",
]
BENCH = {
    "name": "large",
    "source": {"kind": "file", "path": "data/sources/large/items.csv"},
    "columns": {"id": "id", "question": "question", "options": ["A", "B", "C", "D"],
                "answer": "answer", "metadata": ["region"]},
    "languages": {"id": {}},
    "settings": ["mcq-none-id"],
    "slices": [["region"]],
    "expectations": "expectations/generic_mcq_items.json",
}  # fmt: skip


def write_csv(path: Path, rows: int, seed: int = 11) -> int:
    """A CSV of ``rows`` four-option items (about 200 bytes each); returns its size in bytes."""
    rng = np.random.default_rng(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    words = np.array(WORDS)
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "question", "A", "B", "C", "D", "answer", "region"])
        for start in range(0, rows, 10_000):
            n = min(10_000, rows - start)
            stems = rng.choice(words, size=(n, 16))
            opts = rng.choice(words, size=(n, 4, 2))
            golds = rng.choice(list("ABCD"), size=n)
            regions = rng.choice(["Aceh", "Bali", "Papua", "Jawa Barat"], size=n)
            for i in range(n):
                number = start + i
                options = [f"{a} {b} {number}-{k}" for k, (a, b) in enumerate(opts[i])]
                question = " ".join(stems[i]) + f" nomor {number}?"
                writer.writerow([f"q{number:07d}", question, *options, golds[i], regions[i]])
    return path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_040_000)
    parser.add_argument("--keep", type=Path, help="workspace to use and keep (default: temporary)")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="cultureqa-large-"))
    try:
        for folder in ("prompts", "expectations"):
            shutil.copytree(ROOT / folder, work / folder, dirs_exist_ok=True)
        shutil.copy(ROOT / "dvc.yaml", work / "dvc.yaml")
        source = work / BENCH["source"]["path"]  # type: ignore[index]
        start = time.perf_counter()
        size = source.stat().st_size if source.exists() else write_csv(source, args.rows)
        print(f"source: {size / 1e6:.0f} MB, {args.rows:,} rows "
              f"(written in {time.perf_counter() - start:.1f} s)")  # fmt: skip
        spec = BenchmarkSpec.from_config(BENCH)
        start, cpu = time.perf_counter(), time.process_time()
        found = validate_benchmark(spec, work, "zero_shot")
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print("\n".join(found.lines()))
        print(f"validate: {seconds:.1f} s ({cpu:.1f} s CPU; wall time counts other processes on "
              f"a shared machine), peak resident memory {peak:.0f} MB, ok={found.ok} "
              f"(goal ≤ 60 s and ≤ 1536 MB)")  # fmt: skip
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
