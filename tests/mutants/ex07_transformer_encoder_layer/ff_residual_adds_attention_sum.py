"""Reference solution: a post-norm Transformer encoder layer around exercise 4's attention."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from ex04_multi_head_attention import SimpleMultiHeadAttention


class TransformerEncoderLayer(nn.Module):
    """Attention, then a feed-forward block, each added to its input and normalised (post-norm)."""

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
        # x: (B, L, E)
        a = self.dropout1(self.self_attn(x)[0])
        h = self.norm1(x + a)
        f = self.linear2(self.dropout(F.relu(self.linear1(h))))
        out = a + self.dropout2(f)
        return self.norm2(out)
