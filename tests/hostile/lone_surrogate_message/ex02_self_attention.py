"""Hostile submission: raises errors whose message holds lone surrogates (no report could be written)."""

import torch


def scaled_dot_product_attention(q, k, v):
    raise ValueError("bad \ud800 half \udfff pair")


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        raise ValueError("\udcfc" * 10)
