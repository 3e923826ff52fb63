"""Fairness the other way round for exercises 5 and 6: correct solutions written differently from the
reference earn full marks, a part left unwritten costs only its own checks, and the graders' own
maths agrees with torch's oracles."""

from __future__ import annotations

import pytest
import torch
from conftest import PROJECT

from graders import attention as A
from graders import chunked as C
from graders import masking as K
from graders import multihead as M

EX05 = "ex05_masked_and_cross_attention"
EX06 = "ex06_chunked_attention"

EX05_WHERE_AND_LOOP = '''
import torch
import torch.nn as nn


def causal_mask(length):
    rows = torch.arange(length)[:, None]
    return rows >= torch.arange(length)[None, :]


def masked_attention(q, k, v, mask=None):
    """float64 inside, torch.where, empty rows zeroed by a finite fill and a multiplication."""
    dtype = q.dtype
    scores = q.double() @ k.double().transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is None:
        mask = torch.ones(scores.shape, dtype=torch.bool)
    mask = mask.expand(scores.shape)
    filled = torch.where(mask, scores, torch.full_like(scores, -1e30))
    weights = torch.softmax(filled, dim=-1) * mask.any(-1, keepdim=True) * mask
    return (weights @ v.double()).to(dtype), weights.to(dtype)


class CrossAttention(nn.Module):
    """One head at a time, in a loop."""

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError("embed_dim must be divisible by num_heads")
        self.heads, self.d = num_heads, embed_dim // num_heads
        self.query, self.key, self.value, self.out_proj = (nn.Linear(embed_dim, embed_dim) for _ in range(4))

    def forward(self, x, memory, memory_mask=None):
        q, k, v = self.query(x), self.key(memory), self.value(memory)
        mask = None if memory_mask is None else memory_mask.unsqueeze(1)  # (B, 1, S)
        contexts, weights = [], []
        for h in range(self.heads):
            part = slice(h * self.d, (h + 1) * self.d)
            c, w = masked_attention(q[..., part], k[..., part], v[..., part], mask)
            contexts.append(c)
            weights.append(w)
        return self.out_proj(torch.cat(contexts, dim=-1)), torch.stack(weights, dim=1)
'''

EX06_QUERY_BLOCKS_TWO_PASSES = '''
import torch


def chunked_attention(q, k, v, chunk_size):
    """Two passes over the key chunks (first the maximum, then the sums), queries in blocks of 512."""
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError("chunk_size must be a positive integer")
    scale = q.shape[-1] ** -0.5
    keys = k.shape[-2]
    outputs = []
    for top in range(0, q.shape[-2], 512):
        qb = q[..., top : top + 512, :]
        m = None
        for s in range(0, keys, chunk_size):
            block = (qb @ k[..., s : s + chunk_size, :].transpose(-2, -1) * scale).amax(-1, keepdim=True)
            m = block if m is None else torch.maximum(m, block)
        total = torch.zeros_like(m)
        acc = torch.zeros(*qb.shape[:-1], v.shape[-1], dtype=q.dtype)
        for s in range(0, keys, chunk_size):
            p = torch.exp(qb @ k[..., s : s + chunk_size, :].transpose(-2, -1) * scale - m)
            total = total + p.sum(-1, keepdim=True)
            acc = acc + p @ v[..., s : s + chunk_size, :]
        outputs.append(acc / total)
    return torch.cat(outputs, dim=-2)
'''

ALTERNATIVES = {
    "ex05_where_and_loop": (EX05, EX05_WHERE_AND_LOOP),
    "ex06_query_blocks_two_passes": (EX06, EX06_QUERY_BLOCKS_TWO_PASSES),
}


@pytest.mark.parametrize("name", list(ALTERNATIVES))
def test_alternative_solution_scores_full_marks(name, grade_files):
    exercise, source = ALTERNATIVES[name]
    report = grade_files({f"{exercise}.py": source}, exercises=[exercise], seed=20261129)
    (result,) = report.exercises
    assert [(c.id, c.status, c.message) for c in result.checks if c.status != "passed"] == []
    assert result.score == result.max_score > 0


def test_cross_attention_is_graded_with_a_correct_masked_attention_when_the_students_cannot_answer(
    grade_files,
):
    source = PROJECT.reference_path(EX05).read_text(encoding="utf-8")
    start, end = source.index("def masked_attention"), source.index("class CrossAttention")
    unwritten = "def masked_attention(q, k, v, mask=None):\n    raise NotImplementedError\n\n\n"
    report = grade_files({f"{EX05}.py": source[:start] + unwritten + source[end:]}, exercises=[EX05])
    (result,) = report.exercises
    status = {c.id: c.status for c in result.checks}
    assert {i for i, s in status.items() if s == "passed"} >= {
        "mask_causal", "cross_structure", "cross_shapes", "cross_matches_oracle",
        "cross_memory_permutation", "cross_padding_ignored",
    }  # fmt: skip
    assert status["masked_matches_formula"] == "not_implemented"
    assert status["matches_reference"] == "not_implemented"  # it judges masked_attention too


# ---------------------------------------------------------------- the graders' own maths


def test_masking_formula_agrees_with_torch_on_rows_that_allow_a_key():
    rng = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(s, generator=rng, dtype=torch.float64) for s in ((2, 5, 8), (2, 7, 8), (2, 7, 3)))
    mask = K.random_mask(rng, (2, 5, 7))
    context, _ = K.attention(q, k, v, mask)
    oracle = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(context, oracle)


def test_cross_formula_agrees_with_multihead_attention():
    rng = torch.Generator().manual_seed(6)
    x, memory = torch.randn(2, 5, 12, generator=rng), torch.randn(2, 7, 12, generator=rng)
    state = A.linear_weights(M.LAYERS, 12, 12, rng)
    mask = K.padding_mask(rng, 2, 7)
    for memory_mask in (mask, None):
        ours = K.cross(x, memory, state, 3, memory_mask)
        theirs = K.torch_cross_oracle(x, memory, state, 3, memory_mask)
        for a, b in zip(ours, theirs, strict=True):
            torch.testing.assert_close(a, b)


@pytest.mark.parametrize("chunk", [1, 4, 5, 13, 20])
def test_online_softmax_of_the_graders_is_the_formula(chunk):
    rng = torch.Generator().manual_seed(7)
    q, k, v = (torch.randn(s, generator=rng) for s in ((2, 5, 16), (2, 13, 16), (2, 13, 3)))
    torch.testing.assert_close(C.online(q, k, v, chunk), A.attention(q, k, v)[0])
