"""Throughput of the local HF backend on 3-option IndoCulture-like items (CPU).

Prints the cached load time, ms per forward pass, and loglik items/s for several batch sizes,
next to two alternatives: one continuation per forward pass, and running the shared context
once and expanding its KV cache over the options. Timings are the best of ``--reps`` interleaved
runs, because the machine is shared; the CPU column (process time) is less disturbed by other
jobs, and with ``--threads 1`` it measures the work itself.

    PYTHONPATH=src .venv/bin/python bench/local_backend.py --batch-sizes 1,2,4,8
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from cultureqa.llm.base import LoglikRequest
from cultureqa.llm.local_hf import LocalHFClient

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


def kv_reuse_scores(client: LocalHFClient, reqs: list[LoglikRequest]) -> list[list[float]]:
    """Alternative design: context once, its KV cache repeated over the options."""
    import torch

    model, out = client._model, []
    for req in reqs:
        pairs = [client._encode_pair(req.context, c) for c in req.continuations]
        ctx = pairs[0][0]
        with torch.inference_mode():
            first = model(input_ids=torch.tensor([ctx]), use_cache=True, logits_to_keep=1)
            cache, last = first.cache, torch.log_softmax(first.logits[0, -1].float(), -1)
            cache.batch_repeat_interleave(len(pairs))
            conts, mask = client._padded([cont for _, cont in pairs], left=False)
            mask = torch.cat([torch.ones(len(pairs), len(ctx), dtype=mask.dtype), mask], 1)
            logp = torch.log_softmax(
                model(input_ids=conts, attention_mask=mask, cache=cache).logits.float(), -1
            )
        out.append(
            [
                float(last[cont[0]]) + sum(float(logp[r, j, t]) for j, t in enumerate(cont[1:]))
                for r, (_, cont) in enumerate(pairs)
            ]
        )
    return out


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
        "forward pass, 1 item (3 options padded) [ms]": lambda: client._score(one),
        "forward pass, 1 continuation [ms]": lambda: client._score([one[0][:1]]),
        "one continuation per pass [items/s]": lambda: scored(client, alone, 1),
        "KV-cache reuse, 1 item/pass [items/s]": lambda: kv_reuse_scores(client, reqs),
        "full-vocab logits, 4 items/pass [items/s]": lambda: scored(client, reqs, 4, False),
    }
    for size in [int(s) for s in args.batch_sizes.split(",")]:
        runs[f"batched, {size:>2} items/pass [items/s]"] = partial(scored, client, reqs, size)
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
    ref = [x for r in results[name] for x in r]  # the last batched run
    for name, got in results.items():
        if "[items/s]" in name and "one continuation" not in name:
            diff = max(abs(a - b) for a, b in zip([x for r in got for x in r], ref, strict=True))
            print(f"max |logprob diff| vs the last batched run: {diff:.1e}  ({name})")


def scored(
    client: LocalHFClient, reqs: list[LoglikRequest], size: int, gather: bool = True
) -> list[tuple[float, ...]]:
    """Score through the client's public path with a given batch size (and projection)."""
    client.batch_size, keep, client._gather = size, client._gather, gather and client._gather
    try:
        return [r.logprobs for r in asyncio.run(client.loglik(reqs))]
    finally:
        client._gather = keep


if __name__ == "__main__":
    main()
