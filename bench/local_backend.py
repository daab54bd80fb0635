"""Throughput of the local HF backend on 3-option IndoCulture-like items (CPU).

Prints the cached load time, ms per forward pass, and loglik items/s for several batch sizes,
for the client's default against its two scoring paths forced (one right-padded pass over all
options; the shared context run once and its KV cache reused over the options), one
continuation per pass, and the full-vocabulary projection. Timings are the best of ``--reps``
interleaved runs, because the machine is shared; the CPU column (process time) is less
disturbed by other jobs, and with ``--threads 1`` it measures the work itself. Takes about
5 minutes on 2 cores.

    PYTHONPATH=src .venv/bin/python bench/local_backend.py --batch-sizes 1,8,16
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from cultureqa.llm.base import LoglikRequest
from cultureqa.llm.local import local_hf
from cultureqa.llm.local.local_hf import LocalHFClient

ITEMS = [
    ("Saat upacara pernikahan adat Batak, keluarga pengantin perempuan memberikan",
     (" kain ulos", " kain songket", " kain batik")),
    ("Di Yogyakarta, ketika seorang bayi berusia tujuh bulan dalam kandungan, keluarga "
     "biasanya mengadakan upacara", (" mitoni", " ngaben", " rambu solo")),
    ("Masyarakat Bali yang beragama Hindu biasanya mengkremasi jenazah anggota keluarga mereka "
     "dalam sebuah upacara yang disebut", (" ngaben", " sekaten", " tabuik")),
    ("Ketika bertamu ke rumah orang Minangkabau, tamu yang dihormati biasanya disuguhi hidangan "
     "khas berupa", (" rendang", " gudeg", " papeda")),
    ("Pada malam takbiran menjelang Idul Fitri di Jakarta, anak-anak muda sering berkeliling "
     "kampung sambil", (" menabuh bedug", " menari kecak", " bermain layangan")),
    ("Dalam tradisi masyarakat Toraja, jenazah orang yang meninggal disimpan di rumah selama "
     "berbulan-bulan sebelum upacara", (" rambu solo", " kasada", " mitoni")),
    ("Di Madura, karapan sapi biasanya diadakan setelah musim panen sebagai hiburan dan ajang",
     (" gengsi", " ibadah", " jual beli ikan")),
    ("Ketika seorang anak di Jawa bertemu dengan orang yang lebih tua, ia biasanya menyapa "
     "dengan bahasa Jawa tingkat", (" krama", " ngoko", " kasar")),
    ("Di Papua, makanan pokok yang terbuat dari sagu dan dimakan dengan kuah ikan kuning disebut",
     (" papeda", " nasi liwet", " ketupat")),
    ("Setiap tahun masyarakat Tengger di sekitar Gunung Bromo melemparkan hasil bumi ke kawah "
     "dalam upacara", (" Yadnya Kasada", " Sekaten", " Tabuik")),
    ("Orang Betawi yang mengadakan pesta pernikahan biasanya menampilkan kesenian",
     (" ondel-ondel", " reog", " tari pendet")),
    ("Di Aceh, ketika seseorang baru pulang dari ibadah haji, keluarganya mengadakan acara",
     (" peusijuek", " kenduri laut", " ngaben")),
]  # fmt: skip


def main() -> None:
    """Run every measurement and print one line each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache/cultureqa/models")
    parser.add_argument("--batch-sizes", default="1,4,8,16")
    parser.add_argument("--copies", type=int, default=3, help="repeat the 12 items")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    reqs = [LoglikRequest(c, o) for c, o in ITEMS] * args.copies
    client = LocalHFClient(
        model_id="gemma3-270m", cache_dir=args.cache_dir, batch_size=1, dtype=args.dtype,
        num_threads=args.threads,
    )  # fmt: skip
    started = time.perf_counter()
    asyncio.run(client.loglik(reqs[:1]))
    print(f"load (cached) + first item: {time.perf_counter() - started:.1f} s")
    one = [[client._encode_pair(r.context, c) for c in r.continuations] for r in reqs[:1]]
    alone = [LoglikRequest(r.context, (c,)) for r in reqs for c in r.continuations]
    runs: dict[str, Callable[[], Any]] = {
        "1 padded forward pass, 1 item (3 options) [ms]": partial(raw, client, one, kv=False),
        "1 padded forward pass, 1 continuation [ms]": partial(raw, client, [one[0][:1]], kv=False),
        "KV path, 1 item (context + options pass) [ms]": partial(raw, client, one, kv=True),
        "one continuation per pass [items/s]": partial(scored, client, alone, 1, kv=False),
        "full-vocab logits, 8 items/pass [items/s]": partial(scored, client, reqs, 8, fast=False),
    }
    for size in [int(s) for s in args.batch_sizes.split(",")]:
        runs[f"padded only, {size:>2} items/pass [items/s]"] = partial(
            scored, client, reqs, size, kv=False
        )
        runs[f"KV path forced, {size:>2} items/pass [items/s]"] = partial(
            scored, client, reqs, size, kv=True
        )
        runs[f"client default, {size:>2} items/pass [items/s]"] = partial(
            scored, client, reqs, size
        )
    best = {name: [float("inf"), float("inf")] for name in runs}  # wall, CPU seconds
    results = {}
    for _ in range(args.reps + 1):  # interleaved, so load from other jobs hits all alike
        for name, run in runs.items():
            wall, cpu = time.perf_counter(), time.process_time()
            results[name] = run()
            best[name][0] = min(best[name][0], time.perf_counter() - wall)
            best[name][1] = min(best[name][1], time.process_time() - cpu)
    print(f"{'':<48} {'wall':>7} {'CPU':>7}")
    for name, (wall, cpu) in best.items():
        values = [x * 1e3 if "[ms]" in name else len(reqs) / x for x in (wall, cpu)]
        print(f"{name:<48} {values[0]:7.2f} {values[1]:7.2f}")
    ref = [x for r in results[name] for x in r]  # the last run
    for name, got in results.items():
        if "[items/s]" in name and "one continuation" not in name:
            diff = max(abs(a - b) for a, b in zip([x for r in got for x in r], ref, strict=True))
            print(f"max |logprob diff| vs the last run: {diff:.1e}  ({name})")


