"""Exercise 4: multi-head self-attention, built by hand."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class SimpleMultiHeadAttention(nn.Module):
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

    def forward(self, x):
        q, k, v = self.query(x), self.key(x), self.value(x)
        d = self.head_dim
        heads, maps = [], []
        for h in range(self.num_heads):
            qh, kh, vh = q[..., h:h + d], k[..., h:h + d], v[..., h:h + d]
            w = torch.softmax(qh @ kh.transpose(-2, -1) / math.sqrt(d), dim=-1)
            heads.append(w @ vh)
            maps.append(w)
        return self.out_proj(torch.cat(heads, dim=-1)), torch.stack(maps, dim=1)
