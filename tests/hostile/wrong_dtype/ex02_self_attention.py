"""Hostile submission: returns integer, boolean and half tensors of the right shapes."""

import torch


def scaled_dot_product_attention(q, k, v):
    weights = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
    return (weights @ v).round().to(torch.int64), (weights > 0.5)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        self.query = torch.nn.Linear(embed_dim, embed_dim)
        self.key = torch.nn.Linear(embed_dim, embed_dim)
        self.value = torch.nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        c, w = scaled_dot_product_attention(self.query(x), self.key(x), self.value(x))
        return c.to(torch.int8), w.to(torch.uint8)
