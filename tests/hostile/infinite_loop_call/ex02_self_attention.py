"""Hostile submission: an infinite loop inside scaled_dot_product_attention (the layer is correct)."""

import torch


def scaled_dot_product_attention(q, k, v):
    n = 0
    while True:
        n += 1


class SimpleSelfAttention(torch.nn.Module):
    """Correct, and independent of scaled_dot_product_attention: its checks must still pass."""

    def __init__(self, embed_dim):
        super().__init__()
        self.query = torch.nn.Linear(embed_dim, embed_dim)
        self.key = torch.nn.Linear(embed_dim, embed_dim)
        self.value = torch.nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        q, k, v = self.query(x), self.key(x), self.value(x)
        weights = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
        return weights @ v, weights
