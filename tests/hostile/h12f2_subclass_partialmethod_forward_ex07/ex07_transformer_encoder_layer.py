"""h12f2 (forging, ex07): a subclass of exercise 4's class, defined in exercise 7, described as exercise 4's.

What it tries: exercise 7 imports exercise 4's SimpleMultiHeadAttention (the correct one stands in
for it) and defines its own subclass of the same name whose `forward` is a
`functools.partialmethod` of exercise 7's own function (a hand-written attention, here with a
temperature of its own). `_defined_in` skips a class whose `__dict__` holds no plain function and
names the module of the first class along the MRO that has one: exercise 4's. So self_attn's class
is reported as "SimpleMultiHeadAttention from ex04_multi_head_attention", while the code that runs
is exercise 7's, and the correct exercise 4 that is meant to stand in is bypassed.

Contained means: `enc_structure` ("Has self_attn (SimpleMultiHeadAttention from your exercise 4
module), ...") earns 0: the class is exercise 7's subclass and its forward is exercise 7's.
"""

import functools
import math

import torch
import torch.nn as nn
import ex04_multi_head_attention as _ex04


def _own_forward(self, x):
    batch, length, embed = x.shape
    heads = getattr(self, "heads", None) or self.num_heads
    q, k, v = (p(x).view(batch, length, heads, embed // heads).transpose(1, 2)
               for p in (self.query, self.key, self.value))
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(embed // heads), dim=-1)
    context = (weights @ v).transpose(1, 2).reshape(batch, length, embed)
    return self.out_proj(context), weights


class SimpleMultiHeadAttention(_ex04.SimpleMultiHeadAttention):
    forward = functools.partialmethod(_own_forward)


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
