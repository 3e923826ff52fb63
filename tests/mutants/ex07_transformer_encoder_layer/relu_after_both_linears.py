"""Mutant: the feed-forward block written as a loop over its two linear layers, each followed by ReLU."""

import torch.nn as nn
import torch.nn.functional as F
from ex04_multi_head_attention import SimpleMultiHeadAttention


class TransformerEncoderLayer(nn.Module):
    def __init__(self, d_model, nhead, dim_feedforward, dropout=0.1):
        super().__init__()
        self.self_attn = SimpleMultiHeadAttention(d_model, nhead)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def feed_forward(self, h):
        for linear, drop in ((self.linear1, self.dropout), (self.linear2, self.dropout2)):
            h = drop(F.relu(linear(h)))
        return h

    def forward(self, x):
        attn_out, _ = self.self_attn(x)
        h = self.norm1(x + self.dropout1(attn_out))
        return self.norm2(h + self.feed_forward(h))
