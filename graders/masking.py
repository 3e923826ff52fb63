"""Masks and cross-attention for the graders: float64 formulas, torch's oracle, known mistakes.

Conventions (exercise 5's statement): a bool mask is True where a query may attend a key, as
`F.scaled_dot_product_attention` reads a bool `attn_mask`; a query with no key allowed gets zero
weights and a zero context. `CrossAttention` has the layers of exercise 4 (`query`, `key`, `value`,
`out_proj`), takes queries from the decoder side x and keys and values from `memory`, and reads
`memory_mask` (B, S) as True = a real memory position (`nn.MultiheadAttention`'s
`key_padding_mask` is the opposite: True = ignore).

Independent re-derivations (never the reference solution); `attention` and `cross` take a `mistake`
that reproduces what goes wrong, so `variants` can hand `expect.close` each wrong formula's output.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn

from graders import attention as A
from graders import multihead as M

MASK_MISTAKES = [
    "mask_inverted", "mask_ignored", "mask_after_softmax", "mask_multiplied", "no_scaling",
    "fully_masked_uniform", "fully_masked_nan", "empty_test_uses_all", "context_before_zeroing",
    "empty_test_needs_two", "divide_by_dk", "softmax_wrong_axis", "weights_before_zeroing",
    "empty_test_wrong_axis", "scale_uses_num_keys", "scale_uses_dv",
]  # fmt: skip
CROSS_MISTAKES = [
    "self_vs_cross", "causal_in_cross", "memory_mask_ignored", "memory_mask_inverted", "no_scaling",
    "divide_by_dk", "softmax_wrong_axis", "merge_without_transpose", "missing_out_proj",
    "memory_zeroed_not_masked",
]  # fmt: skip
Pair = tuple[torch.Tensor, torch.Tensor]


def causal(length: int, keys: int | None = None) -> torch.Tensor:
    """(L, S) bool, True where key j ≤ query i."""
    return torch.ones(length, length if keys is None else keys, dtype=torch.bool).tril()


def attention(q, k, v, mask=None, *, mistake: str = "") -> tuple[torch.Tensor, torch.Tensor]:
    """(context, weights) in float64; `mask` bool, broadcastable to (..., L, S), True = may attend."""
    scale = {
        "no_scaling": 1.0,
        "divide_by_dk": 1 / q.shape[-1],
        "scale_uses_num_keys": 1 / math.sqrt(k.shape[-2]),
        "scale_uses_dv": 1 / math.sqrt(v.shape[-1]),  # the values' width d_v
    }
    scale = scale.get(mistake, 1 / math.sqrt(q.shape[-1]))  # `scale_uses_num_keys`: 1/√S, the keys' count
    scores = A.scores(q, k, scale)  # (..., L, S)
    axis = -2 if mistake == "softmax_wrong_axis" else -1  # over the queries: each column sums to 1
    if mask is None or mistake == "mask_ignored":
        weights = torch.softmax(scores, dim=axis)
        return weights @ v.double(), weights
    mask = torch.broadcast_to(~mask if mistake == "mask_inverted" else mask, scores.shape)
    if mistake == "mask_after_softmax":  # zeroed after the softmax, never renormalised
        weights = torch.softmax(scores, dim=-1) * mask
    elif mistake == "mask_multiplied":  # masked scores become 0, not −inf
        weights = torch.softmax(scores * mask, dim=-1)
    elif mistake == "fully_masked_uniform":  # −1e9 instead of −inf: a row with no key is uniform
        weights = torch.softmax(scores.masked_fill(~mask, -1e9), dim=-1)
    elif mistake == "fully_masked_nan":  # −inf everywhere in a row: 0/0
        weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    else:  # a row with no key allowed is zero; `empty_test_uses_all`: zero unless every key is allowed;
        # `empty_test_needs_two`: the count of allowed keys tested with > 1, so a row of one key is zero too
        allowed = (
            mask.all(dim=-1, keepdim=True) if mistake == "empty_test_uses_all"
            else mask.sum(dim=-1, keepdim=True) > 1 if mistake == "empty_test_needs_two"
            else mask.any(dim=-2, keepdim=True) if mistake == "empty_test_wrong_axis"  # key columns, not rows
            else mask.any(dim=-1, keepdim=True)
        )  # fmt: skip
        weights = torch.softmax(scores.masked_fill(~mask, float("-inf")).masked_fill(~allowed, 0.0), dim=axis)
        if mistake == "context_before_zeroing":  # the context taken while an empty row is still uniform
            return weights @ v.double(), weights * allowed
        if mistake == "weights_before_zeroing":  # the context zeroed, the weights returned still uniform
            return (weights * allowed) @ v.double(), weights
        weights = weights * allowed
    return weights @ v.double(), weights


def variants(q, k, v, mask) -> dict[str, Pair | list[Pair]]:
    """(context, weights) of each known masking mistake that differs from the right answer here. An
    inverted mask comes in the three ways a row left with no key can end (zeros, NaN, uniform), as
    whoever inverts the mask usually keeps the rest of their code."""
    right = attention(q, k, v, mask)
    out: dict[str, Pair | list[Pair]] = {m: attention(q, k, v, mask, mistake=m) for m in MASK_MISTAKES}
    if mask is not None:
        out["mask_inverted"] = [out["mask_inverted"]] + [
            attention(q, k, v, ~mask, mistake=empty) for empty in ("fully_masked_nan", "fully_masked_uniform")
        ]
        out["mask_times_inf"] = times_inf(q, k, v, mask)
        if _same(out["empty_test_wrong_axis"], out["fully_masked_nan"]):  # no key column empty here:
            del out["empty_test_wrong_axis"]  # both leave an empty row 0/0, and cannot be told apart
        padding = two_d_as_padding(q, k, v, mask)
        if padding is not None:
            out["two_d_mask_as_padding"] = padding
    return {d: pair for d, pair in out.items() if not _same(pair, right)}


def times_inf(q, k, v, mask) -> list[Pair]:
    """(context, weights) when the mask is made additive by a product with −inf,
    `scores + (~mask).float() * float("-inf")`: 0 × (−inf) is NaN, so every row that allows a key is
    NaN; a row with no key ends zero (where the code zeroes such rows) or NaN (where it does not)."""
    scores = A.scores(q, k, 1 / math.sqrt(q.shape[-1]))  # (..., L, S)
    allowed = torch.broadcast_to(mask, scores.shape).any(dim=-1, keepdim=True)  # (..., L, 1)
    nan = torch.full_like(scores, float("nan"))
    zeroed = torch.where(allowed, nan, torch.zeros_like(scores))
    d_v = v.shape[-1]
    return [(w[..., :1].expand(*w.shape[:-1], d_v).clone(), w) for w in (zeroed, nan)]


def padding_shape(mask: torch.Tensor, scores_shape) -> tuple[int, ...] | None:
    """The shape of the weights when a 2-D mask, (L, S) by this exercise's convention, is read as a
    (B, S) padding mask and reshaped to (B, 1, 1, S): it broadcasts against the scores into a shape
    of its own (or not at all: None)."""
    if mask.dim() != 2:
        return None
    try:
        return tuple(torch.broadcast_shapes((mask.shape[0], 1, 1, mask.shape[-1]), tuple(scores_shape)))
    except RuntimeError:
        return None


def two_d_as_padding(q, k, v, mask) -> Pair | None:
    """(context, weights) when a 2-D mask is read as a (B, S) padding mask, `mask[:, None, None, :]`:
    the result takes the mask's first axis as a new leading one. None where that does not broadcast."""
    scores = A.scores(q, k, 1 / math.sqrt(q.shape[-1]))  # (..., L, S)
    shape = padding_shape(mask, scores.shape)
    if shape is None:
        return None
    wide = torch.broadcast_to(mask[:, None, None, :], shape)
    allowed = wide.any(dim=-1, keepdim=True)
    filled = scores.expand(shape).masked_fill(~wide, float("-inf")).masked_fill(~allowed, 0.0)
    weights = torch.softmax(filled, dim=-1) * allowed
    return weights @ v.double(), weights


