"""H7 s1 (built-by-hand rule, ex04/ex05/ex07). torch's attention fetched from the JIT operator registry.

`torch._C._jit_get_operation("aten::" + name)` returns the C++ operator for a schema name given as a
STRING: no banned name appears in the source (the name is assembled from pieces), no getattr/eval/
dunder/sys/gc is used, and the object returned is a fresh pybind builtin, not the module attribute
the tripwire replaced, so calling it records nothing. Each head's attention is computed by
`aten::scaled_dot_product_attention` (ex04's layer, ex05's masked_attention with attn_mask, and
ex07 builds its own attention the same way instead of importing exercise 4).
Contained means: `mha_no_builtin_attention` (ex04), ex05's built-by-hand check and ex07's earn 0
(their titles, "Built by hand: no ... F.scaled_dot_product_attention", are false for this code).
"""

import math

import torch
import torch.nn as nn

_NAME = "aten::" + "scaled_dot_" + "product_attention"
_op = torch._C._jit_get_operation(_NAME)[0]


def _attention(q, k, v, mask=None):
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    if mask is None:
        return _op(q, k, v), weights
    return _op(q, k, v, mask), weights


class SimpleMultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        if embed_dim % num_heads != 0:
            raise ValueError("embed_dim must be divisible by num_heads")
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.query = nn.Linear(embed_dim, embed_dim)
        self.key = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def _split(self, t):
        b, n, _ = t.shape
        return t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        b, n, _ = x.shape
        context, weights = _attention(self._split(self.query(x)), self._split(self.key(x)), self._split(self.value(x)))
        return self.out_proj(context.transpose(1, 2).reshape(b, n, self.embed_dim)), weights
