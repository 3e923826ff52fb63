"""Fairness the other way round: correct solutions written differently from the reference earn full marks.

Also tests the graders' own multi-head maths (the float64 formula equals torch's
nn.MultiheadAttention) and the static check that refuses torch's built-in attention without
refusing the student's own helpers.
"""

from __future__ import annotations

import pytest
import torch
from conftest import PROJECT

from graders import attention as A
from graders import multihead as M

EX02 = "ex02_self_attention"
EX04 = "ex04_multi_head_attention"

EX02_EINSUM_FLOAT64 = '''
import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v):
    """einsum, a hand-written softmax that subtracts the max, float64 inside."""
    dtype = q.dtype
    q, k, v = q.double(), k.double(), v.double()
    scores = torch.einsum("...ld,...sd->...ls", q, k) / q.shape[-1] ** 0.5
    scores = scores - scores.amax(dim=-1, keepdim=True)
    e = scores.exp()
    weights = e / e.sum(dim=-1, keepdim=True)
    return torch.einsum("...ls,...sd->...ld", weights, v).to(dtype), weights.to(dtype)


class SimpleSelfAttention(nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        self.query, self.key, self.value = (nn.Linear(embed_dim, embed_dim) for _ in range(3))

    def forward(self, x):
        return scaled_dot_product_attention(self.query(x), self.key(x), self.value(x))
'''

EX02_BMM = '''
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v):
    """Leading dimensions flattened into one batch for torch.bmm, restored at the end."""
    lead = q.shape[:-2]
    L, d_k = q.shape[-2:]
    S, d_v = v.shape[-2:]
    q3, k3, v3 = q.reshape(-1, L, d_k), k.reshape(-1, S, d_k), v.reshape(-1, S, d_v)
    weights = F.softmax(torch.bmm(q3, k3.permute(0, 2, 1)) * (1.0 / math.sqrt(d_k)), dim=2)
    context = torch.bmm(weights, v3)
    return context.reshape(*lead, L, d_v), weights.reshape(*lead, L, S)


class SimpleSelfAttention(nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        self.query = nn.Linear(embed_dim, embed_dim)
        self.key = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)
        self.dropout = nn.Dropout(0.0)

    def forward(self, x):
        q, k, v = self.query(x), self.key(x), self.value(x)
        context, weights = scaled_dot_product_attention(q, k, v)
        return self.dropout(context), weights
'''

EX04_LOOP_OVER_HEADS = '''
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v):
    """The student's own helper from exercise 2: allowed, it is not torch's."""
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    return weights @ v, weights


class SimpleMultiHeadAttention(nn.Module):
    """One head at a time: slice the features, attend, concatenate."""

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError("embed_dim must be a multiple of num_heads")
        self.h, self.d = num_heads, embed_dim // num_heads
        self.query = nn.Linear(embed_dim, embed_dim)
        self.key = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        q, k, v = self.query(x), self.key(x), self.value(x)
        contexts, weights = [], []
        for h in range(self.h):
            part = slice(h * self.d, (h + 1) * self.d)
            c, w = scaled_dot_product_attention(q[..., part], k[..., part], v[..., part])
            contexts.append(c)
            weights.append(w)
        return self.out_proj(torch.cat(contexts, dim=-1)), torch.stack(weights, dim=1)


if __name__ == "__main__":
    from torch.nn import MultiheadAttention  # comparing with torch while developing is fine here

    print(MultiheadAttention(8, 2))
'''

EX04_EINSUM_FLOAT64 = '''
import torch
import torch.nn as nn


class SimpleMultiHeadAttention(nn.Module):
    """reshape + permute, einsum, float64 inside, cast back."""

    def __init__(self, embed_dim, num_heads):
        if embed_dim % num_heads != 0:
            raise ValueError(f"{embed_dim} % {num_heads} != 0")
        super().__init__()
        self.num_heads = num_heads
        for name in ("query", "key", "value", "out_proj"):
            setattr(self, name, nn.Linear(embed_dim, embed_dim))

    def heads(self, t):
        B, L, E = t.shape
        return t.reshape(B, L, self.num_heads, E // self.num_heads).permute(0, 2, 1, 3)

    def forward(self, x):
        B, L, E = x.shape
        q, k, v = (self.heads(layer(x).double()) for layer in (self.query, self.key, self.value))
        scores = torch.einsum("bhid,bhjd->bhij", q, k) * (q.shape[-1] ** -0.5)
        weights = scores.softmax(dim=3)
        context = torch.einsum("bhij,bhjd->bhid", weights, v).permute(0, 2, 1, 3).reshape(B, L, E)
        return self.out_proj(context.to(x.dtype)), weights.to(x.dtype)
'''