def _same(a: Pair | list[Pair], b: Pair) -> bool:
    if isinstance(a, list):
        return all(_same(one, b) for one in a)
    return all(
        x.shape == y.shape and bool(torch.allclose(x, y, rtol=1e-9, atol=1e-12, equal_nan=True))
        for x, y in zip(a, b, strict=True)
    )


# ---------------------------------------------------------------- cross-attention


def cross(x, memory, state, heads, memory_mask=None, *, mistake: str = "", empty: str = "") -> Pair:
    """(output (B, L, E), weights (B, H, L, S)) of CrossAttention in float64, or as `mistake` has it;
    `empty` is how a query with no key allowed ends (a masking mistake's name, or "" for zeros)."""
    source = x if mistake == "self_vs_cross" else memory  # the lesson's confusion: K and V from the decoder
    if mistake == "memory_zeroed_not_masked" and memory_mask is not None:  # pads zeroed, never masked
        source = memory * memory_mask[..., None]
    split = M.split_without_transpose if mistake.startswith("split_without_transpose") else M.split_heads
    merge = M.merge_without_transpose if mistake.endswith("without_transpose") else M.merge_heads
    q, k, v = (split(A.project(t, state, n), heads) for t, n in ((x, "query"), (source, "key"),
                                                                  (source, "value")))  # fmt: skip
    mask = None
    unmasked = ("memory_mask_ignored", "self_vs_cross", "memory_zeroed_not_masked")
    if memory_mask is not None and mistake not in unmasked:
        mask = (~memory_mask if mistake == "memory_mask_inverted" else memory_mask)[:, None, None, :]
    if memory_mask is not None and mistake.startswith("memory_mask_batch_mixed"):
        # the (B, S) mask copied to the heads along the batch axis and then viewed the other way:
        # head h of batch b gets the mask of another batch element
        batch, keys = memory_mask.shape
        if mistake.endswith("tiled"):  # repeat(H, 1).view(B, H, 1, S): batch (b·H + h) mod B
            mask = memory_mask.repeat(heads, 1).view(batch, heads, 1, keys)
        else:  # repeat_interleave(H, 0).view(H, B, 1, S).transpose(0, 1): batch (h·B + b) // H
            mask = memory_mask.repeat_interleave(heads, 0).view(heads, batch, 1, keys).transpose(0, 1)
    if mistake == "causal_in_cross":  # the decoder's causal mask applied to the memory as well
        future = causal(q.shape[-2], k.shape[-2])
        mask = future if mask is None else mask & future
    scaling = mistake if mistake in ("no_scaling", "divide_by_dk", "softmax_wrong_axis") else empty
    context, weights = attention(q, k, v, mask, mistake=scaling)
    if mistake == "missing_out_proj":  # the heads merged back and returned without the output layer
        return merge(context), weights
    return A.project(merge(context), state, "out_proj"), weights


