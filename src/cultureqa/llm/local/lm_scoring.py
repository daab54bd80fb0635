"""Pure tensor helpers for log-likelihood scoring with a causal LM (used by ``local_hf``).

Kept apart from the client so the scoring arithmetic can be read and tested on its own.
"""

from __future__ import annotations

from typing import Any


def plan_rows(
    pairs: list[tuple[list[int], list[int]]],
) -> tuple[list[list[int]], list[int], list[int], list[int], list[int]]:
    """Sequences to run and, per scored token, its (row, position, target, owning pair)."""
    seqs: list[list[int]] = []
    shared: dict[tuple[int, ...], int] = {}
    rows, pos, targets, owner = [], [], [], []
    for p, (ctx, cont) in enumerate(pairs):
        if len(cont) == 1:
            key = tuple(ctx)
            if key not in shared:
                shared[key] = len(seqs)
                seqs.append(ctx)
            row = shared[key]
        else:
            row = len(seqs)
            seqs.append(ctx + cont)
        for j, token in enumerate(cont):
            rows.append(row)
            pos.append(len(ctx) - 1 + j)
            targets.append(token)
            owner.append(p)
    return seqs, rows, pos, targets, owner


def log_probs(model: Any, head: Any, hidden: Any) -> Any:
    """Log-softmax over the vocabulary for selected hidden states (Gemma's soft cap applied)."""
    import torch

    logits = head(hidden)
    cap = getattr(model.config, "final_logit_softcapping", None)
    logits = torch.tanh(logits / cap) * cap if cap else logits
    return torch.log_softmax(logits.float(), dim=-1)


def logits_at(model: Any, ids: Any, mask: Any, rows: list[int], pos: list[int], fast: bool) -> Any:
    """Logits at the (row, position) pairs only.

    Projecting onto Gemma's 262k-token vocabulary costs more than the rest of the model, so the
    ``fast`` path (checked at load to match the model's own logits) projects only these.
    """
    import torch

    if not fast:
        return model(input_ids=ids, attention_mask=mask).logits[rows, pos]
    hidden = model.get_decoder()(input_ids=ids, attention_mask=mask).last_hidden_state
    logits = model.get_output_embeddings()(hidden[rows, pos])
    cap = getattr(model.config, "final_logit_softcapping", None)
    return torch.tanh(logits / cap) * cap if cap else logits


def gather_matches(model: Any, tok: Any) -> bool:
    """Check once that the fast path reproduces the model's logits (models may rescale them)."""
    import torch

    ids = torch.tensor([tok.encode("a b c d", add_special_tokens=False)[:4] or [0]])
    mask, pos = torch.ones_like(ids), list(range(ids.shape[1]))
    try:
        with torch.inference_mode():
            fast = logits_at(model, ids, mask, [0] * len(pos), pos, True)
            full = model(input_ids=ids, attention_mask=mask).logits[0]
        return bool(torch.allclose(fast.float(), full.float(), atol=1e-2, rtol=1e-2))
    except Exception:  # an unusual model layout: keep the always-correct full path
        return False
