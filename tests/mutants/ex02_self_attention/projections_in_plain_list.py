"""Mutant: the projections kept in a plain Python list (not nn.ModuleList)."""

import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v):
    """softmax(q kᵀ / √d_k) v over the last two dimensions; returns (context, weights)."""
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., L, S)
    weights = torch.softmax(scores, dim=-1)  # (..., L, S), each row sums to 1
    context = weights @ v  # (..., L, d_v)
    return context, weights


class SimpleSelfAttention(nn.Module):
    """Self-attention with one head: Q, K and V are linear maps of the same input."""

    def __init__(self, embed_dim):
        super().__init__()
        self.embed_dim = embed_dim
        self.layers = [nn.Linear(embed_dim, embed_dim) for _ in range(3)]  # q, k, v

    def forward(self, x):
        # x: (B, L, E)
        q, k, v = (layer(x) for layer in self.layers)  # (B, L, E) each
        return scaled_dot_product_attention(q, k, v)  # (B, L, E), (B, L, L)