def cross_variants(x, memory, state, heads, memory_mask=None) -> dict[str, Pair | list[Pair]]:
    """(output, weights) of each known cross-attention mistake that differs from the right answer."""
    right = cross(x, memory, state, heads, memory_mask)
    out: dict[str, Pair | list[Pair]] = {
        m: cross(x, memory, state, heads, memory_mask, mistake=m) for m in CROSS_MISTAKES
    }
    # heads split by a view with no transpose, merged back the same way or with the transpose
    out["split_without_transpose"] = [
        cross(x, memory, state, heads, memory_mask, mistake=m)
        for m in ("split_without_transpose", "split_without_transpose_merged_right")
    ]
    if memory_mask is not None:  # each batch element's mask given to other batch elements' heads
        out["memory_mask_batch_mixed"] = [
            cross(x, memory, state, heads, memory_mask, mistake=m)
            for m in ("memory_mask_batch_mixed_tiled", "memory_mask_batch_mixed_interleaved")
        ]
    if memory_mask is not None:  # an inverted mask leaves the unpadded sequences with no key
        out["memory_mask_inverted"] = [out["memory_mask_inverted"]] + [
            cross(x, memory, state, heads, memory_mask, mistake="memory_mask_inverted", empty=empty)
            for empty in ("fully_masked_nan", "fully_masked_uniform")
        ]
    return {d: pair for d, pair in out.items() if not _same(pair, right)}


