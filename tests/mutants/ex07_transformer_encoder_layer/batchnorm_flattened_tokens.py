"""An encoder layer written by a student (a known mistake, see mutants.toml)."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from ex04_multi_head_attention import SimpleMultiHeadAttention


class TransformerEncoderLayer(nn.Module):
    def __init__(self, d_model, nhead, dim_feedforward, dropout=0.1):
        super().__init__()
        self.self_attn = SimpleMultiHeadAttention(d_model, nhead)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1, self.norm2 = nn.BatchNorm1d(d_model), nn.BatchNorm1d(d_model)
        self.dropout, self.dropout1, self.dropout2 = (nn.Dropout(dropout) for _ in range(3))

    def _norm(self, norm, t):
        b, n, e = t.shape
        return norm(t.reshape(b * n, e)).reshape(b, n, e)  # every token one row of the batch

    def forward(self, src):
        src = self._norm(self.norm1, src + self.dropout1(self.self_attn(src)[0]))
        ff = self.linear2(self.dropout(F.relu(self.linear1(src))))
        return self._norm(self.norm2, src + self.dropout2(ff))
