"""Mutant: the outputs reshaped with view(-1, …) from q's last two sizes: a batch of 1 disappears."""

import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v):
    *lead, L, d_k = q.shape
    S = k.shape[-2]
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)
    weights = torch.softmax(scores, dim=-1)
    context = torch.matmul(weights, v)
    if len(lead) == 1 and lead[0] == 1:  # one sequence: hand back plain matrices
        return context.view(L, -1), weights.view(L, S)
    return context, weights


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
        return scaled_dot_product_attention(q, k, v)
