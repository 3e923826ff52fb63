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
        attended, _ = self.self_attn(x)  # (B, L, E); the per-head weights are not needed here
        x = x + self.dropout1(attended)  # (B, L, E)
        x = F.layer_norm(x, x.shape[1:]) * self.norm1.weight + self.norm1.bias  # normalise each sample
        hidden = self.dropout(torch.relu(self.linear1(x)))  # (B, L, F)
        x = x + self.dropout2(self.linear2(hidden))  # (B, L, E)
        x = F.layer_norm(x, x.shape[1:]) * self.norm2.weight + self.norm2.bias  # normalise each sample
        return x
