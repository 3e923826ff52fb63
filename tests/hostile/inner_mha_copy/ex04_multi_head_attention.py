"""Hostile submission: keeps an nn.MultiheadAttention inside, copies its own four layers' weights into it and returns its answer."""

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
        self.inner = [nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)]

    def forward(self, x):
        mha = self.inner[0]
        with torch.no_grad():
            mha.in_proj_weight.copy_(torch.cat([self.query.weight, self.key.weight, self.value.weight]))
            mha.in_proj_bias.copy_(torch.cat([self.query.bias, self.key.bias, self.value.bias]))
            mha.out_proj.weight.copy_(self.out_proj.weight)
            mha.out_proj.bias.copy_(self.out_proj.bias)
        return mha.eval()(x, x, x, need_weights=True, average_attn_weights=False)
