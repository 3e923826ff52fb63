"""Hostile submission: unbounded recursion with the recursion limit lifted: the C stack overflows."""

import torch

torch.sys.setrecursionlimit(10**8)


def down(n):
    # through max(), a C function, so that every level also takes C stack: it overflows, not the heap
    return max([n], key=lambda m: down(m + 1))


def scaled_dot_product_attention(q, k, v):
    return down(0)


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
