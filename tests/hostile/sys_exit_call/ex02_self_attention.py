"""Hostile submission: sys.exit(0) inside every call."""

import torch


def scaled_dot_product_attention(q, k, v):
    torch.sys.exit(0)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        raise SystemExit(0)
