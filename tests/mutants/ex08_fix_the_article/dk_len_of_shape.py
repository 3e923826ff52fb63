"""Reference solution: the article's SelfAttention with its two bugs fixed, nothing else changed."""

import math

import torch
import torch.nn.functional as F


class SelfAttention(torch.nn.Module):
    """Single-head self-attention that projects d_model features down to d_k."""

    def __init__(self, d_model, d_k):
        super().__init__()
        self.d_k = d_k  # the projected dimension: the scale uses it
        self.W_q = torch.nn.Linear(d_model, d_k)
        self.W_k = torch.nn.Linear(d_model, d_k)
        self.W_v = torch.nn.Linear(d_model, d_k)

    def forward(self, x):
        # x: (B, L, d_model)
        q = self.W_q(x)  # (B, L, d_k)
        k = self.W_k(x)  # (B, L, d_k)
        v = self.W_v(x)  # (B, L, d_k)
        scores = torch.matmul(q, k.transpose(-2, -1)) / len(k.shape) ** 0.5  # (B, L, L)
        attn_weights = F.softmax(scores, dim=-1)  # (B, L, L), each row sums to 1
        context = torch.matmul(attn_weights, v)  # (B, L, d_k)
        return context
