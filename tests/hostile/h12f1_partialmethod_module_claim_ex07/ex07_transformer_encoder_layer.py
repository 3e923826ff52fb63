"""h12f1 (forging, ex07): a class of exercise 7's own that the worker describes as exercise 4's.

What it tries: the introspection reply names a class's module by the globals of the first
functions found along its MRO (`_defined_in`, the fix for hostile11 f1), and falls back to the
class's own `__module__` attribute when no class of the student's has a plain function in its
`__dict__`. This attention class defines every method as a `functools.partialmethod` of a
module-level function (not a FunctionType in the class dict), so the walk reaches nn.Module
(torch's functions, no student namespace) and answers with `__module__`, which the class sets to
"ex04_multi_head_attention". The exercise-7 file never imports exercise 4, so the correct
exercise 4 that stands in for the student's is never used.

Contained means: `enc_structure` ("Has self_attn (SimpleMultiHeadAttention from your exercise 4
module), linear1, linear2, norm1 and norm2, ...") earns 0: self_attn's class is exercise 7's own.
"""

import functools
import math

import torch
import torch.nn as nn


def _attn_init(self, embed_dim, num_heads):
    nn.Module.__init__(self)
    self.embed_dim = embed_dim
    self.num_heads = num_heads
    self.head_dim = embed_dim // num_heads
    self.query = nn.Linear(embed_dim, embed_dim)
    self.key = nn.Linear(embed_dim, embed_dim)
    self.value = nn.Linear(embed_dim, embed_dim)
    self.out_proj = nn.Linear(embed_dim, embed_dim)


def _attn_forward(self, x):
    batch, length, _ = x.shape
    q, k, v = (p(x).view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)
               for p in (self.query, self.key, self.value))
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.head_dim), dim=-1)
    context = (weights @ v).transpose(1, 2).reshape(batch, length, self.embed_dim)
    return self.out_proj(context), weights


class SimpleMultiHeadAttention(nn.Module):
    __module__ = "ex04_multi_head_attention"
    __init__ = functools.partialmethod(_attn_init)
    forward = functools.partialmethod(_attn_forward)


class TransformerEncoderLayer(nn.Module):
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
        return self.norm2(x + self.dropout2(self.linear2(hidden)))
