"""Mutant: x.shape unpacked as (L, B, E), so the merge reshapes to (L, B, E)."""

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
        return t.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, L, d_k)

    def forward(self, x):
        length, batch, _ = x.shape  # (L, B, E)
        q = self._split(self.query(x))  # (B, H, L, d_k)
        k = self._split(self.key(x))  # (B, H, L, d_k)
        v = self._split(self.value(x))  # (B, H, L, d_k)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (B, H, L, L)
        weights = torch.softmax(scores, dim=-1)  # (B, H, L, L), each row sums to 1
        context = weights @ v  # (B, H, L, d_k)
        context = context.transpose(1, 2).reshape(batch, length, self.embed_dim)  # (B, L, E), heads in a row
        return self.out_proj(context), weights  # (B, L, E), (B, H, L, L)
