"""Mutant (holdout9): hand_dropout_divides_by_p."""

import torch
import torch.nn as nn
from ex04_multi_head_attention import SimpleMultiHeadAttention


class TransformerEncoderLayer(nn.Module):
    """Attention, then a feed-forward block, each added to its input and normalised (post-norm)."""

    def __init__(self, d_model, nhead, dim_feedforward, dropout=0.1):
        super().__init__()
        self.self_attn = SimpleMultiHeadAttention(d_model, nhead)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.p = dropout

    def _drop(self, t):
        if not self.training or self.p == 0:
            return t
        keep = (torch.rand_like(t) >= self.p).to(t.dtype)  # drop a share p
        return t * keep / self.p  # rescale

    def forward(self, x):
        # x: (B, L, E)
        attended, _ = self.self_attn(x)  # (B, L, E); the per-head weights are not needed here
        x = self.norm1(x + self._drop(attended))  # (B, L, E)
        hidden = self._drop(torch.relu(self.linear1(x)))  # (B, L, F)
        x = self.norm2(x + self._drop(self.linear2(hidden)))  # (B, L, E)
        return x
