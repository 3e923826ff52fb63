"""An encoder layer written by a student (a known mistake, see mutants.toml)."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from ex04_multi_head_attention import SimpleMultiHeadAttention


class TransformerEncoderLayer(nn.Module):
    def __init__(self, d_model, nhead, dim_feedforward, dropout=0.1):
        super().__init__()
        self.self_attn = SimpleMultiHeadAttention(d_model, nhead, batch_first=True)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.dropout, self.dropout1, self.dropout2 = (nn.Dropout(dropout) for _ in range(3))

    def forward(self, src):
        attn_out, _ = self.self_attn(src)
        src = self.norm1(src + self.dropout1(attn_out))
        ff = self.linear2(self.dropout(F.relu(self.linear1(src))))
        return self.norm2(src + self.dropout2(ff))
