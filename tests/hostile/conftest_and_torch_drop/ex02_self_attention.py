"""Hostile submission: ships a conftest.py that forces every test to pass and a fake torch.py beside it."""

import torch

if not hasattr(torch, "nn"):
    raise SystemExit("the fake torch.py was imported")


def scaled_dot_product_attention(q, k, v):
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
