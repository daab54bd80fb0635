"""The embedded model's scores are the same bits on every machine: its CPU kernels are pinned.

AVX-512 and AVX2 kernels sum float32 in different orders, so without the pin a machine with
AVX-512 writes other 10-digit scores into ``predictions.parquet`` than one without, and a fresh
clone's ``dvc repro`` rewrites ``dvc.lock``. Each score runs in a fresh process because the
kernels are chosen once per process, at the first one torch runs.

Those processes are forked from one parent per test process that has imported torch,
transformers and the client and run no kernel (:class:`Forks`): importing them is about 6 of a
score process's 6 CPU s, and the kernels a child runs are still chosen in the child, where the
pin (or its absence) is set. Were a kernel to run in the parent, every pinned child would stop
with ``KernelPinError`` and the tests below would fail.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from cultureqa.core.config import load_params
from cultureqa.llm.local.cpu_kernels import KernelPinError, pin

torch = pytest.importorskip("torch")

IMPORTS = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    import torch, transformers
    from tokenizers import Tokenizer, models, pre_tokenizers
    from cultureqa.llm.base import LoglikRequest
    from cultureqa.llm.local.local_hf import LocalHFClient
    """
)

SCORE = textwrap.dedent(
    """
    kernels = None if sys.argv[1] == "none" else sys.argv[1]
    if sys.argv[2] == "ran-before":
        torch.ones(64).sum()  # a kernel runs before the model loads
    words = [f"w{i}" for i in range(200)]
    vocab = {t: i for i, t in enumerate(["<pad>", "<eos>", "<bos>", "<unk>"] + words)}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", eos_token="<eos>", bos_token="<bos>",
        unk_token="<unk>")

    def loader():
        torch.manual_seed(0)
        config = transformers.LlamaConfig(
            vocab_size=len(vocab), hidden_size=256, intermediate_size=512, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, pad_token_id=0, eos_token_id=1,
            bos_token_id=2)
        return transformers.LlamaForCausalLM(config).eval(), tok

    client = LocalHFClient(model_id="tiny", cache_dir=Path("/nonexistent"), loader=loader,
                           num_threads=1, cpu_kernels=kernels)
    context = " ".join(words[i % 200] for i in range(0, 600, 7))
    reply = asyncio.run(client.loglik([LoglikRequest(context, (" w1 w2 w3", " w4 w5", " w6"))]))[0]
    print(json.dumps({"kernels": str(torch.backends.cpu.get_cpu_capability()),
                      "status": reply.status, "error": reply.error,
                      "scores": [f"{x:.10g}" for x in reply.logprobs]}))
    """
)


# The parent: imports, then one line per child on stdin (its argv, its stdout and stderr
# files); it forks, the child runs ``code`` as ``python -c`` would (an uncaught exception:
# traceback on stderr, exit 1), and the parent answers with the child's exit code.
PARENT = textwrap.dedent(
    """
    import json, os, sys, traceback
    exec(compile(sys.argv[1], "<imports>", "exec"))
    print("ready", flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                for fd, path in ((1, request["out"]), (2, request["err"])):
                    os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
                sys.argv = ["-c", *request["argv"]]
                exec(compile(request["code"], "<string>", "exec"), dict(globals()))
            except SystemExit as stop:  # as the interpreter exits: None is 0, text goes to stderr
                if stop.code is None or isinstance(stop.code, int):
                    code = stop.code or 0
                else:
                    print(stop.code, file=sys.stderr)
                    code = 1
            except BaseException:
                traceback.print_exc()
                code = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
    """
)


class Forks:
    """A parent process that has imported torch and the client, forking one child per call."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.calls = folder, 0
        self.process = subprocess.Popen(
            [sys.executable, "-c", PARENT, IMPORTS],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.process.stdin and self.process.stdout
        self.stdin, self.stdout = self.process.stdin, self.process.stdout
        assert self.stdout.readline().strip() == "ready", "the parent failed to import"

    def run(self, code: str, *argv: str) -> subprocess.CompletedProcess[str]:
        """``subprocess.run([python, -c, IMPORTS + code, *argv])``'s result, from a fork."""
        self.calls += 1
        out, err = (self.folder / f"{self.calls}.{name}" for name in ("out", "err"))
        request = {"code": code, "argv": list(argv), "out": str(out), "err": str(err)}
        self.stdin.write(json.dumps(request) + "\n")
        self.stdin.flush()
        line = self.stdout.readline()
        assert line, f"the parent process ended (exit {self.process.poll()})"
        returncode = int(line)
        return subprocess.CompletedProcess(
            ["-c", code, *argv], returncode, out.read_text(), err.read_text()
        )

    def close(self) -> None:
        self.stdin.close()
        self.process.wait(timeout=60)


@pytest.fixture(scope="module")
def forks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Forks]:
    parent = Forks(tmp_path_factory.mktemp("forks"))
    try:
        yield parent
    finally:
        parent.close()


def run(forks: Forks, kernels: str, when: str = "fresh") -> subprocess.CompletedProcess[str]:
    return forks.run(SCORE, kernels, when)


def score(forks: Forks, kernels: str) -> dict[str, object]:
    done = run(forks, kernels)
    assert done.returncode == 0, done.stderr[-2000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def best_kernels(forks: Forks) -> str:
    """This CPU's widest kernels, as a child with no pin sees them."""
    done = forks.run("print(torch.backends.cpu.get_cpu_capability())")
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_the_embedded_model_config_pins_avx2() -> None:
    assert load_params()["model"]["options"]["cpu_kernels"] == "avx2"


def test_pinned_scores_are_the_same_bits_in_every_process_and_differ_from_the_wider_kernels(
    forks: Forks,
) -> None:
    first, second = score(forks, "avx2"), score(forks, "avx2")
    assert first["kernels"] == second["kernels"] == "AVX2"
    assert first["status"] == "ok" and first["scores"] == second["scores"]
    if best_kernels(forks) == "AVX2":
        pytest.skip("this CPU's best kernels are AVX2: nothing wider to compare with")
    unpinned = score(forks, "none")
    assert unpinned["kernels"] != "AVX2"
    # the very difference the pin removes: without it, this machine writes other digits
    assert unpinned["scores"] != first["scores"]


def test_a_pin_that_comes_too_late_stops_the_run_instead_of_writing_other_digits(
    forks: Forks,
) -> None:
    if best_kernels(forks) == "AVX2":
        pytest.skip("this CPU's best kernels are AVX2: a late pin changes nothing here")
    late = run(forks, "avx2", "ran-before")
    assert late.returncode != 0
    assert "KernelPinError: torch runs AVX512 kernels, not the pinned avx2" in late.stderr


def test_an_unknown_kernel_set_is_refused_by_name() -> None:
    with pytest.raises(KernelPinError, match="cpu_kernels must be one of avx2 or null, not 'avx9'"):
        pin("avx9")
