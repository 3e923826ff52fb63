"""Mutant: the context viewed as q (view_as), wrong whenever d_v differs from d_k."""

import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v):
    """softmax(q kᵀ / √d_k) v over the last two dimensions; returns (context, weights)."""
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., L, S)
    weights = torch.softmax(scores, dim=-1)  # (..., L, S), each row sums to 1
    context = torch.matmul(weights, v).view_as(q)  # (..., L, d_v)
    return context, weights


class SimpleSelfAttention(nn.Module):
    """Self-attention with one head: Q, K and V are linear maps of the same input."""

    def __init__(self, embed_dim):
        super().__init__()
        self.embed_dim = embed_dim
        self.query = nn.Linear(embed_dim, embed_dim)
        self.key = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        # x: (B, L, E)
        q = self.query(x)  # (B, L, E)
        k = self.key(x)  # (B, L, E)
        v = self.value(x)  # (B, L, E)
        return scaled_dot_product_attention(q, k, v)  # (B, L, E), (B, L, L)
