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
        self.p = dropout
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, x):
        # x: (B, L, E)
        attended, _ = self.self_attn(x)  # (B, L, E); the per-head weights are not needed here
        x = self.norm1(x + F.dropout(attended, self.p, self.train))  # (B, L, E)
        hidden = F.dropout(torch.relu(self.linear1(x)), self.p, self.train)  # (B, L, F)
        x = self.norm2(x + F.dropout(self.linear2(hidden), self.p, self.train))  # (B, L, E)
        return x
