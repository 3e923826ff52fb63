"""Exercise 2: scaled dot-product attention and a self-attention layer."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v):
    d_k = q.shape[-1]
    attn_scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)
    attn_probs = F.softmax(attn_scores, dim=-1)
    context = torch.matmul(attn_probs, v)
    return context, attn_scores


class SimpleSelfAttention(nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        self.embed_dim = embed_dim
        self.query = nn.Linear(embed_dim, embed_dim)
        self.key = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        return scaled_dot_product_attention(self.query(x), self.key(x), self.value(x))
