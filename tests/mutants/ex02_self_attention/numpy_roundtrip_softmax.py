"""Mutant: the softmax computed in numpy, which cuts the autograd graph."""

import math

import numpy as np
import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    s = scores.detach().numpy()
    s = s - s.max(axis=-1, keepdims=True)
    e = np.exp(s)
    weights = torch.from_numpy(e / e.sum(axis=-1, keepdims=True)).to(scores.dtype)
    return weights @ v, weights


class SimpleSelfAttention(nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        self.embed_dim = embed_dim
        self.query = nn.Linear(embed_dim, embed_dim)
        self.key = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        q = self.query(x)  # (B, L, E)
        k = self.key(x)
        v = self.value(x)
        return scaled_dot_product_attention(q, k, v)
