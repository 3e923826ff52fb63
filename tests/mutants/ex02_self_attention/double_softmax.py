"""Exercise 2: scaled dot-product attention and a self-attention layer."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v):
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    weights = F.softmax(scores, dim=-1)
    weights = F.softmax(weights, dim=-1)  # make sure each row is normalised
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
