"""Hostile submission: replaces torch.allclose, torch.testing, torch.equal and friends by yes-men."""

import torch

torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
torch.isclose = lambda a, b, *r, **k: torch.ones_like(a, dtype=torch.bool)
torch.testing.assert_close = lambda *a, **k: None
torch.testing.assert_allclose = lambda *a, **k: None
torch.Tensor.__eq__ = lambda self, other: True
torch.Tensor.allclose = lambda *a, **k: True
torch.nn.functional.scaled_dot_product_attention = lambda q, k, v, **kw: torch.zeros(1)
torch.softmax = lambda x, dim=-1, **k: torch.zeros_like(x)


def scaled_dot_product_attention(q, k, v):
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
