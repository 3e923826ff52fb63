"""Mutant (as in a Chinese text-classification repo's Transformer): heads folded into the batch by
view(B * H, -1, d_k) with no transpose, merged back by view"""

import math

import torch
import torch.nn as nn


class SimpleMultiHeadAttention(nn.Module):
    """Self-attention with H heads: each head attends in its own d_k = E / H slice of Q, K and V."""

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        if embed_dim % num_heads != 0:
            raise ValueError(f"embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.query = nn.Linear(embed_dim, embed_dim)
        self.key = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def _split(self, t):
        batch, length, _ = t.shape  # (B, L, E)
        return t.view(batch * self.num_heads, -1, self.head_dim)  # (B*H, L, d_k), tokens mixed

    def forward(self, x):
        batch, length, _ = x.shape  # (B, L, E)
        q = self._split(self.query(x))  # (B*H, L, d_k)
        k = self._split(self.key(x))  # (B*H, L, d_k)
        v = self._split(self.value(x))  # (B*H, L, d_k)
        scale = k.size(-1) ** -0.5
        weights = torch.softmax(torch.bmm(q, k.transpose(1, 2)) * scale, dim=-1)  # (B*H, L, L)
        context = torch.bmm(weights, v).view(batch, -1, self.embed_dim)  # (B, L, E)
        return self.out_proj(context), weights.view(batch, self.num_heads, length, length)
