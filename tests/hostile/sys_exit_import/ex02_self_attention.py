"""Hostile submission: sys.exit(0) at import time (same-process graders record a clean exit)."""

import torch

torch.sys.exit(0)


def scaled_dot_product_attention(q, k, v):
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
