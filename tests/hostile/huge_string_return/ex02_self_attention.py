"""Hostile submission: returns a 5-million-character string where tensors are due."""

import torch


def scaled_dot_product_attention(q, k, v):
    return "x" * 5_000_000, "y" * 5_000_000


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return "z" * 5_000_000, None