def torch_cross_oracle(x, memory, state, heads, memory_mask=None) -> tuple[torch.Tensor, torch.Tensor]:
    """torch's own `nn.MultiheadAttention` in float64 with the student's weights copied in, queries from
    x and keys and values from memory; the mask `~memory_mask` (True: a padded key) passed as torch's
    per-head `attn_mask`, which torch merges exactly as it would a `key_padding_mask` (the outputs are
    bitwise equal), without the latter's shape check: `torch._check_with` imports sympy (~0.6 s)."""
    embed = x.shape[-1]
    mha = nn.MultiheadAttention(embed, heads, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([state[f"{n}.weight"] for n in ("query", "key", "value")]))
        mha.in_proj_bias.copy_(torch.cat([state[f"{n}.bias"] for n in ("query", "key", "value")]))
        mha.out_proj.weight.copy_(state["out_proj.weight"])
        mha.out_proj.bias.copy_(state["out_proj.bias"])
        padding = None
        if memory_mask is not None:  # (B, S) -> (B * heads, L, S), batch-major as torch orders heads
            batch, keys = memory_mask.shape
            padding = (~memory_mask)[:, None, None, :].expand(batch, heads, x.shape[-2], keys)
            padding = padding.reshape(batch * heads, x.shape[-2], keys)
        out, weights = mha.eval()(x.double(), memory.double(), memory.double(), attn_mask=padding,
                                  need_weights=True, average_attn_weights=False)  # fmt: skip
    return out, weights


def padding_mask(rng: torch.Generator, batch: int, keys: int) -> torch.Tensor:
    """(B, S) bool, True = a real position: sequence b has its last few positions padded (at least one
    real position and one padded in every sequence but the first, which has none padded)."""
    lengths = [keys] + [int(n) for n in torch.randint(1, keys, (batch - 1,), generator=rng)]
    return torch.arange(keys)[None, :] < torch.tensor(lengths)[:, None]


def random_mask(rng: torch.Generator, shape, *, full_rows: int = 0) -> torch.Tensor:
    """A bool mask of `shape` (..., L, S), about half True, every row with at least one key allowed;
    the first `full_rows` rows of every matrix allow none."""
    mask = torch.rand(shape, generator=rng) < 0.5
    first = torch.randint(0, shape[-1], (*shape[:-1], 1), generator=rng)
    mask.scatter_(-1, first, True)
    mask[..., :full_rows, :] = False
    return mask


def masked_attention(q, k, v, mask=None):
    """A correct masked_attention, put in place of a student's own when that one cannot answer, so
    that the CrossAttention built on it is graded as written (error carried forward). It runs
    inside the sandbox, appended to the student's module: it imports what it needs itself."""
    import torch

    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5  # (..., L, S)
    if mask is None:
        weights = torch.softmax(scores, dim=-1)
        return weights @ v, weights
    allowed = mask.any(dim=-1, keepdim=True)
    scores = scores.masked_fill(~mask, float("-inf")).masked_fill(~allowed, 0.0)
    weights = torch.softmax(scores, dim=-1) * allowed
    return weights @ v, weights
