"""Reference solution: the causal mask, masked attention, and multi-head cross-attention."""

import math

import torch
import torch.nn as nn


def causal_mask(length):
    """(L, L) bool, True where query i may attend key j, i.e. j ≤ i (on and below the diagonal)."""
    return torch.ones(length, length, dtype=torch.bool).tril()  # (L, L)


def masked_attention(q, k, v, mask=None):
    """Scaled dot-product attention where only keys with mask True count.

    Shapes: q (..., L, d_k), k (..., S, d_k), v (..., S, d_v); the bool mask broadcasts to the
    scores' (..., L, S), True where a query may attend. Gives (context, weights); a query that may
    attend no key gets zero weights and a zero context (not NaN), and finite gradients.
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., L, S)
    if mask is None:
        weights = torch.softmax(scores, dim=-1)
        return weights @ v, weights
    mask = mask.view(scores.shape)  # (..., L, S), one flag per score
    allowed = mask.any(dim=-1, keepdim=True)  # (..., L, 1): does the row allow any key?
    scores = torch.where(mask, scores, float("-inf"))  # masked keys: exp(−inf) = 0
    scores = scores.masked_fill(~allowed, 0.0)  # a row with no key: finite, so no 0/0 below
    weights = torch.softmax(scores, dim=-1) * allowed  # (..., L, S), zero rows where nothing is allowed
    return weights @ v, weights  # (..., L, d_v), (..., L, S)


class CrossAttention(nn.Module):
    """Multi-head attention from a decoder sequence x to an encoder output `memory`.

    Queries come from x, keys and values from memory; the layers are named as in exercise 4.
    """

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        if embed_dim % num_heads != 0:
            raise ValueError(f"embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.query = nn.Linear(embed_dim, embed_dim)
        self.key = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def _split(self, t):
        batch, length, _ = t.shape  # (B, n, E)
        return t.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, n, d_k)

    def forward(self, x, memory, memory_mask=None):
        """Decoder x (B, L, E) asks, encoder memory (B, S, E) answers; memory_mask (B, S) is True at
        real memory positions. Gives (output (B, L, E), per-head weights (B, H, L, S))."""
        batch, length, _ = x.shape
        q = self._split(self.query(x))  # (B, H, L, d_k): the decoder asks
        k = self._split(self.key(memory))  # (B, H, S, d_k): the encoder answers
        v = self._split(self.value(memory))  # (B, H, S, d_k)
        mask = None if memory_mask is None else memory_mask[:, None, None, :]  # (B, 1, 1, S)
        context, weights = masked_attention(q, k, v, mask)  # (B, H, L, d_k), (B, H, L, S)
        context = context.transpose(1, 2).reshape(batch, length, self.embed_dim)  # (B, L, E)
        return self.out_proj(context), weights  # (B, L, E), (B, H, L, S)
