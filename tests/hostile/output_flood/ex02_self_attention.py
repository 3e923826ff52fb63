"""Hostile submission: floods stdout and stderr (tens of MB) at import and in every call."""

import torch

sys = torch.sys


def flood():
    line = "PASSED " * 1000 + "\n"
    for _ in range(5000):
        sys.stdout.write(line)
        sys.stderr.write(line)


flood()


def scaled_dot_product_attention(q, k, v):
    flood()
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        flood()

    def forward(self, x):
        flood()
        return torch.zeros(1), torch.zeros(1)
