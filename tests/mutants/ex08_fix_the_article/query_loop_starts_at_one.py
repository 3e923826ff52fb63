"""The article fixed, one query at a time, in a loop that starts at 1."""

import math

import torch
import torch.nn.functional as F


class SelfAttention(torch.nn.Module):
    """Single-head self-attention that projects d_model features down to d_k."""

    def __init__(self, d_model, d_k):
        super().__init__()
        self.d_k = d_k
        self.W_q = torch.nn.Linear(d_model, d_k)
        self.W_k = torch.nn.Linear(d_model, d_k)
        self.W_v = torch.nn.Linear(d_model, d_k)

    def forward(self, x):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        out = torch.zeros(x.shape[0], x.shape[1], self.d_k)
        for i in range(1, x.shape[1]):
            w = F.softmax(q[:, i : i + 1] @ k.transpose(1, 2) / math.sqrt(self.d_k), dim=-1)
            out[:, i : i + 1] = w @ v
        return out
