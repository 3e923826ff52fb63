"""Mutant: one helper per residual block, called with the two LayerNorms the wrong way round."""

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

    @staticmethod
    def add_and_norm(x, sub, norm, drop):
        return norm(x + drop(sub))

    def forward(self, x):
        attn_out, _ = self.self_attn(x)
        x = self.add_and_norm(x, attn_out, self.norm2, self.dropout1)
        ff_out = self.linear2(self.dropout(F.relu(self.linear1(x))))
        return self.add_and_norm(x, ff_out, self.norm1, self.dropout2)
