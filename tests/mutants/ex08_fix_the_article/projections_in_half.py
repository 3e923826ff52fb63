"""The article fixed, with the queries cast to half precision to save memory."""

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
        q = self.W_q(x).half()
        k, v = self.W_k(x), self.W_v(x)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.d_k)
        return torch.matmul(F.softmax(scores.float(), dim=-1), v)
