"""H7 s4 (built-by-hand rule, ex05). `torch.ops.aten.__getattr__(name)` called explicitly.

`__getattr__` is not among the dunders the static scan flags, and the name is built from pieces.
Calling a namespace's `__getattr__` explicitly skips the normal attribute lookup: it builds a FRESH
OpOverloadPacket for `aten::_scaled_dot_product_attention_math` (which the ban list covers with
`torch.ops.aten._scaled_dot_product_*`) and stores it over whatever attribute was there (the
tripwire's wrapper, if any). The module is loaded once at import: the op is fetched before any call.
Contained means: ex05's built-by-hand check earns 0 (a static finding, a tripwire hit, or a
"tripwire undone" finding), and masked_* checks may score honestly.
"""

import math

import torch
import torch.nn as nn


def causal_mask(length):
    """(L, L) bool, True where query i may attend key j, i.e. j ≤ i (on and below the diagonal)."""
    return torch.ones(length, length, dtype=torch.bool).tril()  # (L, L)


_ns = torch.ops.aten
_op = _ns.__getattr__("_scaled_dot_" + "product_attention_math")  # a fresh packet, not the attribute


def masked_attention(q, k, v, mask=None):
    """aten's math attention, fetched with an explicit namespace __getattr__ call (H7 s4)."""
    if mask is None:
        return _op(q, k, v)
    allowed = mask.any(dim=-1, keepdim=True)
    safe = (mask | ~allowed).expand(*q.shape[:-1], k.shape[-2])
    context, weights = _op(q, k, v, safe)
    return context * allowed, weights * allowed


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
