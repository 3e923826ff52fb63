"""Hostile submission: rewrites builtins: isinstance, len, abs, round, min, max, print, float and the
import hook.
"""

import builtins

import torch

builtins.isinstance = lambda *a: True
builtins.len = lambda x: 0
builtins.abs = lambda x: 0
builtins.round = lambda *a: 0
builtins.min = lambda *a, **k: 0
builtins.max = lambda *a, **k: 0
builtins.float = lambda *a: 0.0
builtins.print = lambda *a, **k: None
builtins.AssertionError = type("AssertionError", (Exception,), {})
builtins.__import__ = lambda *a, **k: torch


def scaled_dot_product_attention(q, k, v):
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
