"""Hostile submission: returns NaN (and inf) tensors of the right shapes."""

import torch


def scaled_dot_product_attention(q, k, v):
    weights = torch.full((*q.shape[:-1], k.shape[-2]), float("nan"))
    return torch.full((*q.shape[:-1], v.shape[-1]), float("inf")), weights


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        self.query = torch.nn.Linear(embed_dim, embed_dim)
        self.key = torch.nn.Linear(embed_dim, embed_dim)
        self.value = torch.nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        b, n, e = x.shape
        return torch.full((b, n, e), float("nan")), torch.full((b, n, n), float("nan"))
