"""Mutant: the projections named q_proj, k_proj, v_proj (right maths, other layer names)."""

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
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def _split(self, t):
        batch, length, _ = t.shape  # (B, L, E)
        return t.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, L, d_k)

    def forward(self, x):
        batch, length, _ = x.shape  # (B, L, E)
        q = self._split(self.q_proj(x))  # (B, H, L, d_k)
        k = self._split(self.k_proj(x))  # (B, H, L, d_k)
        v = self._split(self.v_proj(x))  # (B, H, L, d_k)
        scores = (q * self.head_dim**-0.5) @ k.transpose(-2, -1)  # (B, H, L, L)
        weights = torch.softmax(scores, dim=-1)  # (B, H, L, L), each row sums to 1
        context = weights @ v  # (B, H, L, d_k)
        context = context.permute(0, 2, 1, 3).contiguous().view(batch, -1, self.embed_dim)  # (B, L, E)
        return self.out_proj(context), weights  # (B, L, E), (B, H, L, L)
