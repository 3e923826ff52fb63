"""Exercise 5: masks and cross-attention.

Read exercises/ex05_masked_and_cross_attention/statement.en.md (or statement.zh.md) first.
Fill in the places marked TODO; keep the names and signatures as they are. Do not use
nn.MultiheadAttention or F.scaled_dot_product_attention: the point is to build it yourself.
"""

import math  # noqa: F401  (you will probably need it)

import torch  # noqa: F401
import torch.nn as nn


def causal_mask(length):
    """(L, L) bool tensor: True where query i may attend key j, that is j ≤ i."""
    # TODO
    raise NotImplementedError("causal_mask")


def masked_attention(q, k, v, mask=None):
    """q: (..., L, d_k), k: (..., S, d_k), v: (..., S, d_v); mask: bool, broadcastable to (..., L, S),
    True = may attend (None: every key). Returns (context (..., L, d_v), weights (..., L, S)).

    A query row with no key allowed gets all-zero weights and a zero context: no NaN, and finite
    gradients.
    """
    # TODO: scaled scores; keep only the allowed keys before the softmax; handle rows with no key.
    raise NotImplementedError("masked_attention")


class CrossAttention(nn.Module):
    """Multi-head attention from a decoder sequence x to the encoder's output memory."""

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        # TODO: raise ValueError if embed_dim is not divisible by num_heads;
        #       four nn.Linear(embed_dim, embed_dim) layers named query, key, value and out_proj.
        raise NotImplementedError("CrossAttention.__init__")

    def forward(self, x, memory, memory_mask=None):
        """x: (B, L, E), memory: (B, S, E), memory_mask: bool (B, S), True = a real memory position
        (None: all are). Returns (output (B, L, E), weights (B, H, L, S))."""
        # TODO: queries from x, keys and values from memory; split into heads; masked attention;
        #       merge the heads; out_proj.
        raise NotImplementedError("CrossAttention.forward")
