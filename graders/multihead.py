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


def missing_layers(info: dict, embed: int) -> list[str]:
    """The projections of LAYERS that a module (as `expect.introspect` confirms it) does not hold
    as nn.Linear(embed, embed); with or without a bias (a missing bias is charged by the values)."""
    linear = info.get("linear", {})
    return [name for name in LAYERS if (linear.get(name) or [None, None])[:2] != [embed, embed]]


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


def merge_heads_stacked_first(t: torch.Tensor) -> torch.Tensor:
    """The mistake of heads stacked in front of the batch, (H, B, L, d_k), merged as if that tensor
    were (B, H, L, d_k): batch elements and heads are mixed in the output."""
    batch, heads, length, head_dim = t.shape
    return t.transpose(0, 1).transpose(1, 2).reshape(batch, length, heads * head_dim)


def merge_transposed_last_two(t: torch.Tensor) -> torch.Tensor:
    """The mistake of a merge that swaps the last two axes, (B, H, d_k, L), before reshaping to (B, L, E)."""
    batch, heads, length, head_dim = t.shape
    return t.transpose(-2, -1).reshape(batch, length, heads * head_dim)


def softmax_of_transposed_scores(scores: torch.Tensor, dim: int) -> torch.Tensor:
    """The mistake of a score matrix built transposed (row = key, e.g. einsum 'bhld,bhmd->bhml'), then
    softmaxed over its last axis: each key's distribution over the queries."""
    return torch.softmax(scores.transpose(-2, -1), dim=dim)


# ---------------------------------------------------------------- the formula and torch's oracle


