"""H13 f1 (forging, ex07): a class of exercise 7's own that the worker describes as exercise 4's.

What it tries: `_defined_in` names a class's module by the namespace its functions run in
(`id(f.__globals__)`). Here every method of exercise 7's own attention class is rebuilt with
`types.FunctionType(code, <exercise 4 module's globals dict>)`: its code is exercise 7's, written
here (a single-head-per-step loop, not exercise 4's class), but it *runs in* exercise 4's namespace,
so the introspection answers "ex04_multi_head_attention". The dict and the code objects are read
through class patterns whose `__match_args__` are joined at run time (no dunder attribute, no
vars/getattr), so the built-by-hand rule has nothing to flag either.
Contained means: `enc_structure` ("Has self_attn (SimpleMultiHeadAttention from your exercise 4
module), ...") earns 0: self_attn's class is not exercise 4's SimpleMultiHeadAttention.
"""

import math
import types

import torch
import torch.nn as nn

import ex04_multi_head_attention as _e4


class _Any(type):
    def __instancecheck__(cls, obj):
        return True


def _read(obj, *words):
    reader = _Any("R", (), {"__match_args__": ("_".join(words),)})
    match obj:
        case reader(value):
            return value
    return None


def _init(self, embed_dim, num_heads):
    nn.Module.__init__(self)
    self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
    self.query = nn.Linear(embed_dim, embed_dim)
    self.key = nn.Linear(embed_dim, embed_dim)
    self.value = nn.Linear(embed_dim, embed_dim)
    self.out_proj = nn.Linear(embed_dim, embed_dim)


def _forward(self, x):
    batch, length, _ = x.shape
    heads = []
    for h in range(self.num_heads):  # exercise 7's own: one head at a time
        cut = slice(h * self.head_dim, (h + 1) * self.head_dim)
        q, k, v = self.query(x)[..., cut], self.key(x)[..., cut], self.value(x)[..., cut]
        w = torch.softmax(q @ k.transpose(-2, -1) / self.head_dim ** 0.5, dim=-1)
        heads.append((w @ v, w))
    context = torch.cat([c for c, _ in heads], dim=-1)
    return self.out_proj(context), torch.stack([w for _, w in heads], dim=1)


_space = _read(_e4, "", "", "dict", "", "")
_methods = {
    name: types.FunctionType(_read(fn, "", "", "code", "", ""), _space, name)
    for name, fn in (("__init__", _init), ("forward", _forward))
}
SimpleMultiHeadAttention = type("SimpleMultiHeadAttention", (nn.Module,), _methods)


class TransformerEncoderLayer(nn.Module):
    """Post-norm encoder layer around the attention class above."""

    def __init__(self, d_model, nhead, dim_feedforward, dropout=0.1):
        super().__init__()
        self.self_attn = SimpleMultiHeadAttention(d_model, nhead)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x):
        attended, _ = self.self_attn(x)
        x = self.norm1(x + self.dropout1(attended))
        hidden = self.dropout(torch.relu(self.linear1(x)))
        x = self.norm2(x + self.dropout2(self.linear2(hidden)))
        return x