EX04_BMM_FUSED = '''
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class SimpleMultiHeadAttention(nn.Module):
    """Q, K and V in one F.linear with stacked weights, heads flattened into the batch for bmm,
    a contiguous().view() merge, and dropout that eval mode switches off."""

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        if embed_dim % num_heads != 0:
            raise ValueError("embed_dim must be divisible by num_heads")
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.query = nn.Linear(embed_dim, embed_dim)
        self.key = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.attn_dropout = nn.Dropout(0.1)

    def forward(self, x):
        B, L, E = x.shape
        H, d = self.num_heads, self.head_dim
        w = torch.cat([self.query.weight, self.key.weight, self.value.weight])
        b = torch.cat([self.query.bias, self.key.bias, self.value.bias])
        q, k, v = F.linear(x, w, b).chunk(3, dim=-1)
        q, k, v = (t.view(B, L, H, d).transpose(1, 2).reshape(B * H, L, d) for t in (q, k, v))
        weights = torch.softmax(torch.bmm(q / math.sqrt(d), k.transpose(1, 2)), dim=-1)
        context = torch.bmm(self.attn_dropout(weights), v)
        merged = context.view(B, H, L, d).transpose(1, 2).contiguous().view(B, L, E)
        return self.out_proj(merged), weights.view(B, H, L, L)
'''

ALTERNATIVES = {
    "ex02_einsum_float64": (EX02, EX02_EINSUM_FLOAT64),
    "ex02_bmm": (EX02, EX02_BMM),
    "ex04_loop_over_heads": (EX04, EX04_LOOP_OVER_HEADS),
    "ex04_einsum_float64": (EX04, EX04_EINSUM_FLOAT64),
    "ex04_bmm_fused": (EX04, EX04_BMM_FUSED),
}


@pytest.mark.parametrize("name", list(ALTERNATIVES))
def test_alternative_solution_scores_full_marks(name, grade_files):
    exercise, source = ALTERNATIVES[name]
    report = grade_files({f"{exercise}.py": source}, exercises=[exercise], seed=20261129)
    (result,) = report.exercises
    assert [(c.id, c.status, c.message) for c in result.checks if c.status != "passed"] == []
    assert result.score == result.max_score > 0


# ---------------------------------------------------------------- the graders' own maths


@pytest.mark.parametrize(
    "batch, length, embed, heads", [(2, 5, 12, 3), (3, 7, 12, 2), (1, 6, 8, 4), (3, 4, 10, 5)]
)
def test_multihead_formula_equals_torch(batch, length, embed, heads):
    rng = torch.Generator().manual_seed(7)
    state = A.linear_weights(M.LAYERS, embed, embed, rng)
    x = torch.randn(batch, length, embed, generator=rng)
    out, weights = M.forward(x, state, heads)
    expected_out, expected_w = M.torch_oracle(x, state, heads)
    assert weights.shape == (batch, heads, length, length)
    torch.testing.assert_close(out, expected_out, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(weights, expected_w, rtol=1e-10, atol=1e-12)


def test_every_multihead_variant_differs_from_the_right_answer():
    rng = torch.Generator().manual_seed(3)
    state = A.linear_weights(M.LAYERS, 12, 12, rng)
    x = torch.randn(2, 5, 12, generator=rng)
    out, weights = M.forward(x, state, 3)
    unstable = {"naive_softmax", "global_max_softmax"}  # right on ordinary scores, by definition
    for name, variant in M.variants(x, state, 3).items():
        ways = variant if isinstance(variant, list) else [variant]  # each way of writing the mistake
        for wrong_out, wrong_w in ways:
            same_out = torch.allclose(wrong_out, out, atol=1e-3)
            same_w = wrong_w.shape == weights.shape and torch.allclose(wrong_w, weights, atol=1e-3)
            assert (same_out and same_w) == (name in unstable), name
    large_state, large_x = M.large_score_inputs(rng, 2, 5, 12, 3, 1000.0)
    variants = M.variants(large_x, large_state, 3)
    for name in unstable:
        assert not torch.isfinite(variants[name][0]).all(), name  # NaN or inf on the large scores


@pytest.mark.parametrize("exercise", [EX02, EX04])
def test_diagnosis_sections_are_statement_headings(exercise):
    manifest = PROJECT.load_manifest(exercise)
    for lang in ("zh", "en"):
        text = PROJECT.statement_path(exercise, lang).read_text(encoding="utf-8")
        headings = {line.lstrip("#").strip() for line in text.splitlines() if line.startswith("## ")}
        missing = {
            d: s(lang)
            for d, spec in manifest.diagnoses.items()
            if (s := spec.section) and s(lang) not in headings
        }
        assert missing == {}, f"{exercise} statement.{lang}.md lacks headings for {missing}"
