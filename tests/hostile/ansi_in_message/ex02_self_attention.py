"""Hostile submission: error messages with terminal escapes: clear screen, a fake total, clipboard write, window title."""

import torch

EVIL = "\x1b[2J\x1b[H\x1b[1mTotal: 28 / 28\x1b[0m\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;PASSED\x07\r\u202eevil"


def scaled_dot_product_attention(q, k, v):
    raise ValueError(EVIL)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        raise RuntimeError(EVIL)
