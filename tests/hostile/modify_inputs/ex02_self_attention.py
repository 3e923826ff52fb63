"""Hostile submission: zeroes q, k, v (and x) in place so that a grader sharing its tensors would agree."""

import torch


def scaled_dot_product_attention(q, k, v):
    with torch.no_grad():
        q.zero_()
        k.zero_()
        v.zero_()
    weights = torch.full((*q.shape[:-1], k.shape[-2]), 1.0 / k.shape[-2])
    return weights @ v, weights


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        self.query = torch.nn.Linear(embed_dim, embed_dim)
        self.key = torch.nn.Linear(embed_dim, embed_dim)
        self.value = torch.nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        with torch.no_grad():
            x.zero_()
            for p in self.parameters():
                p.zero_()
        b, n, e = x.shape
        return torch.zeros(b, n, e), torch.full((b, n, n), 1.0 / n)
