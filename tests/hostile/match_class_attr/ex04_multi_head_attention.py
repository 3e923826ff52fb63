"""Hostile submission: reach torch's fused attention operator through a structural
pattern match. `match torch.ops.aten: case object(_scaled_dot_product_flash_attention_for_cpu=op)`
makes Python do `getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu")`; in the
AST the attribute name is a plain string in `MatchClass.kwd_attrs`, not an `Attribute` node, a
`Name` or a string constant. The operator matches ex04's banned glob
`torch.ops.aten._scaled_dot_product_*`, and glob entries are not wrapped by the run-time tripwire
(`Tripwire.arm` skips names with "*"), so only the static check could see it.

The context comes from the fused operator; the per-head weights that the grader also reads are
computed by hand (softmax of the scaled scores).
What it tries: `mha_no_builtin_attention` ("Built by hand: no nn.MultiheadAttention or
F.scaled_dot_product_attention (and it runs)") while the attention is torch's SDPA kernel.
Contained means: that check scores 0.
"""

import math

import torch
import torch.nn as nn

match torch.ops.aten:
    case object(_scaled_dot_product_flash_attention_for_cpu=_fused):
        pass


class SimpleMultiHeadAttention(nn.Module):
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
        b, n, _ = t.shape
        return t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self._split(self.query(x)), self._split(self.key(x)), self._split(self.value(x))
        context = _fused(q, k, v)[0]
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.head_dim), dim=-1)
        context = context.transpose(1, 2).reshape(b, n, self.embed_dim)
        return self.out_proj(context), weights
