"""Outputs are the same bytes under another BLAS kernel and with rows fed in another order.

The cross-cultural analysis fits logistic regressions (statsmodels GLM); OpenBLAS picks its kernel
by CPU, and the kernels differ in the last bits of a fit (ECOSYSTEM-NOTES §10: thread counts do
not, ``OPENBLAS_CORETYPE`` does). Each variant runs in its own process, since OpenBLAS reads the
variable once at load, and writes the analysis tables through ``cultureqa.core.io`` (the declared
precision) and, for the proof that the gate bites, the same tables straight through pandas.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import dataclasses, hashlib, json, sys
from pathlib import Path
import pandas as pd
sys.path.insert(0, sys.argv[1])
from tests.cases.test_analysis import OPTIONS, predictions
from cultureqa.cases.analysis import analyze
from cultureqa.cases.report import summary, write_analysis
from cultureqa.core.io import write_json

out, shuffled = Path(sys.argv[2]), sys.argv[3] == "shuffled"
frames = []
for copy in range(12):  # 12 copies of the hand-built table, each its own cases: a real fit
    part = predictions()
    part["case_id"] = part["case_id"] + f"-{copy}"
    part.loc[(part.index + copy) % 7 == 0, "pred_type"] = "C"
    part["correct"] = part["pred_type"] == "F"
    frames.append(part)
table = pd.concat(frames, ignore_index=True)
if shuffled:
    table = table.sample(frac=1.0, random_state=7).reset_index(drop=True)
options = dataclasses.replace(OPTIONS, dimensions=("W", "E", "I", "R", "D"))
result = analyze(table, options)
write_analysis(result, out / "declared")
write_json(out / "declared" / "summary.json", summary(result))
raw = out / "raw"
raw.mkdir()
for name, frame in result.tables.items():
    frame.to_parquet(raw / f"{name}.parquet", index=False)
digest = lambda d: {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}
print(json.dumps({"declared": digest(out / "declared"), "raw": digest(raw)}))
"""


def _run(tmp_path: Path, name: str, coretype: str | None, order: str = "as-built") -> dict:
    out = tmp_path / name
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(ROOT), str(out), order],
        env=env, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def variants(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    tmp = tmp_path_factory.mktemp("kernels")
    return {
        "default": _run(tmp, "default", None),
        "prescott": _run(tmp, "prescott", "Prescott"),
        "shuffled": _run(tmp, "shuffled", None, "shuffled"),
    }


def test_another_blas_kernel_writes_the_same_bytes(variants: dict[str, dict]) -> None:
    assert variants["prescott"]["declared"] == variants["default"]["declared"]


def test_rows_in_another_order_write_the_same_bytes(variants: dict[str, dict]) -> None:
    assert variants["shuffled"]["declared"] == variants["default"]["declared"]


def test_the_gate_bites_without_the_declared_precision(variants: dict[str, dict]) -> None:
    """The same tables written raw differ between the kernels: the check above can fail."""
    raw_a, raw_b = variants["default"]["raw"], variants["prescott"]["raw"]
    differing = sorted(name for name in raw_a if raw_a[name] != raw_b[name])
    if not differing:
        pytest.skip("this CPU's default OpenBLAS kernel computes the fits bit for bit as Prescott")
    assert "dimension_logits.parquet" in differing
