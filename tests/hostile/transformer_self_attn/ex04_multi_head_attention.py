"""Hostile submission: borrows nn.TransformerEncoderLayer's self_attn and copies its own weights in before each call."""

import torch
import torch.nn as nn


class SimpleMultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        if embed_dim % num_heads != 0:
            raise ValueError("embed_dim must be divisible by num_heads")
        self.query = nn.Linear(embed_dim, embed_dim)
        self.key = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.hidden = [nn.TransformerEncoderLayer(embed_dim, num_heads, dropout=0.0, batch_first=True).self_attn]

    def forward(self, x):
        mha = self.hidden[0]
        mha.in_proj_weight = nn.Parameter(torch.cat([self.query.weight, self.key.weight, self.value.weight]))
        mha.in_proj_bias = nn.Parameter(torch.cat([self.query.bias, self.key.bias, self.value.bias]))
        mha.out_proj.weight, mha.out_proj.bias = self.out_proj.weight, self.out_proj.bias
        return mha(x, x, x, need_weights=True, average_attn_weights=False)
