"""Mutant: the weights are torch.log of the softmax."""

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
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        weights = torch.log(torch.softmax(scores, dim=-1))
        return weights @ v
