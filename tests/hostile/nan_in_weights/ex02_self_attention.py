"""Hostile submission: right answers but one NaN in the attention weights, so that a NaN reaches a heatmap (the stored result did not reload)."""

import math

import torch


def scaled_dot_product_attention(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = torch.softmax(scores, dim=-1)
    weights = weights.clone()
    weights.view(-1)[0] = float("nan")
    weights.view(-1)[1] = float("inf")
    return weights @ v, weights


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        self.query = torch.nn.Linear(embed_dim, embed_dim)
        self.key = torch.nn.Linear(embed_dim, embed_dim)
        self.value = torch.nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        return scaled_dot_product_attention(self.query(x), self.key(x), self.value(x))
