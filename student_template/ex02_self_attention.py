"""Exercise 2: scaled dot-product attention and a self-attention layer.

Read exercises/ex02_self_attention/statement.en.md (or statement.zh.md) first.
Fill in the two places marked TODO; keep the names and signatures as they are.
"""

import math  # noqa: F401  (you will probably need it)

import torch.nn as nn
import torch.nn.functional as F  # noqa: F401


def scaled_dot_product_attention(q, k, v):
    """Attention of queries q over keys k, mixing values v.

    Args:
        q: (..., L, d_k) queries
        k: (..., S, d_k) keys
        v: (..., S, d_v) values
    Returns:
        context: (..., L, d_v)
        weights: (..., L, S), every row non-negative and summing to 1
    """
    # TODO: scores = q kᵀ scaled by 1/√d_k, softmax over the keys, then mix the values.
    raise NotImplementedError("scaled_dot_product_attention")


class SimpleSelfAttention(nn.Module):
    """One-head self-attention: queries, keys and values all come from the same input x."""

    def __init__(self, embed_dim):
        super().__init__()
        self.embed_dim = embed_dim
        # TODO: three nn.Linear(embed_dim, embed_dim) layers named query, key and value.
        raise NotImplementedError("SimpleSelfAttention.__init__")

    def forward(self, x):
        """x: (B, L, E) -> (context (B, L, E), weights (B, L, L))."""
        # TODO
        raise NotImplementedError("SimpleSelfAttention.forward")
