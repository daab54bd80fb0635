"""Pin the CPU kernels of torch, MKL and oneDNN so a float32 model gives the same bits everywhere.

Each of the three libraries dispatches to the widest vector unit the CPU has, and AVX-512 kernels
sum in another order than AVX2 ones: on one machine the embedded model's log-likelihood of one
option read -19.611593 with AVX-512 and -19.611535 with AVX2. The 10-digit scores in
``predictions.parquet`` then hash differently on a machine with AVX-512 than on one without, and a
fresh clone's ``dvc repro`` rewrites ``dvc.lock``. Capping all three at one instruction set makes
the bits a function of inputs, code and thread count alone (the thread count is a model option).

The variables are read when each library first runs a kernel, not at import, so setting them just
before the model loads works; :func:`pin` then asks torch which kernels it chose and refuses to go
on when they are not the pinned ones (a kernel ran earlier in the process, or the CPU lacks them).
"""

from __future__ import annotations

import os

KERNEL_SETS: dict[str, dict[str, str]] = {
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
}
"""Environment of each kernel set: ATen's dispatch cap, MKL's conditional numerical
reproducibility branch and oneDNN's instruction-set cap. AVX2 is the widest set that every x86-64
server of the last decade has, so it is the one a result can be reproduced on."""


class KernelPinError(RuntimeError):
    """The pinned kernels could not be applied; results would not match other machines."""


def pin(kernels: str | None) -> str:
    """Cap the kernels before torch runs its first one; return the capability torch reports.

    ``kernels`` is a key of :data:`KERNEL_SETS`, or None for the CPU's best.
    """
    if kernels is not None and kernels not in KERNEL_SETS:
        known = ", ".join(sorted(KERNEL_SETS))
        raise KernelPinError(f"options.cpu_kernels must be one of {known} or null, not {kernels!r}")
    for name, value in KERNEL_SETS.get(kernels or "", {}).items():
        os.environ[name] = value
    import torch

    chosen = str(torch.backends.cpu.get_cpu_capability())
    if kernels is not None and chosen.lower() != kernels:
        raise KernelPinError(
            f"torch runs {chosen} kernels, not the pinned {kernels}: a torch kernel ran in this "
            f"process before the model loaded, or this CPU lacks {kernels.upper()}; scores would "
            "differ from other machines' (set options.cpu_kernels: null to accept that)"
        )
    return chosen
