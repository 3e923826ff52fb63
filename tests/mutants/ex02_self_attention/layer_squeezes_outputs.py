"""Mutant: the layer squeeze()s what it returns: (1, L, E) comes back as (L, E)."""

import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v):
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


class SimpleSelfAttention(nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        self.embed_dim = embed_dim
        self.query = nn.Linear(embed_dim, embed_dim)
        self.key = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        q = self.query(x)
        k = self.key(x)
        v = self.value(x)
        context, weights = scaled_dot_product_attention(q, k, v)
        return context.squeeze(), weights.squeeze()
