"""Hostile submission: raises an exception whose __str__ never returns (the worker hangs while reporting it)."""

import torch


class Sticky(Exception):
    def __str__(self):
        while True:
            pass


def scaled_dot_product_attention(q, k, v):
    raise Sticky()


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        raise Sticky()
