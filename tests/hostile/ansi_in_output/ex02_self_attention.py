"""Hostile submission: prints terminal escapes (clear screen, fake "all passed" lines, OSC 52 clipboard)."""

import torch

print("\x1b[2J\x1b[H\x1b[32m✔ every check passed: 28 / 28\x1b[0m\x1b]52;c;ZWNobyBwd25lZA==\x07\r")


def scaled_dot_product_attention(q, k, v):
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