@contextmanager
def paths(client: LocalHFClient, kv: bool | None = None, fast: bool = True) -> Iterator[None]:
    """Force the KV-cache path on/off (None: the client decides) and/or full projection."""
    keep, min_tokens = client._gather, getattr(local_hf, "SHARED_CONTEXT_MIN_TOKENS", 0)
    client._gather = fast and keep
    if kv is False:
        client._shared_context = lambda pairs: False  # type: ignore[method-assign]
    if kv:
        local_hf.SHARED_CONTEXT_MIN_TOKENS = 0  # type: ignore[attr-defined]
    try:
        yield
    finally:
        client._gather = keep
        client.__dict__.pop("_shared_context", None)
        if kv:
            local_hf.SHARED_CONTEXT_MIN_TOKENS = min_tokens  # type: ignore[attr-defined]


def raw(client: LocalHFClient, items: list[Any], kv: bool) -> list[list[float]]:
    """One call of the scoring kernel, outside the event loop and batching."""
    with paths(client, kv=kv):
        return client._score(items)


def scored(
    client: LocalHFClient,
    reqs: list[LoglikRequest],
    size: int,
    kv: bool | None = None,
    fast: bool = True,
) -> list[tuple[float, ...]]:
    """Score through the public ``loglik`` with a batch size and the given paths."""
    client.batch_size = size
    with paths(client, kv=kv, fast=fast):
        return [r.logprobs for r in asyncio.run(client.loglik(reqs))]


if __name__ == "__main__":
    main()
