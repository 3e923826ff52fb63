"""Exercise 4: multi-head self-attention.

Read exercises/ex04_multi_head_attention/statement.en.md (or statement.zh.md) first.
Fill in the places marked TODO; keep the names and signatures as they are. Do not use
nn.MultiheadAttention or F.scaled_dot_product_attention: the point is to build it yourself.
"""

import math  # noqa: F401  (you will probably need it)

import torch  # noqa: F401
import torch.nn as nn


class SimpleMultiHeadAttention(nn.Module):
    """Self-attention with num_heads heads, each working in d_k = embed_dim / num_heads dimensions."""

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        # TODO: raise ValueError if embed_dim is not divisible by num_heads;
        #       four nn.Linear(embed_dim, embed_dim) layers named query, key, value and out_proj.
        raise NotImplementedError("SimpleMultiHeadAttention.__init__")

    def forward(self, x):
        """x: (B, L, E) -> (output (B, L, E), weights (B, H, L, L), one attention matrix per head)."""
        # TODO: project, split into heads, attend in each head with 1/√d_k scaling,
        #       put the heads back side by side, apply out_proj.
        raise NotImplementedError("SimpleMultiHeadAttention.forward")
