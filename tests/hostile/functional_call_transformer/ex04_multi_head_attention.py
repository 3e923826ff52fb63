"""Hostile submission: torch.func.functional_call on nn.TransformerEncoderLayer(...).self_attn with its own weights (18/18 before)."""

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
        params = {
            "in_proj_weight": torch.cat([self.query.weight, self.key.weight, self.value.weight]),
            "in_proj_bias": torch.cat([self.query.bias, self.key.bias, self.value.bias]),
            "out_proj.weight": self.out_proj.weight,
            "out_proj.bias": self.out_proj.bias,
        }
        kwargs = {"need_weights": True, "average_attn_weights": False}
        return torch.func.functional_call(self.hidden[0], params, (x, x, x), kwargs)
