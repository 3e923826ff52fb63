"""Mutant: the layer caches k and v by the input's shape: a second input of that shape gets the first's"""

import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v):
    """softmax(q kᵀ / √d_k) v over the last two dimensions; returns (context, weights)."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., L, S)
    weights = torch.softmax(scores, dim=-1)  # (..., L, S), each row sums to 1
    context = weights @ v  # (..., L, d_v)
    return context, weights


class SimpleSelfAttention(nn.Module):
    """Self-attention with one head: Q, K and V are linear maps of the same input."""

    def __init__(self, embed_dim):
        super().__init__()
        self.embed_dim = embed_dim
        self.query = nn.Linear(embed_dim, embed_dim)
        self.key = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)
        self.cache = {}  # projections by input shape

    def forward(self, x):
        # x: (B, L, E)
        q = self.query(x)  # (B, L, E)
        if x.shape not in self.cache:
            self.cache[x.shape] = (self.key(x), self.value(x))
        k, v = self.cache[x.shape]  # (B, L, E) each
        return scaled_dot_product_attention(q, k, v)  # (B, L, E), (B, L, L)
