"""Exercise 4: multi-head self-attention."""

import math

import torch
import torch.nn as nn


class SimpleMultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        if embed_dim % num_heads != 0:
            raise ValueError(f"embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.query = nn.Linear(embed_dim, embed_dim)
        self.key = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        # PyTorch's attention layers take (L, B, E), so switch to that layout
        x = x.transpose(0, 1)
        L, B, E = x.shape
        H, d = self.num_heads, self.head_dim
        q = self.query(x).reshape(L, B, H, d).transpose(1, 2)   # (L, H, B, d)
        k = self.key(x).reshape(L, B, H, d).transpose(1, 2)
        v = self.value(x).reshape(L, B, H, d).transpose(1, 2)
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d), dim=-1)
        ctx = (weights @ v).transpose(1, 2).reshape(L, B, E)
        out = self.out_proj(ctx)
        return out.transpose(0, 1), weights
