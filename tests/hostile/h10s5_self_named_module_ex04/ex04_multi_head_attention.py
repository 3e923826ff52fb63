"""h10s5 (scoring, ex04): torch's fused multi-head kernel, reached only through names `self` and `cls`.

What it tries:
  * static rule: `_Scan.attribute` treats any attribute of a name spelled `self` or `cls` as the
    student's own (`own=True`): no banned-name match, no private-torch-name or detour check. Here
    `cls` is a default argument bound to the `torch` module, and `self` is a helper's parameter
    bound to `torch._C._VariableFunctions`; every hop is either off `self`/`cls` or a name on no list.
    No `__main__` trick, no exec, no thread, no closure, no eval gadget.
  * run time: `_native_multi_head_attention` under `torch._C._VariableFunctions` has no Python
    wrapper (the table is read-only), and the dispatcher's watch at ADInplaceOrView never sees an
    operator without an autograd kernel (autograd's fallback dispatches below that key).
Contained means: `mha_no_builtin_attention` earns no point (forward is torch's fused kernel).
"""

import torch
import torch.nn as nn


def _fused(self, *args):
    return self._native_multi_head_attention(*args)


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

    def forward(self, x, cls=torch):
        w = torch.cat([self.query.weight, self.key.weight, self.value.weight])
        b = torch.cat([self.query.bias, self.key.bias, self.value.bias])
        table = cls._C._VariableFunctions
        return _fused(table, x, x, x, self.embed_dim, self.num_heads, w, b, self.out_proj.weight,
                      self.out_proj.bias, None, True, False)
