"""Multi-head attention maths for the graders: float64 oracles, known wrong variants, estimators.

Conventions (the ones `nn.MultiheadAttention` uses, and the statement of exercise 4 states):
`x` is `(B, L, E)`; the layers `query`, `key`, `value`, `out_proj` are `nn.Linear(E, E)`; head `h`
owns the contiguous features `[h·d_k, (h+1)·d_k)` with `d_k = E / H`; each head's scores are scaled
by `1/√d_k`; the heads' contexts are concatenated back in head order and passed through `out_proj`.

Everything here is an independent re-derivation (never the reference solution). `forward` takes
switches that reproduce the mistakes students make, so `variants` can hand `expect.close` the
output of each wrong formula under its diagnosis id.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn as nn

from graders import attention as A

LAYERS = ["query", "key", "value", "out_proj"]

Split = Callable[[torch.Tensor, int], torch.Tensor]
Merge = Callable[[torch.Tensor], torch.Tensor]


# ---------------------------------------------------------------- head layouts


def split_heads(t: torch.Tensor, num_heads: int) -> torch.Tensor:
    """(B, L, E) -> (B, H, L, d_k): head h takes the features [h·d_k, (h+1)·d_k)."""
    batch, length, embed = t.shape
    return t.reshape(batch, length, num_heads, embed // num_heads).transpose(1, 2)


def merge_heads(t: torch.Tensor) -> torch.Tensor:
    """(B, H, L, d_k) -> (B, L, E): the inverse of `split_heads`."""
    batch, heads, length, head_dim = t.shape
    return t.transpose(1, 2).reshape(batch, length, heads * head_dim)


def split_without_transpose(t: torch.Tensor, num_heads: int) -> torch.Tensor:
    """The mistake `t.view(B, H, L, d_k)`: the memory of (B, L, E) reread, tokens mixed across heads."""
    batch, length, embed = t.shape
    return t.reshape(batch, num_heads, length, embed // num_heads)


def merge_without_transpose(t: torch.Tensor) -> torch.Tensor:
    """The mistake `t.view(B, L, E)` straight from (B, H, L, d_k): heads mixed across tokens."""
    batch, heads, length, head_dim = t.shape
    return t.reshape(batch, length, heads * head_dim)


def split_heads_last(t: torch.Tensor, num_heads: int) -> torch.Tensor:
    """The mistake `t.view(B, L, d_k, H)`: head h takes the strided features h, h+H, h+2H, …"""
    batch, length, embed = t.shape
    return t.reshape(batch, length, embed // num_heads, num_heads).permute(0, 3, 1, 2)


def merge_heads_last(t: torch.Tensor) -> torch.Tensor:
    """The inverse of `split_heads_last` (what a student who split that way writes to merge)."""
    batch, heads, length, head_dim = t.shape
    return t.permute(0, 2, 3, 1).reshape(batch, length, head_dim * heads)


# ---------------------------------------------------------------- the formula and torch's oracle


def forward(
    x: torch.Tensor,
    state: dict[str, torch.Tensor],
    num_heads: int,
    *,
    scale: float | None = None,
    softmax_dim: int = -1,
    split: Split = split_heads,
    merge: Merge = merge_heads,
    out_proj: bool = True,
    shared_qkv: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(output (B, L, E), weights (B, H, L, L)) in float64; the keywords reproduce known mistakes.

    `scale` defaults to 1/√(E/H). Differentiable in `x` and in the tensors of `state`.
    """
    names = ["query"] * 3 if shared_qkv else ["query", "key", "value"]
    q, k, v = (split(A.project(x, state, name), num_heads) for name in names)  # (B, H, L, d_k)
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    context, weights = A.attention(q, k, v, scale=scale, softmax_dim=softmax_dim)  # (B,H,L,d_k), (B,H,L,L)
    out = merge(context)  # (B, L, E)
    return (A.project(out, state, "out_proj") if out_proj else out), weights


def head_scores(x: torch.Tensor, state: dict[str, torch.Tensor], num_heads: int) -> torch.Tensor:
    """Unscaled per-head scores q_h k_hᵀ in float64.   (B, H, L, L)"""
    q, k = (split_heads(A.project(x, state, name), num_heads) for name in ("query", "key"))
    return A.scores(q, k, 1.0)


def torch_oracle(
    x: torch.Tensor, state: dict[str, torch.Tensor], num_heads: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """torch's own `nn.MultiheadAttention` in float64 with the student's weights copied in.

    `in_proj_weight` stacks W_q, W_k, W_v (in that order); weights come back per head,
    `(B, H, L, L)`, because `average_attn_weights=False`.
    """
    embed = x.shape[-1]
    mha = nn.MultiheadAttention(embed, num_heads, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([state[f"{n}.weight"] for n in ("query", "key", "value")]))
        mha.in_proj_bias.copy_(torch.cat([state[f"{n}.bias"] for n in ("query", "key", "value")]))
        mha.out_proj.weight.copy_(state["out_proj.weight"])
        mha.out_proj.bias.copy_(state["out_proj.bias"])
        x64 = x.double()
        out, weights = mha.eval()(x64, x64, x64, need_weights=True, average_attn_weights=False)
    return out, weights


# ---------------------------------------------------------------- known mistakes


def variants(
    x: torch.Tensor, state: dict[str, torch.Tensor], num_heads: int
) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """(output variants, weight variants) of common mistakes, keyed by diagnosis id.

    A mistake that leaves the weights right (a wrong merge, no output projection) appears only
    among the outputs; `weights_averaged` is the (B, L, L) mean over heads that
    `nn.MultiheadAttention` returns by default.
    """
    embed = x.shape[-1]
    head_dim = embed // num_heads
    wrong = {
        "no_scaling": dict(scale=1.0),
        "scale_sqrt_embed": dict(scale=1 / math.sqrt(embed)),
        "divide_by_head_dim": dict(scale=1 / head_dim),
        "softmax_wrong_axis": dict(softmax_dim=-2),
        "softmax_over_heads": dict(softmax_dim=1),
        "split_without_transpose": dict(split=split_without_transpose, merge=merge_without_transpose),
        "split_heads_last": dict(split=split_heads_last, merge=merge_heads_last),
        "shared_qkv": dict(shared_qkv=True),
        "merge_without_transpose": dict(merge=merge_without_transpose),
        "missing_out_proj": dict(out_proj=False),
    }
    outputs, weights = {}, {}
    right_w = forward(x, state, num_heads)[1]
    for diagnosis, options in wrong.items():
        out, w = forward(x, state, num_heads, **options)
        outputs[diagnosis] = out
        if not torch.allclose(w, right_w):
            weights[diagnosis] = w
    weights["weights_averaged"] = right_w.mean(1)
    return outputs, weights


def scale_estimator(x: torch.Tensor, state: dict[str, torch.Tensor], num_heads: int):
    """An `expect.close` estimator naming a wrong per-head scale (e.g. 1/4 where 1/2 = 1/√(E/H))."""
    head_dim = x.shape[-1] // num_heads
    return A.scale_estimator(head_scores(x, state, num_heads), 1 / math.sqrt(head_dim), "√(E/H)")
