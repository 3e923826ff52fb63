"""Hostile submission: functools.reduce over getattr passed as a value, with a computed name: only the tripwire sees it."""

import torch
import torch.nn as nn
import torch.nn.functional as F
import functools

MHA_FORWARD = functools.reduce(getattr, ["multi_head_" + "attention_forward"], F)


class SimpleMultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        if embed_dim % num_heads != 0:
            raise ValueError("embed_dim must be divisible by num_heads")
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.query = nn.Linear(embed_dim, embed_dim)
        self.key = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        t = x.transpose(0, 1)  # (L, B, E)
        w = torch.cat([self.query.weight, self.key.weight, self.value.weight])
        b = torch.cat([self.query.bias, self.key.bias, self.value.bias])
        out, weights = MHA_FORWARD(
            t, t, t, self.embed_dim, self.num_heads, w, b, None, None, False, 0.0,
            self.out_proj.weight, self.out_proj.bias, training=False, need_weights=True,
            average_attn_weights=False,
        )
        return out.transpose(0, 1), weights