def forward(
    x: torch.Tensor,
    state: dict[str, torch.Tensor],
    num_heads: int,
    *,
    scale: float | None = None,
    softmax_dim: int = -1,
    softmax: Callable[[torch.Tensor, int], torch.Tensor] | None = None,
    split: Split = split_heads,
    merge: Merge = merge_heads,
    out_proj: bool = True,
    shared_qkv: bool = False,
    linear: str = "",
    no_projections: bool = False,
    out_proj_on_input: bool = False,
    value_from_key: bool = False,
    causal: bool = False,
    returns_scores: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(output (B, L, E), weights (B, H, L, L)) in float64; the keywords reproduce known mistakes.

    `scale` defaults to 1/√(E/H); `softmax(scores, dim)` replaces torch.softmax (a hand-written one
    gone wrong); `linear` is a hand-made linear's mistake (see `attention.project`);
    `no_projections` feeds x itself as Q, K and V; `out_proj_on_input` returns out_proj(x) and
    leaves the attention unused; `value_from_key` takes V from the key layer; `causal` masks later
    positions; `returns_scores` returns the scaled scores as the weights. Differentiable in `x` and
    in the tensors of `state`.
    """
    q, k, v = projections(
        x, state, num_heads, split=split, shared_qkv=shared_qkv, linear=linear, no_projections=no_projections
    )  # fmt: skip  (B, H, L, d_k) each
    v = k if value_from_key else v
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    if causal:
        mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()  # (L, L)
        softmax = softmax or (lambda s, dim: torch.softmax(s.masked_fill(~mask, float("-inf")), dim=dim))
    if softmax is None:
        context, weights = A.attention(
            q, k, v, scale=scale, softmax_dim=softmax_dim
        )  # (B,H,L,d_k), (B,H,L,L)
    else:
        weights = softmax(A.scores(q, k, scale), softmax_dim)  # (B, H, L, L)
        context = torch.matmul(weights, v.double())  # (B, H, L, d_k)
    if out_proj_on_input:
        return A.project(x, state, "out_proj"), weights
    if returns_scores:
        weights = A.scores(q, k, scale)  # (B, H, L, L)
    out = merge(context)  # (B, L, E)
    return (A.project(out, state, "out_proj", mistake=linear) if out_proj else out), weights


def projections(
    x: torch.Tensor,
    state: dict[str, torch.Tensor],
    num_heads: int,
    *,
    split: Split = split_heads,
    shared_qkv: bool = False,
    linear: str = "",
    no_projections: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """q, k, v split into heads, (B, H, L, d_k) each, in float64, with the mistakes of `forward`."""
    names = ["query"] * 3 if shared_qkv else ["query", "key", "value"]
    if no_projections:
        return tuple(split(x.double(), num_heads) for _ in names)
    return tuple(split(A.project(x, state, name, mistake=linear), num_heads) for name in names)


def head_scores(x: torch.Tensor, state: dict[str, torch.Tensor], num_heads: int) -> torch.Tensor:
    """Unscaled per-head scores q_h k_hᵀ in float64.   (B, H, L, L)"""
    q, k, _ = projections(x, state, num_heads)
    return A.scores(q, k, 1.0)


SCORE_READINGS: dict[str, dict] = {  # mistakes that change which scores each head sees, not their scale
    "right": {},
    "split_without_transpose": dict(split=split_without_transpose),
    "split_heads_last": dict(split=split_heads_last),
    "shared_qkv": dict(shared_qkv=True),
    "weight_not_transposed": dict(linear="weight_not_transposed"),
    "missing_bias": dict(linear="missing_bias"),
    "no_projections": dict(no_projections=True),
    "sequence_first": dict(sequence_first=True),
}


def score_readings(x: torch.Tensor, state: dict[str, torch.Tensor], num_heads: int) -> list[torch.Tensor]:
    """Unscaled per-head scores q_h k_hᵀ as the right layer and each mistake of `SCORE_READINGS`
    computes them, (B, H, L, L) each: the scale of the weights is read against every one of them,
    so that a wrong split or projection does not hide a right scale."""
    out = []
    for options in SCORE_READINGS.values():
        options = dict(options)
        seen = x.transpose(0, 1) if options.pop("sequence_first", False) else x  # (L, B, E) read as (B, L, E)
        q, k, _ = projections(seen, state, num_heads, **options)
        out.append(A.scores(q, k, 1.0))
    return out


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


def large_score_inputs(rng: torch.Generator, batch: int, length: int, embed: int, heads: int, largest: float):
    """Weights and x whose scaled per-head scores reach exactly `largest`, for every seed: the
    query and key weights are scaled until they do (biases zero), and the first token of each
    sample is zero, so its query is zero and its row of scores sits `largest` below the largest
    (a softmax shifted by the global maximum underflows to 0/0 there)."""
    state = A.linear_weights(LAYERS, embed, embed, rng)
    x = torch.randn(batch, length, embed, generator=rng)
    x[:, 0] = 0.0
    for name in ("query", "key"):
        state[f"{name}.bias"] = torch.zeros(embed)
    reached = float(forward(x, state, heads, softmax=lambda s, dim: s)[1].max())  # scaled scores
    factor = math.sqrt(largest / reached)
    for name in ("query", "key"):
        state[f"{name}.weight"] = state[f"{name}.weight"] * factor
    return state, x


def widened(state: dict[str, torch.Tensor], num_heads: int, times: int = 4) -> dict[str, torch.Tensor]:
    """The weights of a layer `times` as wide (E' = times·E) whose heads are this layer's heads
    padded with zeros: fed x followed by zeros, head h sees q_h and k_h followed by zeros, so its
    dot products are unchanged while d_k' = times·d_k. out_proj is zero (only the weights matter)."""
    embed = state["query.weight"].shape[0]
    head_dim = embed // num_heads
    wide = times * embed
    out = {}
    for name in ("query", "key", "value"):
        weight = torch.zeros(wide, wide, dtype=state[f"{name}.weight"].dtype)
        bias = torch.zeros(wide, dtype=state[f"{name}.bias"].dtype)
        for h in range(num_heads):
            rows = slice(h * head_dim, (h + 1) * head_dim)  # head h here
            wide_rows = slice(h * times * head_dim, h * times * head_dim + head_dim)  # its start there
            weight[wide_rows, :embed] = state[f"{name}.weight"][rows]
            bias[wide_rows] = state[f"{name}.bias"][rows]
        out[f"{name}.weight"], out[f"{name}.bias"] = weight, bias
    out["out_proj.weight"] = torch.zeros(wide, wide)
    out["out_proj.bias"] = torch.zeros(wide)
    return out


# ---------------------------------------------------------------- known mistakes


def variants(
    x: torch.Tensor, state: dict[str, torch.Tensor], num_heads: int
) -> dict[str, tuple[torch.Tensor, torch.Tensor] | list[tuple[torch.Tensor, torch.Tensor]]]:
    """(output, weights) pairs of common mistakes, keyed by diagnosis id, for `expect.close` with
    `joint` (an output check is joined by the weights, a weights check by the output: see `swap`).

    `weights_averaged` gives the (B, L, L) mean over heads that `nn.MultiheadAttention` returns
    by default. A wrong split comes as a list: merged back the same wrong way, or the right way.
    """
    embed = x.shape[-1]
    head_dim = embed // num_heads
    wrong = {
        "no_scaling": dict(scale=1.0),
        "scale_sqrt_embed": dict(scale=1 / math.sqrt(embed)),
        "divide_by_head_dim": dict(scale=1 / head_dim),
        "softmax_wrong_axis": dict(softmax_dim=-2),
        "softmax_over_heads": dict(softmax_dim=1),
        "naive_softmax": dict(softmax=A.naive_softmax),
        "global_max_softmax": dict(softmax=A.global_max_softmax),
        "split_without_transpose": dict(split=split_without_transpose, merge=merge_without_transpose),
        "split_heads_last": dict(split=split_heads_last, merge=merge_heads_last),
        "merge_interleaved": dict(merge=merge_heads_last),
        "shared_qkv": dict(shared_qkv=True),
        "value_from_key": dict(value_from_key=True),
        "unwanted_mask": dict(causal=True),
        "returns_scores": dict(returns_scores=True),
        "softmax_over_batch": dict(softmax=softmax_over_folded_batch),
        "merge_without_transpose": dict(merge=merge_without_transpose),
        "missing_out_proj": dict(out_proj=False),
        "out_proj_on_input": dict(out_proj_on_input=True),
        "weight_not_transposed": dict(linear="weight_not_transposed"),
        "missing_bias": dict(linear="missing_bias"),
        "no_projections": dict(no_projections=True),
        "heads_stacked_first": dict(merge=merge_heads_stacked_first),
        "scores_transposed": dict(softmax=softmax_of_transposed_scores),
        "merge_transposed_wrong_axes": dict(merge=merge_transposed_last_two),
    }
    out = {diagnosis: forward(x, state, num_heads, **options) for diagnosis, options in wrong.items()}
    splits = {"split_without_transpose": split_without_transpose, "split_heads_last": split_heads_last}
    for diagnosis, split in splits.items():
        out[diagnosis] = [out[diagnosis], forward(x, state, num_heads, split=split)]  # merged either way
    right_out, right_w = forward(x, state, num_heads)
    out["weights_averaged"] = (right_out, right_w.mean(1))
    out["residual_added"] = (right_out + x.double(), right_w)
    seq_out, seq_w = forward(x.transpose(0, 1), state, num_heads)  # x read as (L, B, E)
    out["sequence_first"] = (seq_out.transpose(0, 1), seq_w)
    q, k, v = projections(x, state, num_heads)  # (B, H, L, d_k) each
    self_w = torch.softmax(A.scores(q, q), dim=-1)  # k = q: each head compares queries with queries
    out["keys_from_queries"] = (A.project(merge_heads(self_w @ v.double()), state, "out_proj"), self_w)
    value_w = torch.softmax(A.scores(q, v), dim=-1)  # the values where the keys belong: q·vᵀ
    out["keys_from_values"] = (A.project(merge_heads(value_w @ v.double()), state, "out_proj"), value_w)
    out["weights_returned_transposed"] = (right_out, right_w.transpose(-2, -1))  # the output is right
    right_context = merge_heads(right_w @ v.double())  # (B, L, E) before the output layer
    out["wrong_output_layer"] = [
        (A.project(right_context, state, name), right_w) for name in ("value", "query", "key")
    ]
    return out


def softmax_over_folded_batch(scores: torch.Tensor, dim: int) -> torch.Tensor:
    """The mistake `F.softmax(scores, dim=0)` on scores folded to (B·H, L, L).   (B, H, L, L)"""
    batch, heads, length, keys = scores.shape
    return torch.softmax(scores.reshape(batch * heads, length, keys), dim=0).reshape(scores.shape)


def scale_estimator(x: torch.Tensor, state: dict[str, torch.Tensor], num_heads: int):
    """An `expect.close` estimator naming a wrong per-head scale (e.g. 1/4 where 1/2 = 1/√(E/H))."""
    head_dim = x.shape[-1] // num_heads
    return A.scale_estimator(head_scores(x, state, num_heads), 1 / math.sqrt(head_dim), "√(E/H)")
