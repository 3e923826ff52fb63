"""Hostile submission: weights by hand, the context from torch.ops.aten._scaled_dot_product_attention_math."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

def ATTEND(q, k, v):
    return torch.ops.aten._scaled_dot_product_attention_math(q, k, v)[0]


class SimpleMultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        if embed_dim % num_heads != 0:
            raise ValueError("embed_dim must be divisible by num_heads")
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.query = nn.Linear(embed_dim, embed_dim)
        self.key = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def _split(self, t):
        batch, length, _ = t.shape
        return t.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        batch, length, _ = x.shape
        q, k, v = self._split(self.query(x)), self._split(self.key(x)), self._split(self.value(x))
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.head_dim), dim=-1)
        context = ATTEND(q, k, v)
        context = context.transpose(1, 2).reshape(batch, length, self.embed_dim)
        return self.out_proj(context), weights
